// kind: e2e_text and kind: e2e_image — one request to the platform's service (streamed, not
// streamed, or both: then both must give the same tokens), judged against its golden
// (compare: exact | logprobs | auto) and/or an expectation (expect: {contains, regex}); metrics
// TTFT, TPOT, ITL and E2E latency of the streamed response.
#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>

#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "compare/e2e_compare.h"
#include "compare/serving_compare.h"

namespace h0::checks {
namespace {

struct Expect {
  std::string contains, regex;         // regex as written, for messages
  std::optional<std::regex> compiled;  // regex, compiled once when the case is prepared
  int64_t min_tokens = 0;
};

struct E2eSpec {
  E2eRequest req;
  std::vector<bool> streams;  // the modes to run, in order
  std::string compare;        // exact | logprobs | auto | none
  // auto: the logprobs rule (a parting only at a near tie) when the engine returns logprobs and
  // ids, else exact; its logprob tolerance defaults to none (only the parting rule applies).
  double logprob_atol = 0.05;
  Expect expect;
};

std::string expectation_failure(const Expect& e, const service::Result& r) {
  if (!e.contains.empty() && r.text.find(e.contains) == std::string::npos) {
    return "the text does not contain \"" + e.contains + "\"";
  }
  if (e.compiled && !std::regex_search(r.text, *e.compiled)) {
    return "the text does not match /" + e.regex + "/";
  }
  const int64_t n = r.completion_tokens >= 0 ? r.completion_tokens : int64_t(r.token_ids.size());
  if (n < e.min_tokens)
    return "only " + std::to_string(n) + " tokens (expected >= " + std::to_string(e.min_tokens) +
           ")";
  return "";
}

class E2eCase final : public PreparedCase {
 public:
  E2eCase(std::string kind, E2eSpec spec) : kind_(std::move(kind)), spec_(std::move(spec)) {}

  std::string service_model() const override { return spec_.req.model_dir; }

  CheckResult run(RunContext& ctx) override {
    StartedRequest started = start_request(ctx, spec_.req);
    if (!started.usable()) return started.out;
    CheckResult& out = started.out;
    service::Request& request = started.request;
    std::vector<std::string> notes = started.adapted.notes;
    if (!started.adapted.cannot.empty()) {
      out.status = Status::kSkip;
      out.message = "not compared: " + started.adapted.cannot;
      return out;
    }

    std::vector<service::Result> results;
    if (!send_in_each_mode(started.h, &request, &results, &out)) return out;
    out.status = Status::kPass;
    const tokenizer::Tokenizer* tok = tokenizer_of(spec_.req.model_dir);
    if (const std::string problem = integrity_failure(results, request, tok); !problem.empty()) {
      out.status = Status::kFail;
      out.message = problem;
      return out;
    }
    const bool ids = std::all_of(results.begin(), results.end(), has_token_ids);
    // What the verdict rests on, recorded with it.
    const bool logprobs = !results[0].tokens.empty() && results[0].tokens[0].logprob.has_value();
    const std::string compare = spec_.compare != "auto" ? spec_.compare
                                : logprobs && ids       ? "logprobs"
                                                        : "exact";
    std::string compared = compare == "none" ? "expectation" : ids ? "token ids, text" : "text";
    if (compare == "logprobs") compared = "logprobs";
    out.details["compared"] = compared;
    if (compare == "logprobs" && (!logprobs || !ids)) {  // nothing to judge the rule with
      out.status = Status::kSkip;
      out.message = std::string("not compared: the engine returns ") +
                    (logprobs ? "logprobs without token ids (llama.cpp's server)" : "no logprobs") +
                    ", so compare: logprobs cannot be judged here (compare: exact can)";
      return out;
    }
    if (!ids && tok != nullptr) count_tokens(*tok, &results, &notes);
    for (const auto& r : results) {  // the dialect's leniencies that applied
      for (const auto& n : r.notes) {
        if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
      }
    }
    judge_responses(results, compare, tok, &out, &notes);
    // Latency of the streamed response (else of the plain one: e2e only).
    const Latency l = record_latency(spec_.streams.back() ? results.back() : results.front(), &out);
    if (out.status == Status::kPass) {
      out.message =
          std::to_string(l.tokens) + " tokens" +
          (compare == "none" ? "" : ", " + compare + " match with the golden (" + compared + ")") +
          (results.size() == 2 ? ", streamed == not streamed" : "");
      for (const auto& n : notes) out.message += "; " + n;
    }
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", kind_},
            {"model", spec_.req.model_dir},
            {"request", service::Client::body(spec_.req.request)},
            {"golden", spec_.req.golden_path},
            {"compare", spec_.compare}};
  }

