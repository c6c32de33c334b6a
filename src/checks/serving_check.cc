// kind: serving — one feature of the platform's serving engine, used, and shown to change
// nothing the model computes. Each feature has an equivalence (the same greedy tokens, logprobs
// within `logprob_atol`), a guard that proves the engine used the feature (its own evidence:
// usage fields, /metrics counters, the overlap of streamed tokens), else the case says "not
// exercised: <why>" (a skip, never a pass), and a fault of the fake engine it catches
// (tests/service/fake_openai_server.cc). docs/serving.md "Serving features" has the table.
//   prefix_cache     a long prompt cold, then warm: equal; guard cached_tokens or a hit counter
//   decode_prefill   the logprobs a request decoded vs the same tokens sent back as a prompt
//                    (echo): mean and max KL over the top-k (SGLang's rule); no golden needed
//   batch            a probe alone vs at a random slot among `concurrency` requests of mixed
//                    lengths, `trials` times; guard a running-requests gauge above 1, else
//                    streamed tokens of two requests interleaved
//   chunked_prefill  a prompt over 2.5 prefill chunks on the variant vs on the base service
//   preemption       `requests` long requests alone, then all at once on the variant with a small
//                    KV pool: each equal to its solo run; guard a preemption counter that moved
//   integrity        every response: usage counts what came back, at most one end token, the
//                    finish reason agrees with the length, streamed equals not streamed
//   spec_decode      the variant with speculative decoding vs the base: equal; acceptance rate and
//                    mean accepted length from /metrics as metrics `diff` tracks
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <latch>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <thread>

#include "base/error.h"
#include "base/json_read.h"
#include "base/text_format.h"
#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "compare/serving_compare.h"
#include "service/metrics.h"
#include "suite/location.h"

namespace h0::checks {
namespace {

namespace fs = std::filesystem;
using service::Metrics;
using service::Result;

enum class Feature {
  kPrefixCache,
  kDecodePrefill,
  kBatch,
  kChunkedPrefill,
  kPreemption,
  kIntegrity,
  kSpecDecode
};

struct FeatureInfo {
  Feature feature;
  const char* name;
  bool needs_variant;  // the feature is turned on by a `service.variants` entry of this name
};
constexpr FeatureInfo kFeatures[] = {
    {Feature::kPrefixCache, "prefix_cache", false},
    {Feature::kDecodePrefill, "decode_prefill", false},
    {Feature::kBatch, "batch", false},
    {Feature::kChunkedPrefill, "chunked_prefill", true},
    {Feature::kPreemption, "preemption", true},
    {Feature::kIntegrity, "integrity", false},
    {Feature::kSpecDecode, "spec_decode", true},
};

// The counters and gauges engines name each thing by (vLLM 0.32, SGLang, `harness serve`).
const std::vector<std::string> kPrefixHits = {"vllm:prefix_cache_hits_total",
                                              "vllm:gpu_prefix_cache_hits_total",
                                              "sglang:cache_hit_tokens_total"};
const std::vector<std::string> kRunning = {"vllm:num_requests_running", "sglang:num_running_reqs",
                                           "harness_engine_requests_running"};
const std::vector<std::string> kPreemptions = {"vllm:num_preemptions_total", "vllm:num_preemptions",
                                               "sglang:num_retractions"};
const std::vector<std::string> kDrafts = {"vllm:spec_decode_num_drafts_total"};
const std::vector<std::string> kDraftTokens = {"vllm:spec_decode_num_draft_tokens_total"};
const std::vector<std::string> kAccepted = {"vllm:spec_decode_num_accepted_tokens_total"};

const char* const kDefaultText =
    "The harbour town kept its lighthouse lit through every winter storm, and the keepers wrote "
    "down each ship that passed, its flag, its cargo and the hour it cleared the rocks. ";

struct ServingSpec {
  std::string model_dir;
  FeatureInfo feature;
  std::string variant;  // the service variant the case runs on; "" the base
  bool variant_defined = false;
  std::string text = kDefaultText;
  int64_t max_tokens = 16, top_logprobs = 5, prompt_tokens = 0;
  int64_t concurrency = 32, trials = 3, requests = 8;
  double logprob_atol = 0, kl_bound = 0;
  std::string bound_source;
};

// How a feature's run ended before its verdict: a failure, or "not exercised".
struct Stop {
  Status status;
  std::string message;
};

std::vector<int64_t> ids_of(const Result& r) {
  if (!r.token_ids.empty()) return r.token_ids;
  std::vector<int64_t> out;
  for (const service::TokenInfo& t : r.tokens) {
    if (!t.id) return {};
    out.push_back(*t.id);
  }
  return out;
}

// config.json's max_position_embeddings (under text_config too); 0 when not stated.
int64_t max_positions(const std::string& model_dir) {
  try {
    const nlohmann::json j = base::read_json_file((fs::path(model_dir) / "config.json").string());
    for (const nlohmann::json* c : {&j, j.contains("text_config") ? &j["text_config"] : nullptr}) {
      if (c && c->contains("max_position_embeddings") &&
          (*c)["max_position_embeddings"].is_number_integer())
        return (*c)["max_position_embeddings"].get<int64_t>();
    }
  } catch (const InputError&) {
  }
  return 0;
}

// One run of a feature: the service, the prompts it builds and the requests it sends.
class Session {
 public:
  Session(const ServingSpec& spec, ServiceHandle h, const tokenizer::Tokenizer& tok)
      : spec_(spec), h_(std::move(h)), tok_(tok) {
    for (size_t at = 0; at < spec_.text.size();) {  // the text's words, each with its space
      size_t end = spec_.text.find(' ', at + 1);
      end = end == std::string::npos ? spec_.text.size() : end;
      words_.push_back(spec_.text.substr(at, end - at));
      at = end;
    }
    H0_CHECK(!words_.empty()) << "the serving text has no words";
  }

