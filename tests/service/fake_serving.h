// The fake server's serving engine (fake_openai_server.cc, mode `serving` and its faults): a
// "model" whose next-token distribution is a hash of the whole context, so that a token decoded
// and the same token re-prefilled get the same logprobs, as in a correct engine; and the serving
// machinery the serving checks (checks/serving_check.cc) look at, with the evidence vLLM 0.32
// gives of it: a prefix cache in 16-token blocks (usage.prompt_tokens_details.cached_tokens,
// vllm:prefix_cache_queries_total / _hits_total), running requests (vllm:num_requests_running),
// prefill in chunks (--prefill-chunk), a KV pool that preempts (--kv-tokens,
// vllm:num_preemptions_total) and speculative decoding (--spec-tokens, vllm:spec_decode_*).
// Each fault mode breaks one feature the way an engine's bug does:
//   stale_prefix      a hit of 128 or more cached tokens decodes token 2 from a stale block
//   batch_slot        a request decoded among 16 or more gets token 3 from another slot
//   chunk_off_by_one  a prompt over the prefill chunk is prefilled with its chunk boundary
//                     shifted by one token (every output token from the wrong state)
//   preempt_position  a preempted request resumes one position back (tokens from 4 on)
//   lying_usage       usage.completion_tokens counts one token more than came back
//   decode_drift      decoded logprobs 0.3 below what the same tokens get when prefilled
//   guided_invalid    guided decoding leaves out an object's first required property
//   tool_args_split   the tool-call parser's streamed deltas lose the arguments' last character
// Guided decoding (response_format json_schema / json_object, vLLM's structured_outputs choice
// and regex of character classes and literals): the least answer the constraint allows, whole
// (finish_reason stop); a schema with a type JSON does not have is refused (400), as vLLM does.
#pragma once

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace fake_serving {

inline const std::set<std::string>& modes() {
  static const std::set<std::string> m = {
      "serving", "stale_prefix", "batch_slot", "chunk_off_by_one", "preempt_position",
      "lying_usage", "decode_drift", "guided_invalid", "tool_args_split",
      // the conversation layer's
      "template_drops_system", "reasoning_off_by_one", "auto_tool_miss", "auto_args_invalid",
      "ignores_constraints"};
  return m;
}

struct Options {
  std::string fault;          // "" or one of the fault modes
  int64_t prefill_chunk = 0;  // 0: no chunking
  int64_t kv_tokens = 0;      // 0: a pool that never runs out
  int64_t spec_tokens = 0;    // 0: no speculative decoding
  int64_t vocab = 32000;
};

using Top = std::vector<std::pair<int64_t, double>>;  // id, logprob; best first

struct Step {
  int64_t id = 0;
  double logprob = 0;
  Top top;
};

inline uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t extend(uint64_t h, int64_t id) { return mix(h ^ uint64_t(id) * 0x100000001b3ull); }

constexpr uint64_t kEmpty = 1469598103934665603ull;

// The distribution after a context of hash h: five tokens, best first.
inline Top distribution(uint64_t h, int64_t vocab) {
  Top top;
  uint64_t x = h;
  double lp = -0.2 - double(h % 97) / 1000.0;
  while (top.size() < 5) {
    x = mix(x);
    const int64_t id = 100 + int64_t(x % uint64_t(vocab - 100));
    if (std::any_of(top.begin(), top.end(), [&](const auto& t) { return t.first == id; })) continue;
    top.push_back({id, lp});
    lp -= 0.7 + double((x >> 20) % 100) / 500.0;
  }
  return top;
}

inline double logprob_of(uint64_t h, int64_t id, int64_t vocab) {
  for (const auto& [t, lp] : distribution(h, vocab))
    if (t == id) return lp;
  return -9.0 - double(id % 13) / 10.0;
}

class Engine {
 public:
  explicit Engine(Options o) : o_(std::move(o)) {}

  // A request's life: admitted (counted running), then generated, then finished.
  struct Admission {
    int64_t cached = 0;      // prompt tokens the prefix cache served
    bool preempted = false;  // the KV pool ran out while it ran
    int64_t seq = 0;
    int64_t peak_running = 0;   // the most requests running at its admission or its settling
    int64_t peak_reserved = 0;  // the most KV tokens reserved then
  };
  Admission admit(const std::vector<int64_t>& prompt, int64_t max_tokens) {
    std::lock_guard<std::mutex> lock(mu_);
    Admission a;
    a.seq = next_seq_++;
    // Full 16-token blocks of the prompt, less its last token (always computed), found cached.
    uint64_t h = kEmpty;
    bool hit = true;
    const size_t usable = prompt.empty() ? 0 : prompt.size() - 1;
    for (size_t i = 0; i < prompt.size(); ++i) {
      h = extend(h, prompt[i]);
      if ((i + 1) % 16 != 0) continue;
      if (hit && i < usable && blocks_.contains(h)) {
        a.cached = int64_t(i + 1);
      } else {
        hit = false;
      }
      blocks_.insert(h);
    }
    queries_ += double(prompt.size());
    hits_ += double(a.cached);
    ++running_;
    a.peak_running = running_;
    reserved_ += int64_t(prompt.size()) + max_tokens;
    a.peak_reserved = reserved_;
    return a;
  }
  // Called once the requests sent together have arrived: whether this one got preempted.
  void settle(Admission* a) {
    std::lock_guard<std::mutex> lock(mu_);
    a->peak_running = std::max<int64_t>(a->peak_running, running_);
    a->peak_reserved = std::max(a->peak_reserved, reserved_);
    if (o_.kv_tokens > 0 && a->peak_reserved > o_.kv_tokens && a->seq % 2 == 1) {
      a->preempted = true;
      preemptions_ += 1;
    }
  }
  int64_t running() const { return running_; }
  void finish(const std::vector<int64_t>& prompt, int64_t max_tokens, int64_t generated) {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    reserved_ -= int64_t(prompt.size()) + max_tokens;
    if (o_.spec_tokens > 0 && generated > 0) {
      const int64_t drafts = (generated + o_.spec_tokens) / (o_.spec_tokens + 1);
      drafts_ += double(drafts);
      draft_tokens_ += double(drafts * o_.spec_tokens);
      accepted_ += double(generated - drafts);
    }
  }

  // Greedy decode of `max_tokens` after `prompt`, faults applied.
  std::vector<Step> decode(const std::vector<int64_t>& prompt, int64_t max_tokens,
                           const Admission& a) const {
    std::vector<int64_t> ctx = prompt;
    if (o_.fault == "chunk_off_by_one" && o_.prefill_chunk > 0 &&
        int64_t(prompt.size()) > o_.prefill_chunk)
      ctx.insert(ctx.begin() + o_.prefill_chunk, ctx[size_t(o_.prefill_chunk - 1)]);
    std::vector<Step> out;
    for (int64_t i = 0; i < max_tokens; ++i) {
      uint64_t h = kEmpty;
      size_t upto = ctx.size();
      if (o_.fault == "preempt_position" && a.preempted && i >= 4) --upto;
      for (size_t k = 0; k < upto; ++k) h = extend(h, ctx[k]);
      if ((o_.fault == "stale_prefix" && a.cached >= 128 && i == 2) ||
          (o_.fault == "batch_slot" && a.peak_running >= 16 && i == 3))
        h = mix(h ^ 0x5a5a);
      Step s;
      s.top = distribution(h, o_.vocab);
      s.id = s.top[0].first;
      s.logprob = s.top[0].second;
      if (o_.fault == "decode_drift") {
        s.logprob -= 0.3;
        for (auto& t : s.top) t.second -= 0.3;
      }
      out.push_back(s);
      ctx.push_back(s.id);
    }
    return out;
  }

  // The prompt's own logprobs (echo): each token scored by the context before it.
  std::vector<Step> prefill(const std::vector<int64_t>& prompt) const {
    std::vector<Step> out;
    uint64_t h = kEmpty;
    for (size_t i = 0; i < prompt.size(); ++i) {
      Step s;
      s.id = prompt[i];
      s.logprob = i == 0 ? NAN : logprob_of(h, prompt[i], o_.vocab);
      if (i > 0) s.top = distribution(h, o_.vocab);
      out.push_back(s);
      h = extend(h, prompt[i]);
    }
    return out;
  }

  std::string metrics() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    const std::string labels = "{engine=\"0\",model_name=\"fake-model\"}";
    auto line = [&](const char* name, const char* type, double v) {
      out += std::string("# HELP ") + name + " fake\n# TYPE " + name + " " + type + "\n" + name +
             labels + " " + std::to_string(v) + "\n";
    };
    line("vllm:num_requests_running", "gauge", double(running_));
    line("vllm:prefix_cache_queries_total", "counter", queries_);
    line("vllm:prefix_cache_hits_total", "counter", hits_);
    line("vllm:num_preemptions_total", "counter", preemptions_);
    if (o_.spec_tokens > 0) {
      line("vllm:spec_decode_num_drafts_total", "counter", drafts_);
      line("vllm:spec_decode_num_draft_tokens_total", "counter", draft_tokens_);
      line("vllm:spec_decode_num_accepted_tokens_total", "counter", accepted_);
    }
    return out;
  }

  const Options& options() const { return o_; }

 private:
  Options o_;
  mutable std::mutex mu_;
  std::set<uint64_t> blocks_;
  std::atomic<int64_t> running_{0};
  int64_t reserved_ = 0, next_seq_ = 0;
  double queries_ = 0, hits_ = 0, preemptions_ = 0, drafts_ = 0, draft_tokens_ = 0, accepted_ = 0;
};

