// kind: reasoning — the reasoning split on the platform's engine: each item of a task file
// (suites/tasks/reasoning.jsonl: a chat prompt, `thinking` on or off, request fields such as
// chat_template_kwargs or vLLM's thinking_token_budget) is sent plain and streamed, with the
// answer's token ids. The split the template defines is computed from those ids (decoded as the
// engine detokenizes, special tokens skipped):
//   thinking off:   everything is content;
//   thinking on:    the answer opens in reasoning (a leading start marker is dropped); the first
//                   end marker closes it; content is what follows the last end marker; an answer
//                   with no end marker (cut at max_tokens) stays reasoning.
// The engine's `reasoning` (or reasoning_content) and `content` must equal it, newlines at either
// end of each part aside (templates put them around the markers), plain and streamed alike.
// Which shapes were exercised (split at the end marker, cut inside reasoning, thinking off) is
// counted: an answer without token ids, or a refusal, is not judged.
#include <map>
#include <optional>

#include "base/error.h"
#include "checks/e2e_request.h"
#include "checks/service_checks.h"

namespace h0::checks {
namespace {

struct Item {
  std::string id, prompt, line;
  bool thinking = true;
  nlohmann::json extra = nlohmann::json::object();
  int64_t max_tokens = 0;  // 0: the file's
};

struct Spec {
  std::string model_dir, tasks, start = "<think>", end = "</think>";
  std::vector<Item> items;
  int64_t max_tokens = 16;
};

std::string trim_newlines(const std::string& s) {
  const size_t a = s.find_first_not_of('\n');
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of('\n') - a + 1);
}

struct Split {
  std::string reasoning, content;
  std::string shape;  // "split", "cut", "off"
};

Split template_split(const std::string& text, bool thinking, const std::string& start,
                     const std::string& end) {
  if (!thinking) return {"", trim_newlines(text), "off"};
  const size_t first_end = text.find(end);
  std::string reasoning = first_end == std::string::npos ? text : text.substr(0, first_end);
  if (const size_t s = reasoning.rfind(start); s != std::string::npos)
    reasoning = reasoning.substr(s + start.size());
  if (first_end == std::string::npos) return {trim_newlines(reasoning), "", "cut"};
  const size_t last_end = text.rfind(end);
  return {trim_newlines(reasoning), trim_newlines(text.substr(last_end + end.size())), "split"};
}

// The answer's text as the engine detokenizes it (special tokens skipped), the markers kept even
// where the tokenizer declares them special (the parser finds them by id).
std::string answer_text(const tokenizer::Tokenizer& tok, const std::vector<int64_t>& ids,
                        const std::string& start, const std::string& end) {
  std::map<int64_t, std::string> markers;
  for (const std::string& m : {start, end})
    if (const auto id = m.empty() ? std::nullopt : tok.token_to_id(m)) markers[*id] = m;
  std::string text;
  std::vector<int32_t> piece;
  for (const int64_t id : ids) {
    const auto marker = markers.find(id);
    if (marker == markers.end()) {
      piece.push_back(int32_t(id));
      continue;
    }
    text += tok.decode(piece, /*skip_special_tokens=*/true) + marker->second;
    piece.clear();
  }
  return text + tok.decode(piece, /*skip_special_tokens=*/true);
}

std::string quoted(const std::string& s) { return nlohmann::json(s.substr(0, 120)).dump(); }

// "" when the engine's parts equal `want`; else which part differs, with both texts.
std::string split_difference(const Split& want, const service::Result& r, const char* how) {
  const std::string reasoning = trim_newlines(r.reasoning), content = trim_newlines(r.text);
  if (reasoning == want.reasoning && content == want.content) return "";
  if (!r.has_reasoning && !want.reasoning.empty())
    return std::string(how) + " answer has no reasoning field: all of it came as content " +
           quoted(content) + " where the template's split has reasoning " + quoted(want.reasoning) +
           " (is the engine's reasoning parser on?)";
  if (reasoning != want.reasoning)
    return std::string(how) + " reasoning is " + quoted(reasoning) + ", the template's split " +
           quoted(want.reasoning) + " (content " + quoted(content) + ", expected " +
           quoted(want.content) + ")";
  return std::string(how) + " content is " + quoted(content) + ", the template's split " +
         quoted(want.content);
}

std::vector<Item> read_items(const suite::Case& c, const std::string& path, int64_t* max_tokens) {
  std::vector<Item> items;
  for (const nlohmann::json& j : read_task_items(c, path, max_tokens)) {
    const std::string where = j["line"];
    if (!j.contains("id") || !j["id"].is_string() || !j.contains("prompt") ||
        !j["prompt"].is_string())
      throw InputError(where, "expected {\"id\", \"prompt\", \"thinking\": bool, \"request\": {}}");
    Item item{j["id"], j["prompt"], where};
    item.thinking = j.value("thinking", true);
    if (j.contains("request")) {
      if (!j["request"].is_object()) throw InputError(where, "request: expected an object");
      item.extra = j["request"];
    }
    item.max_tokens = j.value("max_tokens", int64_t(0));
    items.push_back(std::move(item));
  }
  return items;
}

class ReasoningCase final : public PreparedCase {
 public:
  explicit ReasoningCase(Spec spec) : spec_(std::move(spec)) {}