 private:
  // Sends `request` once per mode of spec_.streams, in order, into `results`, the responses'
  // evidence into out's details. Returns false, with `out` failed, at the first that fails.
  bool send_in_each_mode(const ServiceHandle& h, service::Request* request,
                         std::vector<service::Result>* results, CheckResult* out) const {
    nlohmann::json responses = nlohmann::json::object();
    for (bool stream : spec_.streams) {
      request->stream = stream;
      results->push_back(h.client->complete(*request));
      const char* mode = stream ? "streamed" : "not streamed";
      responses[mode] = response_evidence(results->back());
      if (!results->back().ok()) {
        out->details["responses"] = responses;
        out->status = Status::kFail;
        out->message = std::string(mode) + " request: " + failure_message(results->back());
        return false;
      }
    }
    out->details["responses"] = responses;
    return true;
  }

  // Every response counts what it returned (MLPerf TEST06; compare/serving_compare.h), before
  // the harness fills in a count the engine did not give. Returns "" or the first problem,
  // naming its mode. Nothing is checked without a tokenizer.
  std::string integrity_failure(const std::vector<service::Result>& results,
                                const service::Request& request,
                                const tokenizer::Tokenizer* tok) const {
    for (size_t i = 0; i < results.size() && tok != nullptr; ++i) {
      const std::string problem = compare::integrity_problem(
          results[i], request.sampling.max_tokens, end_tokens(spec_.req.model_dir, *tok),
          request.sampling.ignore_eos && request.dialect.ignore_eos, -1);
      if (!problem.empty()) {
        return std::string(spec_.streams[i] ? "streamed" : "not streamed") +
               " response: " + problem;
      }
    }
    return "";
  }

  // No ids and no usage: the harness counts the tokens of each response without a count.
  static void count_tokens(const tokenizer::Tokenizer& tok, std::vector<service::Result>* results,
                           std::vector<std::string>* notes) {
    bool counted = false;
    for (auto& r : *results) {
      if (r.completion_tokens >= 0) continue;
      r.completion_tokens = int64_t(tok.encode(r.text, false).size());
      counted = true;
    }
    if (counted)
      notes->push_back(
          "tokens counted by the harness's tokenizer (equal to HF's): the engine "
          "reported neither ids nor usage");
  }

  // Applies one verdict: the first failure fails `out`; a passing verdict's remark is noted
  // once (not per mode).
  static void judge(const compare::ResponseVerdict& v, const std::string& what, CheckResult* out,
                    std::vector<std::string>* notes) {
    if (!v.pass && out->status == Status::kPass) {
      out->status = Status::kFail;
      out->message = what + ": " + v.message;
      out->details["first_difference"] = v.first_difference;
    } else if (v.pass && !v.message.empty()) {
      const bool known = std::any_of(notes->begin(), notes->end(), [&](const std::string& n) {
        return n.size() >= v.message.size() &&
               n.compare(n.size() - v.message.size(), v.message.size(), v.message) == 0;
      });
      if (!known) notes->push_back(what + ": " + v.message);  // once, not per mode
    }
  }

  // Judges the responses: streamed against not streamed, each against the golden as `compare`
  // says (exact | logprobs | none), and each against the expectation.
  void judge_responses(const std::vector<service::Result>& results, const std::string& compare,
                       const tokenizer::Tokenizer* tok, CheckResult* out,
                       std::vector<std::string>* notes) const {
    double max_logprob_diff = 0;
    if (results.size() == 2)
      judge(compare::compare_responses(results[0], results[1]), "streamed vs not streamed", out,
            notes);
    for (size_t i = 0; i < results.size(); ++i) {
      const std::string mode = spec_.streams[i] ? "streamed" : "not streamed";
      if (compare != "none")
        judge(compare::compare_prompt(spec_.req.golden, results[i]), mode + " prompt", out, notes);
      if (compare == "exact")
        judge(compare::compare_exact(spec_.req.golden, results[i], tok), mode + " vs golden", out,
              notes);
      if (compare == "logprobs") {
        const compare::ResponseVerdict v =
            compare::compare_logprobs(spec_.req.golden, results[i], spec_.logprob_atol);
        max_logprob_diff = std::max(max_logprob_diff, v.max_logprob_diff);
        judge(v, mode + " vs golden", out, notes);
      }
      if (const std::string why = expectation_failure(spec_.expect, results[i]);
          !why.empty() && out->status == Status::kPass) {
        out->status = Status::kFail;
        out->message = mode + ": " + why;
      }
    }
    if (compare == "logprobs") out->metrics.push_back({"max_logprob_diff", max_logprob_diff});
  }