// The least value `schema` allows (enum: its first; objects: every property; integers and numbers:
// their minimum or 0; strings: "a" × minLength); "" in *error when a type is not JSON's.
inline nlohmann::json least_instance(const nlohmann::json& schema, bool drop_required,
                                     std::string* error) {
  static const std::set<std::string> kTypes = {"object", "array",   "string", "integer",
                                               "number", "boolean", "null"};
  if (!schema.is_object()) return nullptr;
  if (schema.contains("enum") && !schema["enum"].empty()) return schema["enum"][0];
  if (schema.contains("const")) return schema["const"];
  const std::string type = schema.value("type", "object");
  if (!kTypes.contains(type)) {
    *error = "Unsupported type \"" + type + "\"";
    return nullptr;
  }
  if (type == "object") {
    nlohmann::json out = nlohmann::json::object();
    const nlohmann::json props = schema.value("properties", nlohmann::json::object());
    const nlohmann::json required = schema.value("required", nlohmann::json::array());
    for (const auto& [name, sub] : props.items()) {
      if (drop_required && !required.empty() && required[0] == name) continue;
      out[name] = least_instance(sub, drop_required, error);
    }
    return out;
  }
  if (type == "array") return nlohmann::json::array();
  if (type == "string") return std::string(size_t(schema.value("minLength", 0)), 'a');
  if (type == "integer") return schema.value("minimum", 0);
  if (type == "number") return schema.value("minimum", 0.0);
  if (type == "boolean") return true;
  return nullptr;
}