  ServiceHandle& handle() { return h_; }
  nlohmann::json& evidence() { return evidence_; }

  // A prompt of about `n` tokens (never more): `lead` and then the text's words repeated from word
  // `salt` on (different salts, different prompts), encoded with the tokenizer's specials. Its
  // decoded text encodes back to the same ids, so an engine that takes only text prompts gets
  // the same prompt (a token cut mid-word at the end is dropped).
  std::vector<int64_t> prompt(int64_t n, int64_t salt = 0, const std::string& lead = "") const {
    std::string text = lead;
    for (size_t i = 0; int64_t(text.size()) < 8 * n + 64; ++i)
      text += words_[(i + size_t(salt)) % words_.size()];
    if (text.front() == ' ') text.erase(0, 1);
    std::vector<int32_t> ids = tok_.encode(text, true);
    ids.resize(std::min(ids.size(), size_t(n)));
    while (ids.size() > 1) {
      size_t lead_specials = 0;
      while (lead_specials < ids.size() && tok_.is_special(ids[lead_specials])) ++lead_specials;
      const std::string decoded = tok_.decode(
          std::span<const int32_t>(ids.data() + lead_specials, ids.size() - lead_specials), false);
      if (tok_.encode(decoded, true) == ids) break;
      ids.pop_back();
    }
    return std::vector<int64_t>(ids.begin(), ids.end());
  }
  // Words no earlier run sent (a prefix cache has not seen a prompt that starts with them).
  static std::string fresh_words() {
    std::mt19937_64 rng(std::random_device{}() ^
                        uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
    return "Log " + std::to_string(rng() % 1000000000) + ": ";
  }

  // A greedy completion of `ids` with logprobs and token ids, as the engine takes it.
  service::Request request(std::vector<int64_t> ids, int64_t max_tokens, bool stream = false,
                           bool echo = false) const {
    service::Request r;
    r.model = h_.model;
    r.prompt_ids = std::move(ids);
    r.sampling.max_tokens = max_tokens;
    r.sampling.temperature = 0;
    r.sampling.top_logprobs = int(spec_.top_logprobs);
    r.sampling.ignore_eos = true;
    r.stream = stream;
    r.echo = echo;
    return r;
  }

  // Sends `r` (adapted to the engine); a failed answer stops the feature, naming `what`.
  Result send(service::Request r, const std::string& what) {
    const AdaptedRequest a = adapt_request(h_, spec_.model_dir, &r);
    if (!a.cannot.empty()) throw Stop{Status::kSkip, "not exercised: " + a.cannot};
    for (const std::string& note : a.notes) notes_.insert(note);
    Result out = h_.client->complete(r);
    if (!out.ok()) throw Stop{Status::kFail, what + ": " + failure_message(out)};
    return out;
  }
  // The same without stopping, from any thread: for the requests sent at once.
  Result try_send(service::Request r) const {
    if (const AdaptedRequest a = adapt_request(h_, spec_.model_dir, &r); !a.cannot.empty()) {
      Result refused;
      refused.error = "not sent: " + a.cannot;
      return refused;
    }
    return h_.client->complete(r);
  }

  // The engine's /metrics now; why not, remembered for the messages.
  std::optional<Metrics> metrics() {
    std::string why;
    std::optional<Metrics> m = service::scrape_metrics(*h_.client, &why);
    if (!m) metrics_error_ = why;
    return m;
  }
  // The same from another thread (nothing remembered).
  std::optional<Metrics> scrape() const { return service::scrape_metrics(*h_.client); }
  const std::string& metrics_error() const { return metrics_error_; }
  const std::set<std::string>& notes() const { return notes_; }

  // `got` against `ref`; a difference stops the feature naming `what` and the first token.
  void expect_same(const Result& ref, const Result& got, const std::string& what) {
    const compare::ResponseVerdict v = compare::same_answer(ref, got, spec_.logprob_atol);
    max_logprob_diff_ = std::max(max_logprob_diff_, v.max_logprob_diff);
    if (v.pass) return;
    evidence_["reference"] = response_evidence(ref);
    evidence_["differing"] = response_evidence(got);
    evidence_["first_difference"] = v.first_difference;
    throw Stop{Status::kFail, what + ": " + v.message};
  }
  double max_logprob_diff() const { return max_logprob_diff_; }

 private:
  const ServingSpec& spec_;
  ServiceHandle h_;
  const tokenizer::Tokenizer& tok_;
  std::vector<std::string> words_;
  nlohmann::json evidence_ = nlohmann::json::object();
  std::set<std::string> notes_;
  std::string metrics_error_;
  double max_logprob_diff_ = 0;
};

// What a passing feature reports.
struct Verdict {
  std::string message;
  std::vector<std::pair<std::string, double>> metrics;
};

// Why no counter of `names` was read: /metrics did not answer, or has none of them.
std::string no_counter(const Session& s, const std::vector<std::string>& names) {
  if (!s.metrics_error().empty()) return s.metrics_error();
  std::string out = "/metrics has none of ";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

// ---- the features ----

Verdict prefix_cache(const ServingSpec& spec, Session& s) {
  const int64_t n = spec.prompt_tokens > 0 ? spec.prompt_tokens : 256;
  // Words no run sent before lead the prompt, so the cold request is cold.
  const std::vector<int64_t> ids = s.prompt(n, 0, Session::fresh_words());
  const Result cold = s.send(s.request(ids, spec.max_tokens), "the cold request");
  const std::optional<Metrics> middle = s.metrics();
  const Result warm = s.send(s.request(ids, spec.max_tokens), "the warm request");
  const std::optional<Metrics> after = s.metrics();
  s.evidence()["prompt_tokens"] = ids.size();  // its text starts with words no run sent before
  s.expect_same(cold, warm, "the warm request (the prefix cache hit) differs from the cold one");

  Verdict v;
  std::string guard;
  if (warm.cached_tokens > 0) {
    guard = "usage.prompt_tokens_details.cached_tokens " + std::to_string(warm.cached_tokens) +
            " of " + std::to_string(ids.size());
    v.metrics.push_back({"cached_tokens", double(warm.cached_tokens)});
  } else if (std::optional<Metrics::Found> d =
                 middle && after ? service::counter_delta(*middle, *after, kPrefixHits)
                                 : std::nullopt) {
    if (d->value <= 0) {
      throw Stop{Status::kSkip, "not exercised: the warm request hit no cached tokens (" + d->name +
                                    " did not move; is the engine's prefix cache off?)"};
    }
    guard = d->name + " +" + printf_string("%.4g", d->value);
    v.metrics.push_back({"cached_tokens", d->value});
  } else if (warm.cached_tokens == 0) {
    throw Stop{Status::kSkip,
               "not exercised: the warm request hit no cached tokens "
               "(usage.prompt_tokens_details.cached_tokens 0; is the prefix cache off?)"};
  } else {
    throw Stop{Status::kSkip,
               "not exercised: the engine shows no prefix-cache hit: no "
               "usage.prompt_tokens_details.cached_tokens, and " +
                   no_counter(s, kPrefixHits)};
  }
  v.message = "a prompt of " + std::to_string(ids.size()) + " tokens warm equals cold (" + guard +
              "; max |logprob difference| " + printf_string("%.4g", s.max_logprob_diff()) + ")";
  return v;
}

Verdict decode_prefill(const ServingSpec& spec, Session& s) {
  const std::vector<int64_t> ids = s.prompt(spec.prompt_tokens > 0 ? spec.prompt_tokens : 48, 3);
  const Result decoded = s.send(s.request(ids, spec.max_tokens), "the decode request");
  const std::vector<int64_t> out = ids_of(decoded);
  if (out.empty())
    throw Stop{Status::kSkip, "not exercised: the engine returned no token ids to send back"};
  if (decoded.tokens.size() != out.size())
    throw Stop{Status::kSkip, "not exercised: the engine returned no per-token logprobs"};
  std::vector<int64_t> both = ids;
  both.insert(both.end(), out.begin(), out.end());
  const Result echoed = s.send(s.request(both, 1, false, true), "the re-prefill (echo) request");
  s.evidence()["decoded"] = response_evidence(decoded);
  // The echo lists the prompt's tokens, then one generated: ours end at its second-to-last.
  if (echoed.tokens.size() < out.size() + 1) {
    throw Stop{Status::kSkip, "not exercised: the engine's echo listed " +
                                  std::to_string(echoed.tokens.size()) + " tokens for a " +
                                  std::to_string(both.size()) + "-token prompt (no echo?)"};
  }
  const size_t at = echoed.tokens.size() - 1 - out.size();
  double kl_sum = 0, kl_max = 0, lp_max = 0;
  int64_t worst = -1, compared = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const service::TokenInfo &d = decoded.tokens.at(i), &p = echoed.tokens[at + i];
    if (p.id && *p.id != out[i]) {
      throw Stop{Status::kSkip, "not exercised: the echo's token " + std::to_string(at + i) +
                                    " is id " + std::to_string(*p.id) + ", not the decoded " +
                                    std::to_string(out[i]) + " (the engine re-tokenized)"};
    }
    if (!d.logprob || !p.logprob || d.top.empty() || p.top.empty()) continue;
    const double kl = compare::top_k_kl(d.top, p.top);
    kl_sum += kl, ++compared;
    if (kl > kl_max) kl_max = kl, worst = int64_t(i);
    lp_max = std::max(lp_max, std::abs(*d.logprob - *p.logprob));
  }
  if (compared == 0) {
    throw Stop{Status::kSkip,
               "not exercised: the decode or the echo carried no top logprobs to compare"};
  }
  const double kl_mean = kl_sum / double(compared);
  Verdict v;
  v.metrics = {{"kl_mean", kl_mean}, {"kl_max", kl_max}, {"max_logprob_diff", lp_max}};
  const std::string numbers =
      "mean KL " + printf_string("%.4g", kl_mean) + ", max " + printf_string("%.4g", kl_max) +
      (worst >= 0 ? " at output token " + std::to_string(worst) : std::string()) +
      ", max |logprob difference| " + printf_string("%.4g", lp_max) + " over " +
      std::to_string(compared) + " tokens";
  if (kl_mean > spec.kl_bound || lp_max > spec.logprob_atol) {
    s.evidence()["echo"] = response_evidence(echoed);
    throw Stop{Status::kFail,
               "decoded logprobs differ from the same tokens re-prefilled: " + numbers +
                   " (bounds: mean KL " + printf_string("%.4g", spec.kl_bound) + ", logprob " +
                   printf_string("%.4g", spec.logprob_atol) + ")"};
  }
  v.message = "decoded logprobs equal the re-prefilled ones: " + numbers;
  return v;
}

// The most requests whose streamed tokens were arriving at once: decode intervals (first to last
// token, on one clock) that overlap.
int64_t most_interleaved(const std::vector<std::pair<double, double>>& spans) {
  std::vector<std::pair<double, int>> events;
  for (const auto& [a, b] : spans) {
    if (b > a) events.push_back({a, +1}), events.push_back({b, -1});
  }
  std::sort(events.begin(), events.end());
  int64_t now = 0, most = 0;
  for (const auto& e : events) most = std::max(most, now += e.second);
  return most;
}

Verdict batch(const ServingSpec& spec, Session& s) {
  const std::vector<int64_t> probe_ids = s.prompt(40, 5);
  const Result alone = s.send(s.request(probe_ids, spec.max_tokens), "the probe alone");
  s.evidence()["alone"] = response_evidence(alone);
  std::mt19937_64 rng(std::random_device{}());
  double running_max = 0;
  std::string running_name;
  int64_t interleaved = 0;
  for (int64_t trial = 0; trial < spec.trials; ++trial) {
    const int64_t n = spec.concurrency, slot = int64_t(rng() % uint64_t(n));
    std::vector<Result> results(static_cast<size_t>(n));
    std::vector<double> sent(static_cast<size_t>(n));
    std::atomic<bool> done{false};
    std::thread poller([&] {  // the engine's running-requests gauge while the batch runs
      while (!done) {
        if (std::optional<Metrics> m = s.scrape()) {
          if (auto f = m->first_of(kRunning); f && f->value > running_max)
            running_max = f->value, running_name = f->name;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    const auto t0 = std::chrono::steady_clock::now();
    std::latch start(n);
    std::vector<std::thread> threads;
    for (int64_t j = 0; j < n; ++j) {
      threads.emplace_back([&, j] {
        // Fillers of mixed lengths and output lengths, streamed (their token arrivals show
        // whether the engine decoded them together); the probe as it ran alone.
        service::Request r =
            j == slot ? s.request(probe_ids, spec.max_tokens)
                      : s.request(s.prompt(8 + (j * 37 + trial * 11) % 120, j + 7 * trial),
                                  8 + (j * 5) % 25, true);
        start.arrive_and_wait();
        sent[size_t(j)] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        results[size_t(j)] = s.try_send(std::move(r));
      });
    }
    for (auto& t : threads) t.join();
    done = true;
    poller.join();
    std::vector<std::pair<double, double>> spans;
    for (int64_t j = 0; j < n; ++j) {
      const Result& r = results[size_t(j)];
      if (j == slot || !r.ok() || r.chunk_arrival_s.size() < 2) continue;
      spans.push_back({sent[size_t(j)] + r.chunk_arrival_s.front(),
                       sent[size_t(j)] + r.chunk_arrival_s.back()});
    }
    interleaved = std::max(interleaved, most_interleaved(spans));
    const std::string where = "trial " + std::to_string(trial + 1) + ", the probe at slot " +
                              std::to_string(slot) + " of " + std::to_string(n);
    if (!results[size_t(slot)].ok())
      throw Stop{Status::kFail, where + ": " + failure_message(results[size_t(slot)])};
    for (int64_t j = 0; j < n; ++j) {
      if (!results[size_t(j)].ok()) {
        throw Stop{Status::kFail, where + ": concurrent request " + std::to_string(j) + ": " +
                                      failure_message(results[size_t(j)])};
      }
    }
    s.expect_same(alone, results[size_t(slot)], where + " differs from the probe alone");
  }
  if (running_max <= 1 && interleaved <= 1) {
    throw Stop{Status::kSkip, "not exercised: no sign the engine batched (" +
                                  (running_name.empty() ? no_counter(s, kRunning)
                                                        : running_name + " never above " +
                                                              printf_string("%.4g", running_max)) +
                                  "; the streamed requests' tokens never interleaved)"};
  }
  // Both signs, the same words whichever showed it (a gauge polled can miss a short batch).
  const std::string guard =
      "most requests running at once: " +
      (running_name.empty() ? std::string()
                            : printf_string("%.4g", running_max) + " by " + running_name + ", ") +
      std::to_string(interleaved) + " by their streamed tokens";
  Verdict v;
  v.metrics = {{"max_running", std::max(running_max, double(interleaved))},
               {"max_logprob_diff", s.max_logprob_diff()}};
  v.message = std::to_string(spec.trials) + " trials among " +
              std::to_string(spec.concurrency - 1) +
              " concurrent requests equal the probe alone (" + guard +
              "; max |logprob difference| " + printf_string("%.4g", s.max_logprob_diff()) + ")";
  return v;
}

Verdict chunked_prefill(const ServingSpec& spec, Session& s, Session& base) {
  const int64_t chunk = s.handle().info.prefill_chunk;
  if (chunk <= 0) {
    throw Stop{Status::kSkip,
               "not exercised: the platform file states no prefill_chunk for "
               "service variant '" +
                   spec.variant + "'"};
  }
  const int64_t n = spec.prompt_tokens > 0 ? spec.prompt_tokens : 2 * chunk + chunk / 2 + 3;
  if (n <= chunk) {
    throw Stop{Status::kSkip, "not exercised: the prompt (" + std::to_string(n) +
                                  " tokens) fits one prefill chunk of " + std::to_string(chunk)};
  }
  if (const int64_t most = max_positions(spec.model_dir); most > 0 && n + spec.max_tokens > most) {
    throw Stop{Status::kSkip, "not exercised: a prompt over the chunk (" + std::to_string(n) +
                                  " tokens) does not fit the model's " + std::to_string(most) +
                                  " positions"};
  }
  const std::vector<int64_t> ids = s.prompt(n, 1);
  const Result ref = base.send(base.request(ids, spec.max_tokens), "the base service");
  const Result got = s.send(s.request(ids, spec.max_tokens), "the chunked service");
  s.evidence()["base"] = response_evidence(ref);
  s.evidence()["chunked"] = response_evidence(got);
  s.expect_same(ref, got,
                "the prompt prefilled in chunks of " + std::to_string(chunk) +
                    " differs from the base service's answer");
  const int64_t base_chunk = base.handle().info.prefill_chunk;
  Verdict v;
  v.metrics = {{"prompt_tokens", double(n)},
               {"prefill_chunk", double(chunk)},
               {"max_logprob_diff", s.max_logprob_diff()}};
  v.message = "a prompt of " + std::to_string(ids.size()) + " tokens prefilled in chunks of " +
              std::to_string(chunk) + " (platform file) equals the base service's answer" +
              (base_chunk > 0 && base_chunk < n
                   ? " (which chunks it too, by " + std::to_string(base_chunk) + ")"
                   : "") +
              " (max |logprob difference| " + printf_string("%.4g", s.max_logprob_diff()) + ")";
  return v;
}

Verdict preemption(const ServingSpec& spec, Session& s) {
  const int64_t n = spec.requests;
  const int64_t length = spec.prompt_tokens > 0 ? spec.prompt_tokens : 96;
  const int64_t out_tokens = std::max<int64_t>(spec.max_tokens, 48);
  std::vector<service::Request> requests;
  std::vector<Result> solo;
  for (int64_t i = 0; i < n; ++i) {
    requests.push_back(s.request(s.prompt(length + i, 2 * i + 1), out_tokens));
    solo.push_back(s.send(requests.back(), "request " + std::to_string(i) + " alone"));
  }
  const std::optional<Metrics> before = s.metrics();
  std::vector<Result> together(static_cast<size_t>(n));
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      together[size_t(i)] = s.try_send(requests[size_t(i)]);
    });
  }
  for (auto& t : threads) t.join();
  const std::optional<Metrics> after = s.metrics();
  for (int64_t i = 0; i < n; ++i) {
    const std::string what =
        "request " + std::to_string(i) + " of " + std::to_string(n) + " at once";
    if (!together[size_t(i)].ok())
      throw Stop{Status::kFail, what + ": " + failure_message(together[size_t(i)])};
    s.expect_same(solo[size_t(i)], together[size_t(i)], what + " differs from its solo run");
  }
  const std::optional<Metrics::Found> d =
      before && after ? service::counter_delta(*before, *after, kPreemptions) : std::nullopt;
  if (!d) {
    throw Stop{Status::kSkip,
               "not exercised: no preemption counter (" + no_counter(s, kPreemptions) + ")"};
  }
  if (d->value <= 0) {
    throw Stop{Status::kSkip, "not exercised: " + d->name + " did not move: the KV pool held all " +
                                  std::to_string(n) +
                                  " requests (give the variant a smaller KV budget)"};
  }
  Verdict v;
  v.metrics = {{"preemptions", d->value}, {"max_logprob_diff", s.max_logprob_diff()}};
  v.message = std::to_string(n) + " concurrent requests of ~" + std::to_string(length) +
              " prompt tokens (" + d->name + " +" + printf_string("%.4g", d->value) +
              ") each equal their solo run";
  return v;
}

Verdict integrity(const ServingSpec& spec, Session& s, const std::set<int64_t>& ends) {
  int compared = 0;
  std::vector<std::string> not_compared;
  for (int64_t i = 0; i < 3; ++i) {
    const std::vector<int64_t> ids = s.prompt(12 + 20 * i, 4 * i);
    service::Request r = s.request(ids, spec.max_tokens);
    r.sampling.ignore_eos = false;  // a natural end may come: at most one, and the last
    const Result plain = s.send(r, "request " + std::to_string(i));
    r.stream = true;
    const Result streamed = s.send(r, "request " + std::to_string(i) + " streamed");
    const compare::ResponseVerdict same = compare::compare_responses(plain, streamed);
    if (!same.pass) {
      s.evidence()["plain"] = response_evidence(plain);
      s.evidence()["streamed"] = response_evidence(streamed);
      throw Stop{Status::kFail, "request " + std::to_string(i) +
                                    ": streamed differs from not streamed: " + same.message};
    }
    ++compared;
    for (const Result* res : {&plain, &streamed}) {
      const std::string what =
          "request " + std::to_string(i) + (res == &streamed ? " streamed" : "");
      std::vector<std::string> unjudged;
      const std::string problem = compare::integrity_problem(
          *res, spec.max_tokens, ends, false, int64_t(ids.size()), &compared, &unjudged);
      if (!problem.empty()) {
        s.evidence()["response"] = response_evidence(*res);
        throw Stop{Status::kFail, what + ": " + problem};
      }
      for (const std::string& u : unjudged) not_compared.push_back(what + ": " + u);
    }
  }
  Verdict v;
  v.metrics = {{"compared", double(compared)}};
  v.message =
      "6 responses: usage counts, end tokens and finish reasons agree with what came "
      "back, streamed equals not streamed";
  if (!not_compared.empty())
    v.message +=
        " (not compared: " + not_compared.front() +
        (not_compared.size() > 1 ? " and " + std::to_string(not_compared.size() - 1) + " more"
                                 : "") +
        ")";
  return v;
}

Verdict spec_decode(const ServingSpec& spec, Session& s, Session& base) {
  // A prompt that repeats itself: n-gram and draft-model speculators both find drafts there.
  const std::vector<int64_t> ids = s.prompt(spec.prompt_tokens > 0 ? spec.prompt_tokens : 96);
  const int64_t out_tokens = std::max<int64_t>(spec.max_tokens, 32);
  const Result ref = base.send(base.request(ids, out_tokens), "the base service");
  const std::optional<Metrics> before = s.metrics();
  const Result got = s.send(s.request(ids, out_tokens), "the speculative service");
  const std::optional<Metrics> after = s.metrics();
  s.evidence()["base"] = response_evidence(ref);
  s.evidence()["speculative"] = response_evidence(got);
  s.expect_same(ref, got, "with speculative decoding the answer differs from the base service's");
  const auto delta = [&](const std::vector<std::string>& names) {
    return before && after ? service::counter_delta(*before, *after, names) : std::nullopt;
  };
  const auto drafts = delta(kDrafts), draft_tokens = delta(kDraftTokens),
             accepted = delta(kAccepted);
  if (!drafts) {
    throw Stop{Status::kSkip,
               "not exercised: no speculative-decoding counter (" + no_counter(s, kDrafts) + ")"};
  }
  if (drafts->value <= 0) {
    throw Stop{Status::kSkip,
               "not exercised: " + drafts->name + " did not move: the engine proposed no drafts"};
  }
  Verdict v;
  std::string rates;
  if (accepted) {
    const double mean_len = 1 + accepted->value / drafts->value;
    v.metrics.push_back({"mean_accepted_length", mean_len});
    rates = "mean accepted length " + printf_string("%.3g", mean_len);
    if (draft_tokens && draft_tokens->value > 0) {
      const double rate = accepted->value / draft_tokens->value;
      v.metrics.push_back({"acceptance_rate", rate});
      rates += ", acceptance rate " + printf_string("%.3g", rate);
    }
  }
  v.metrics.push_back({"drafts", drafts->value});
  v.message = "with speculative decoding (" + printf_string("%.4g", drafts->value) + " drafts" +
              (rates.empty() ? "" : ", " + rates) + ") the answer equals the base service's";
  return v;
}

class ServingCase final : public PreparedCase {
 public:
  explicit ServingCase(ServingSpec spec) : spec_(std::move(spec)) {}

  std::string service_model() const override { return spec_.model_dir; }
  // A variant the platform does not define is started by no one: the case says so.
  std::string service_variant() const override {
    return spec_.variant_defined ? spec_.variant : "";
  }
  bool needs_base_service() const override {
    return spec_.feature.feature == Feature::kChunkedPrefill ||
           spec_.feature.feature == Feature::kSpecDecode;
  }

  CheckResult run(RunContext& ctx) override {
    CheckResult out;
    out.details["feature"] = spec_.feature.name;
    out.details["variant"] = spec_.variant;
    out.details["bounds"] = {{"logprob_atol", spec_.logprob_atol},
                             {"kl_mean", spec_.kl_bound},
                             {"from", spec_.bound_source}};
    if (spec_.feature.needs_variant && !spec_.variant_defined) {
      out.status = Status::kSkip;
      out.message = "not exercised: the platform's service has no '" + spec_.variant +
                    "' variant (service.variants." + spec_.variant + " turns the feature on)";
      return out;
    }
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    const tokenizer::Tokenizer* tok = tokenizer_of(spec_.model_dir);
    if (tok == nullptr) {
      out.status = Status::kSkip;
      out.message = "not exercised: " + spec_.model_dir + " has no tokenizer.json to build prompts";
      return out;
    }
    out.details["service"] = h.evidence;
    Session s(spec_, std::move(h), *tok);
    std::optional<Session> base;
    try {
      if (needs_base_service()) {
        ServiceHandle b = connect_service(s.handle().info.base);
        if (!b.error.empty()) throw Stop{Status::kFail, "the base service: " + b.error};
        base.emplace(spec_, std::move(b), *tok);
      }
      Verdict v;
      switch (spec_.feature.feature) {
        case Feature::kPrefixCache:
          v = prefix_cache(spec_, s);
          break;
        case Feature::kDecodePrefill:
          v = decode_prefill(spec_, s);
          break;
        case Feature::kBatch:
          v = batch(spec_, s);
          break;
        case Feature::kChunkedPrefill:
          v = chunked_prefill(spec_, s, *base);
          break;
        case Feature::kPreemption:
          v = preemption(spec_, s);
          break;
        case Feature::kIntegrity:
          v = integrity(spec_, s, end_tokens(spec_.model_dir, *tok));
          break;
        case Feature::kSpecDecode:
          v = spec_decode(spec_, s, *base);
          break;
      }
      out.status = Status::kPass;
      out.message = v.message;
      out.metrics = v.metrics;
    } catch (const Stop& stop) {
      out.status = stop.status;
      out.message = stop.message;
    }
    for (const auto& [k, v] : s.evidence().items()) out.details[k] = v;
    if (!s.notes().empty())
      out.details["adapted"] = std::vector<std::string>(s.notes().begin(), s.notes().end());
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "serving"},
            {"feature", spec_.feature.name},
            {"model", spec_.model_dir},
            {"variant", spec_.variant},
            {"max_tokens", spec_.max_tokens},
            {"logprob_atol", spec_.logprob_atol}};
  }