  std::string service_model() const override { return spec_.model_dir; }

  CheckResult run(RunContext& ctx) override {
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    const tokenizer::Tokenizer* tok = tokenizer_of(spec_.model_dir);
    CheckResult out = result_for(h);
    nlohmann::json rows = nlohmann::json::array();
    std::map<std::string, int> shapes;  // the equal answers by shape
    std::string first_failure;
    std::vector<std::string> unjudged;
    for (const Item& item : spec_.items) {
      nlohmann::json row = {{"id", item.id}, {"thinking", item.thinking}};
      auto not_judged = [&](const std::string& why) {
        row["verdict"] = "not judged";
        row["why"] = why;
        unjudged.push_back(item.id + ": " + why);
      };
      auto failed = [&](const std::string& why) {
        row["verdict"] = "fail";
        row["why"] = why;
        if (first_failure.empty()) first_failure = item.id + ": " + why;
      };
      const int64_t max_tokens = item.max_tokens > 0 ? item.max_tokens : spec_.max_tokens;
      service::Request r =
          chat_request(h, spec_.model_dir, item.prompt, max_tokens, item.extra, true);
      const service::Result plain = h.client->complete(r);
      r.stream = true;
      const service::Result streamed = plain.ok() ? h.client->complete(r) : service::Result{};
      if (refused(plain)) {
        not_judged("refused: " + plain.error.substr(0, 200));
      } else if (!plain.ok()) {
        failed(failure_message(plain));
      } else if (!streamed.ok()) {
        failed("streamed: " + failure_message(streamed));
      } else if (plain.token_ids.empty() || tok == nullptr) {
        not_judged(tok == nullptr ? "the model directory has no tokenizer to decode the answer"
                                  : "the engine returns no token ids to split by");
      } else {
        const std::string text = answer_text(*tok, plain.token_ids, spec_.start, spec_.end);
        const Split want = template_split(text, item.thinking, spec_.start, spec_.end);
        row["answer"] = text.substr(0, 400);
        row["shape"] = want.shape;
        row["reasoning"] = plain.reasoning.substr(0, 400);
        row["content"] = plain.text.substr(0, 400);
        if (std::string d = split_difference(want, plain, "the"); !d.empty()) {
          failed(d);
        } else if (std::string ds = split_difference(want, streamed, "streamed, the");
                   !ds.empty()) {
          failed(ds);
        } else {
          row["verdict"] = "equal";
          ++shapes[want.shape];
        }
      }
      rows.push_back(row);
    }
    out.details["items"] = rows;
    std::string exercised;
    int judged = 0;
    for (const auto& [shape, label] :
         std::vector<std::pair<std::string, std::string>>{{"split", "split at " + spec_.end},
                                                          {"cut", "cut inside reasoning"},
                                                          {"off", "thinking off"}}) {
      out.metrics.push_back({shape, double(shapes[shape])});
      judged += shapes[shape];
      if (shapes[shape])
        exercised += (exercised.empty() ? "" : ", ") + label + " " + std::to_string(shapes[shape]);
    }
    out.metrics.push_back({"items", double(spec_.items.size())});
    std::string counts = std::to_string(judged) + " of " + std::to_string(spec_.items.size()) +
                         " answers split as the template defines, plain and streamed" +
                         (exercised.empty() ? "" : " (" + exercised + ")");
    item_verdict(&out, first_failure, judged, std::move(counts), unjudged);
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "reasoning"},  {"model", spec_.model_dir}, {"tasks", spec_.tasks},
            {"start", spec_.start}, {"end", spec_.end},         {"max_tokens", spec_.max_tokens}};
  }

 private:
  Spec spec_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  Spec s;
  s.model_dir = served_model_dir(c, "reasoning");
  s.tasks = resolve_case_path(c, field_string(c, "tasks", "suites/tasks/reasoning.jsonl"));
  s.items = read_items(c, s.tasks, &s.max_tokens);
  s.max_tokens = field_int(c, "max_tokens", s.max_tokens, 1);
  s.start = field_string(c, "think_start", s.start);
  s.end = field_string(c, "think_end", s.end);
  if (s.end.empty()) fail(c, case_field(c, "think_end"), "the end marker cannot be empty");
  return std::make_unique<ReasoningCase>(std::move(s));
}

}  // namespace

CheckKind reasoning_check_kind() {
  return {"reasoning", {"model", "tasks", "max_tokens", "think_start", "think_end"}, &prepare};
}

}  // namespace h0::checks