// The least string a regex of literals and [a-z]-style classes, each with an optional {n},
// matches; nullopt for any other regex.
inline std::optional<std::string> least_match(const std::string& regex) {
  std::string out;
  for (size_t i = 0; i < regex.size();) {
    char c = regex[i];
    if (c == '[') {
      const size_t close = regex.find(']', i);
      if (close == std::string::npos || close == i + 1) return std::nullopt;
      c = regex[i + 1];
      i = close + 1;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == ' ' || c == '_') {
      ++i;
    } else {
      return std::nullopt;
    }
    size_t times = 1;
    if (i < regex.size() && regex[i] == '{') {
      const size_t close = regex.find('}', i);
      if (close == std::string::npos) return std::nullopt;
      times = size_t(std::atoi(regex.c_str() + i + 1));
      i = close + 1;
    }
    out.append(times, c);
  }
  return out;
}

// A required or named tool call's function and arguments (the least its parameters allow), or
// nullopt when `body` asks for none.
inline std::optional<std::pair<std::string, std::string>> forced_tool_call(
    const nlohmann::json& body) {
  if (!body.contains("tools") || !body["tools"].is_array() || body["tools"].empty())
    return std::nullopt;
  const nlohmann::json choice = body.value("tool_choice", nlohmann::json("auto"));
  const nlohmann::json* tool = &body["tools"][0];
  if (choice.is_object()) {
    const std::string named = choice["function"].value("name", "");
    for (const nlohmann::json& t : body["tools"])
      if (t["function"].value("name", "") == named) tool = &t;
  } else if (choice != "required") {
    return std::nullopt;
  }
  std::string error;
  const nlohmann::json args = least_instance(
      (*tool)["function"].value("parameters", nlohmann::json::object()), false, &error);
  return std::make_pair((*tool)["function"].value("name", ""), args.dump());
}