  // The latency metrics of `timed` (TTFT, TPOT, E2E, tokens; the ITLs as a profile row).
  static Latency record_latency(const service::Result& timed, CheckResult* out) {
    const Latency l = latency_of(timed);
    if (l.ttft_ms >= 0) out->metrics.push_back({"ttft_ms", l.ttft_ms});
    if (l.tpot_ms >= 0) out->metrics.push_back({"tpot_ms", l.tpot_ms});
    out->metrics.push_back({"e2e_ms", l.e2e_ms});
    out->metrics.push_back({"completion_tokens", double(l.tokens)});
    if (!l.itl_ms.empty()) {
      std::vector<double> ns;
      for (double ms : l.itl_ms) ns.push_back(ms * 1e6);
      out->profile.push_back(summarize("itl", "inter-token latency", ns));
    }
    return l;
  }

  std::string kind_;
  E2eSpec spec_;
};

E2eSpec parse_spec(const suite::Case& c) {
  E2eSpec s;
  s.req = parse_e2e_request(c);
  const YAML::Node stream = case_field(c, "stream");
  if (!stream.IsDefined() || (stream.IsScalar() && stream.Scalar() == "both")) {
    s.streams = {false, true};
  } else {
    s.streams = {field_bool(c, "stream", true)};
  }
  const bool golden = !s.req.golden.is_null();
  s.compare = field_string(c, "compare", golden ? "exact" : "none");
  if (s.compare != "exact" && s.compare != "logprobs" && s.compare != "auto" &&
      s.compare != "none") {
    fail(c, case_field(c, "compare"), "compare must be one of: exact, logprobs, auto, none");
  }
  if (s.compare != "none" && !golden)
    fail(c, case_field(c, "compare"), "compare: " + s.compare + " needs a `golden` file");
  if ((s.compare == "logprobs" || s.compare == "auto") && s.req.request.sampling.top_logprobs == 0)
    s.req.request.sampling.top_logprobs = 5;
  s.logprob_atol = field_double(c, "logprob_atol", s.compare == "auto" ? INFINITY : 0.05);
  if (const YAML::Node e = case_field(c, "expect"); e.IsDefined()) {
    if (!e.IsMap())
      fail(c, e, "expect must be a mapping {contains: ..., regex: ..., min_tokens: N}");
    for (const auto& kv : e) {
      const std::string key = kv.first.Scalar();
      if (key == "contains" && kv.second.IsScalar()) {
        s.expect.contains = kv.second.Scalar();
      } else if (key == "regex" && kv.second.IsScalar()) {
        s.expect.regex = kv.second.Scalar();
        try {
          s.expect.compiled.emplace(s.expect.regex);
        } catch (const std::regex_error& ex) {
          fail(c, kv.second, "bad regex: " + std::string(ex.what()));
        }
      } else if (key == "min_tokens" && kv.second.IsScalar()) {
        s.expect.min_tokens = as_int(c, kv.second, "min_tokens");
      } else {
        fail(c, kv.first,
             "unknown expectation '" + key + "' (expected one of: contains, regex, min_tokens)");
      }
    }
  }
  if (s.compare == "none" && s.expect.contains.empty() && s.expect.regex.empty() &&
      s.expect.min_tokens == 0) {
    fail(c, c.check->node,
         "nothing to judge: give a `golden` or an `expect: {contains | regex | min_tokens}`");
  }
  return s;
}

std::vector<std::string> e2e_fields() {
  std::vector<std::string> f = e2e_request_fields();
  f.insert(f.end(), {"stream", "compare", "logprob_atol", "expect"});
  return f;
}

std::unique_ptr<PreparedCase> prepare_text(const suite::Case& c, const suite::Platform&) {
  E2eSpec s = parse_spec(c);
  if (has_image(s.req.request))
    fail(c, c.check->node, "this request holds an image: use kind e2e_image");
  return std::make_unique<E2eCase>("e2e_text", std::move(s));
}

std::unique_ptr<PreparedCase> prepare_image(const suite::Case& c, const suite::Platform&) {
  E2eSpec s = parse_spec(c);
  if (!has_image(s.req.request))
    fail(c, c.check->node, "kind e2e_image needs a message with an image_url part");
  return std::make_unique<E2eCase>("e2e_image", std::move(s));
}

}  // namespace

CheckKind e2e_text_check_kind() { return {"e2e_text", e2e_fields(), &prepare_text}; }
CheckKind e2e_image_check_kind() { return {"e2e_image", e2e_fields(), &prepare_image}; }

}  // namespace h0::checks
