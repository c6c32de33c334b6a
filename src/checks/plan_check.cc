#include "checks/plan_check.h"

#include <optional>

#include "base/error.h"
#include "model/config/architecture.h"
#include "plan/memory_plan.h"
#include "plan/plan_report.h"
#include "suite/location.h"
#include "suite/platform.h"

namespace h0::checks {
namespace {

struct Expect {
  bool fits = true;
  std::optional<int64_t> kv_tokens_min, kv_bytes_per_token;
};

struct PlanCaseSpec {
  std::string id, check_id, model_path;
  model::Architecture arch;
  plan::ParallelPlan parallel;
  std::string dp_note;
  plan::MemoryOptions options;
  Expect expect;
};

}  // namespace

plan::ParallelPlan parse_parallel_plan(const suite::Case& c, const model::Architecture& arch,
                                       std::string* dp_note, const char* field) {
  plan::ParallelPlan parallel;
  const YAML::Node node = case_field(c, field);
  bool dp_given = false;
  if (node.IsDefined()) {
    if (!node.IsMap())
      fail(c, node, std::string(field) + " must be a mapping {tp: N, pp: N, ep: N, dp: N}");
    suite::for_each_entry(
        c.check->file, node, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
          int64_t* dim = key == "tp"   ? &parallel.tp
                         : key == "pp" ? &parallel.pp
                         : key == "ep" ? &parallel.ep
                         : key == "dp" ? &parallel.dp
                                       : nullptr;
          if (!dim)
            fail(c, k, "unknown plan dimension '" + key + "' (expected one of: tp, pp, ep, dp)");
          *dim = as_int(c, v, key);
          if (*dim < 1) fail(c, v, key + " must be >= 1");
          dp_given = dp_given || key == "dp";
        });
  }
  *dp_note = plan::default_dp(&parallel, dp_given);
  if (const auto issue = plan::check_plan(arch, parallel)) {
    const YAML::Node at =
        node.IsMap() && node[issue->dimension].IsDefined() ? node[issue->dimension] : node;
    fail(c, at, issue->message);
  }
  return parallel;
}

namespace {

// Relative to the working directory, else to the repository holding the suite (suites/..).
std::string resolve_model(const suite::Case& c, const YAML::Node& n) {
  if (!n.IsScalar()) fail(c, n, "model must be a path to a config.json or a model directory");
  return resolve_case_path(c, n.Scalar());
}

void parse_options(const suite::Case& c, const suite::Platform& platform, plan::MemoryOptions& o) {
  if (const YAML::Node n = case_field(c, "weight_dtype"); n.IsDefined()) {
    const auto f = plan::parse_weight_format(n.IsScalar() ? n.Scalar() : "");
    if (!f) fail(c, n, std::string("weight_dtype must be one of ") + plan::weight_format_names());
    o.weights = *f;
  }
  if (const YAML::Node n = case_field(c, "kv_dtype"); n.IsDefined()) {
    const auto d = plan::parse_kv_dtype(n.IsScalar() ? n.Scalar() : "");
    if (!d) fail(c, n, "kv_dtype must be a float dtype (bf16, f16, f32, fp8)");
    o.kv_dtype = *d;
  }
  const std::pair<const char*, int64_t*> ints[] = {{"block_size", &o.block_size},
                                                   {"max_model_len", &o.max_model_len},
                                                   {"concurrency", &o.concurrency},
                                                   {"max_batch_tokens", &o.max_batch_tokens}};
  for (const auto& [name, out] : ints) {
    if (const YAML::Node n = case_field(c, name); n.IsDefined()) {
      *out = as_int(c, n, name);
      if (*out < 1) fail(c, n, std::string(name) + " must be >= 1");
    }
  }
  o.device_memory = platform.device_memory_bytes;
  const YAML::Node mem = case_field(c, "device_memory");
  if (mem.IsDefined()) o.device_memory = suite::parse_size(c.check->file, mem);
  if (!(o.device_memory > 0))
    fail(c, mem, "device_memory is needed (here or in the platform file), e.g. 80GiB");
  if (const YAML::Node n = case_field(c, "utilization"); n.IsDefined()) {
    o.utilization = as_double(c, n, "utilization");
    if (!(o.utilization > 0 && o.utilization <= 1)) fail(c, n, "utilization must be in (0, 1]");
  }
  if (const YAML::Node n = case_field(c, "reserve"); n.IsDefined())
    o.reserve = suite::parse_size(c.check->file, n);
  if (const YAML::Node n = case_field(c, "mtp"); n.IsDefined())
    o.include_mtp = as_bool(c, n, "mtp");
}

Expect parse_expect(const suite::Case& c) {
  Expect e;
  const YAML::Node node = case_field(c, "expect");
  if (!node.IsDefined()) return e;
  if (!node.IsMap())
    fail(c, node, "expect must be a mapping {fits: true, kv_tokens_min: N, kv_bytes_per_token: N}");
  suite::for_each_entry(
      c.check->file, node, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
        if (key == "fits")
          e.fits = as_bool(c, v, key);
        else if (key == "kv_tokens_min")
          e.kv_tokens_min = as_int(c, v, key);
        else if (key == "kv_bytes_per_token")
          e.kv_bytes_per_token = as_int(c, v, key);
        else
          fail(c, k,
               "unknown expectation '" + key +
                   "' (expected one of: fits, kv_tokens_min, kv_bytes_per_token)");
      });
  return e;
}