// tool_choice "auto" (or none given) with tools: the "model" calls the first offered function
// whose name the last user message mentions, with the least arguments its parameters allow; no
// function named: no call. Fault auto_tool_miss: never a call (a parser that misses the model's
// call markup); auto_args_invalid: the arguments lack what the schema requires (an object with
// none of its properties).
inline std::optional<std::pair<std::string, std::string>> auto_tool_call(const nlohmann::json& body,
                                                                         const std::string& fault) {
  if (!body.contains("tools") || !body["tools"].is_array() || body["tools"].empty())
    return std::nullopt;
  if (body.value("tool_choice", nlohmann::json("auto")) != "auto" || fault == "auto_tool_miss")
    return std::nullopt;
  std::string said;
  for (const nlohmann::json& m : body.value("messages", nlohmann::json::array()))
    if (m.value("role", "") == "user" && m.contains("content") && m["content"].is_string())
      said = m["content"].get<std::string>();
  for (const nlohmann::json& t : body["tools"]) {
    const std::string name = t["function"].value("name", "");
    if (name.empty() || said.find(name) == std::string::npos) continue;
    if (fault == "auto_args_invalid") return std::make_pair(name, std::string("{}"));
    std::string error;
    const nlohmann::json args =
        least_instance(t["function"].value("parameters", nlohmann::json::object()), false, &error);
    return std::make_pair(name, args.dump());
  }
  return std::nullopt;
}

// The answer guided decoding gives `body`, or nullopt when it asks for none; a constraint the
// engine cannot compile sets *error (a 400).
inline std::optional<std::string> guided_answer(const nlohmann::json& body, bool invalid,
                                                std::string* error) {
  if (body.contains("structured_outputs")) {
    const nlohmann::json& so = body["structured_outputs"];
    if (so.contains("choice") && !so["choice"].empty()) return so["choice"][0].get<std::string>();
    if (so.contains("regex")) {
      if (auto m = least_match(so["regex"].get<std::string>())) return m;
      *error = "the fake compiles only literal and [class]{n} regexes";
      return std::nullopt;
    }
    return std::nullopt;
  }
  if (!body.contains("response_format")) return std::nullopt;
  const nlohmann::json& rf = body["response_format"];
  const std::string type = rf.value("type", "");
  if (type == "json_object") return std::string("{}");
  if (type != "json_schema") return std::nullopt;
  const nlohmann::json schema =
      rf.value("json_schema", nlohmann::json::object()).value("schema", nlohmann::json::object());
  const nlohmann::json value = least_instance(schema, invalid, error);
  if (!error->empty()) return std::nullopt;
  return value.dump();
}

}  // namespace fake_serving
