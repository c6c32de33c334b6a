// kind: prompt_logprobs — the service's logprobs of a long prompt's own tokens at the sampled
// positions of a long-context golden (golden/tools/gen_long.py: input_ids [T], positions [P],
// logits [P, V] from transformers). The prompt goes as token ids in one completion with `echo`
// and logprobs (max_tokens 1), the way an engine scores a loglikelihood; the logprob the engine
// gives prompt token p + 1 must be within `max_abs` (default 0.05 nats) of log_softmax(logits[p])
// at that token, for each sampled p. The first position beyond is named with both values. An
// engine that takes no token-id prompts, refuses echo with logprobs, or returns fewer than T
// prompt logprobs: not exercised, said why.
#include <cmath>

#include "base/error.h"
#include "base/text_format.h"
#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "io/safetensors_reader.h"
#include "model/exec/host_glue.h"
#include "plan/memory_plan.h"
#include "suite/location.h"

namespace h0::checks {
namespace {

struct Spec {
  std::string model_dir, golden;
  double max_abs = 0.05;
  std::vector<int64_t> ids, positions;
  std::vector<double> expected;  // per position: the golden's logprob of token positions[i] + 1
};

class PromptLogprobsCase final : public PreparedCase {
 public:
  explicit PromptLogprobsCase(Spec s) : spec_(std::move(s)) {}

  std::string service_model() const override { return spec_.model_dir; }

  CheckResult run(RunContext& ctx) override {
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    CheckResult out = result_for(h);
    auto not_exercised = [&](const std::string& why) {
      out.status = Status::kSkip;
      out.message = "not exercised: " + why;
      return out;
    };
    if (!h.info.dialect.id_prompts)
      return not_exercised(
          "the engine takes no token-id prompts (a text prompt would not "
          "tokenize back to the golden's random ids)");
    service::Request r;
    r.model = h.model;
    r.prompt_ids = spec_.ids;
    r.echo = true;
    r.sampling.max_tokens = 1;
    r.sampling.temperature = 0;
    r.sampling.top_logprobs = 1;
    const AdaptedRequest adapted = adapt_request(h, spec_.model_dir, &r);
    if (!adapted.cannot.empty()) return not_exercised(adapted.cannot);
    const service::Result res = h.client->complete(r);
    if (refused(res))
      return not_exercised("the engine refuses echo with logprobs: " + failure_message(res));
    if (!res.ok()) {
      out.status = Status::kFail;
      out.message = failure_message(res);
      return out;
    }
    const size_t t = spec_.ids.size();
    if (res.tokens.size() < t)
      return not_exercised("the engine returned " + std::to_string(res.tokens.size()) +
                           " token logprobs for a " + std::to_string(t) +
                           "-token prompt echoed (no prompt logprobs)");
    double worst = 0;
    int64_t first_bad = -1, compared = 0;
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < spec_.positions.size(); ++i) {
      const size_t at = size_t(spec_.positions[i]) + 1;  // the token whose logprob row p gives
      if (at >= t || !res.tokens[at].logprob) continue;
      if (res.tokens[at].id && *res.tokens[at].id != spec_.ids[at])
        return not_exercised("the echoed token at position " + std::to_string(at) + " is id " +
                             std::to_string(*res.tokens[at].id) + ", the prompt's " +
                             std::to_string(spec_.ids[at]) + " (not aligned)");
      const double got = *res.tokens[at].logprob, want = spec_.expected[i];
      const double diff = std::abs(got - want);
      rows.push_back({{"position", at}, {"engine", got}, {"golden", want}});
      ++compared;
      if (!(diff <= worst)) worst = diff;
      if (first_bad < 0 && !(diff <= spec_.max_abs)) first_bad = int64_t(i);
    }
    if (compared == 0) return not_exercised("no sampled position had an engine logprob");
    out.details["positions"] = rows;
    out.metrics = {{"positions_compared", double(compared)}, {"max_abs_diff", worst}};
    const std::string what = std::to_string(compared) + " sampled positions of a " +
                             plan::with_commas(int64_t(t)) + "-token prompt";
    if (first_bad < 0) {
      out.status = Status::kPass;
      out.message = "prompt logprobs at " + what + " within " + printf_string("%g", spec_.max_abs) +
                    " of transformers' (max |diff| " + printf_string("%.3g", worst) + ")";
    } else {
      const size_t at = size_t(spec_.positions[size_t(first_bad)]) + 1;
      out.status = Status::kFail;
      out.message = "prompt logprobs at " + what + ": first beyond " +
                    printf_string("%g", spec_.max_abs) + " at position " + std::to_string(at) +
                    ": engine " + printf_string("%.5f", *res.tokens[at].logprob) +
                    ", transformers " + printf_string("%.5f", spec_.expected[size_t(first_bad)]) +
                    " (max |diff| " + printf_string("%.3g", worst) + ")";
    }
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "prompt_logprobs"},
            {"model", spec_.model_dir},
            {"golden", spec_.golden},
            {"max_abs", spec_.max_abs}};
  }

 private:
  Spec spec_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  Spec s;
  s.model_dir = served_model_dir(c, "prompt_logprobs");
  const YAML::Node g = case_field(c, "golden");
  if (!g.IsScalar()) fail(c, g, "a prompt_logprobs check needs `golden`: a long-context golden");
  s.golden = resolve_case_path(c, g.Scalar());
  const io::SafetensorsFile file = io::SafetensorsFile::open(s.golden);
  for (const char* name : {"input_ids", "positions", "logits"})
    if (file.find(name) == nullptr)
      fail(c, g,
           "golden " + s.golden + " has no '" + name +
               "' (golden/tools/gen_long.py writes input_ids, positions and logits)");
  s.ids = model::glue::ids_of(file.get("input_ids"));
  s.positions = model::glue::ids_of(file.get("positions"));
  const tensor::Tensor logits = file.get("logits").to(tensor::DType::kF32);
  const int64_t vocab = logits.dim(1);
  for (size_t i = 0; i < s.positions.size(); ++i) {
    const int64_t p = s.positions[i];
    double expected = NAN;
    if (p + 1 < int64_t(s.ids.size())) {
      const float* row = logits.data_as<float>() + int64_t(i) * vocab;
      double max = -INFINITY, sum = 0;
      for (int64_t v = 0; v < vocab; ++v) max = std::max(max, double(row[v]));
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - max);
      expected = double(row[s.ids[size_t(p + 1)]]) - max - std::log(sum);
    }
    s.expected.push_back(expected);
  }
  s.max_abs = field_double(c, "max_abs", s.max_abs);
  if (!(s.max_abs > 0))
    fail(c, case_field(c, "max_abs"), "max_abs: expected a positive number of nats, e.g. 0.05");
  return std::make_unique<PromptLogprobsCase>(std::move(s));
}

}  // namespace

CheckKind prompt_logprobs_check_kind() {
  return {"prompt_logprobs", {"model", "golden", "max_abs"}, &prepare};
}

}  // namespace h0::checks