PlanCaseSpec parse(const suite::Case& c, const suite::Platform& platform) {
  PlanCaseSpec s;
  s.id = c.id;
  s.check_id = c.check->id;
  const YAML::Node model = case_field(c, "model");
  if (!model.IsDefined())
    fail(c, c.check->node, "kind plan needs a `model` field (a config.json or model directory)");
  s.model_path = resolve_model(c, model);
  try {
    s.arch = model::load_architecture(s.model_path);
  } catch (const InputError& e) {
    fail(c, model, e.what());
  }
  s.parallel = parse_parallel_plan(c, s.arch, &s.dp_note);
  parse_options(c, platform, s.options);
  s.expect = parse_expect(c);
  return s;
}

// "" when the plan meets every expectation, else the first it misses.
std::string unmet(const Expect& e, const plan::MemoryPlan& p) {
  using plan::with_commas;
  if (e.kv_bytes_per_token && p.kv_bytes_per_token != *e.kv_bytes_per_token) {
    return "kv_bytes_per_token " + with_commas(p.kv_bytes_per_token) + ", expected " +
           with_commas(*e.kv_bytes_per_token);
  }
  if (p.fits != e.fits)
    return e.fits ? plan::plan_verdict(p) : "expected not to fit, but " + plan::plan_verdict(p);
  if (e.kv_tokens_min && p.kv_tokens < *e.kv_tokens_min) {
    return "KV cache holds " + with_commas(p.kv_tokens) + " tokens, expected at least " +
           with_commas(*e.kv_tokens_min);
  }
  return "";
}

class PlanCase : public PreparedCase {
 public:
  explicit PlanCase(PlanCaseSpec spec) : s_(std::move(spec)) {}

  nlohmann::json describe() const override {
    const plan::ParallelPlan& p = s_.parallel;
    return {{"id", s_.id},
            {"check", s_.check_id},
            {"kind", "plan"},
            {"model", s_.model_path},
            {"plan", {{"tp", p.tp}, {"pp", p.pp}, {"ep", p.ep}, {"dp", p.dp}}},
            {"weight_dtype", plan::weight_format_name(s_.options.weights)},
            {"device_memory_bytes", s_.options.device_memory}};
  }

  CheckResult run(RunContext&) override {
    CheckResult r;
    plan::MemoryPlan p;
    try {
      p = plan::plan_memory(s_.arch, s_.parallel, s_.options);
    } catch (const InputError& e) {
      r.status = Status::kError;
      r.message = e.what();
      return r;
    }
    if (!s_.dp_note.empty()) p.notes.insert(p.notes.begin(), s_.dp_note);
    int64_t weights_max = 0, kv_rank_max = 0;
    for (const auto& rank : p.ranks) {
      weights_max = std::max(weights_max, rank.weights);
      kv_rank_max = std::max(kv_rank_max, rank.kv_bytes_per_token);
    }
    r.metrics = {{"weights_bytes_max_rank", double(weights_max)},
                 {"kv_bytes_per_token", double(p.kv_bytes_per_token)},
                 {"kv_bytes_per_token_rank_max", double(kv_rank_max)},
                 {"kv_tokens", double(p.kv_tokens)},
                 {"required_tokens", double(p.required_tokens)},
                 {"headroom", double(p.headroom)}};
    r.details = plan::plan_json(p);
    const std::string why = unmet(s_.expect, p);
    r.status = why.empty() ? Status::kPass : Status::kFail;
    r.message = why.empty() ? plan::plan_verdict(p) : why;
    return r;
  }

 private:
  PlanCaseSpec s_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform& platform) {
  return std::make_unique<PlanCase>(parse(c, platform));
}

}  // namespace

CheckKind plan_check_kind() {
  return {"plan",
          {"model", "plan", "weight_dtype", "kv_dtype", "block_size", "max_model_len",
           "concurrency", "max_batch_tokens", "device_memory", "utilization", "reserve", "mtp",
           "expect", "timeout", "description"},
          &prepare};
}

}  // namespace h0::checks