 private:
  ServingSpec spec_;
};

// The bound two answers of one engine may differ by: the config's dtype's (vLLM's own tests
// compare logprobs of f32 runs at ~1e-3 and of bf16 ones at ~0.1), unless the case says.
void default_bounds(const std::string& model_dir, ServingSpec* s) {
  std::string dtype = "float32";
  try {
    const nlohmann::json j = base::read_json_file((fs::path(model_dir) / "config.json").string());
    const nlohmann::json* c = &j;
    if (!j.contains("torch_dtype") && !j.contains("dtype") && j.contains("text_config"))
      c = &j["text_config"];
    dtype = c->value("torch_dtype", c->value("dtype", dtype));
  } catch (const InputError&) {
  }
  const bool wide = dtype == "float32";
  s->logprob_atol = wide ? 0.01 : 0.1;
  s->kl_bound = wide ? 1e-3 : 1e-2;
  s->bound_source = "the config's dtype " + dtype;
}

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform& platform) {
  ServingSpec s;
  s.model_dir = served_model_dir(c, "serving");
  const YAML::Node feature = case_field(c, "feature");
  std::string names;
  bool found = false;
  for (const FeatureInfo& f : kFeatures) {
    names += (names.empty() ? "" : ", ") + std::string(f.name);
    if (feature.IsScalar() && feature.Scalar() == f.name) s.feature = f, found = true;
  }
  if (!found && feature.IsScalar())
    fail(c, feature, "unknown feature '" + feature.Scalar() + "' (expected one of: " + names + ")");
  if (!found) fail(c, feature, "a serving check needs `feature`: one of " + names);
  s.variant = field_string(c, "service", s.feature.needs_variant ? s.feature.name : "");
  s.variant_defined = s.variant.empty() || platform.service_variants.contains(s.variant);
  if (!s.variant_defined && !s.feature.needs_variant) {
    fail(c, case_field(c, "service"),
         "the platform file " + platform.file + " has no service variant '" + s.variant + "'");
  }
  s.text = field_string(c, "prompt", s.text);
  s.max_tokens = field_int(c, "max_tokens", s.max_tokens, 1);
  s.top_logprobs = field_int(c, "top_logprobs", s.top_logprobs, 1);
  s.prompt_tokens = field_int(c, "prompt_tokens", 0, 0);
  s.concurrency = field_int(c, "concurrency", s.concurrency, 2);
  s.trials = field_int(c, "trials", s.trials, 1);
  s.requests = field_int(c, "requests", s.requests, 2);
  default_bounds(s.model_dir, &s);
  if (case_field(c, "logprob_atol").IsDefined()) {
    s.logprob_atol = field_double(c, "logprob_atol", s.logprob_atol);
    s.bound_source = "the case";
  }
  if (case_field(c, "kl_bound").IsDefined()) {
    s.kl_bound = field_double(c, "kl_bound", s.kl_bound);
    s.bound_source = "the case";
  }
  auto out = std::make_unique<ServingCase>(std::move(s));
  out->timeout_s = std::max(platform.case_timeout_s, 600.0);
  return out;
}

}  // namespace

CheckKind serving_check_kind() {
  return {"serving",
          {"model", "feature", "service", "prompt", "max_tokens", "top_logprobs", "prompt_tokens",
           "concurrency", "trials", "requests", "logprob_atol", "kl_bound"},
          &prepare};
}

}  // namespace h0::checks
