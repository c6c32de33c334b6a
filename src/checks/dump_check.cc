// `kind: dump` — two directories of probe dumps written by other engines (e.g. a PyTorch hook
// script on the platform vs golden/tools/dump_hf.py on the reference), compared probe by probe
// in execution order; a failure names the first divergent probe.
//
//   - id: my-model/dumps
//     kind: dump
//     golden: dumps/reference        # directories of .safetensors, files paired by name
//     actual: dumps/platform         # or an msprobe dump directory (dump.json, dump_tensor_data/)
//     map: dumps/names.yaml          # optional: {names: {golden: actual}, prefixes: {...}}
//     tolerance: {cosine_min: 0.9999, rel_l2_max: 0.01}
#include "checks/dump_check.h"

#include "compare/dump_compare.h"
#include "suite/location.h"

namespace h0::checks {
namespace {

struct DumpSpec {
  std::string id, check_id, golden, actual, map;
  double cosine_min = 0.99999, rel_l2_max = 1e-3;
};

class DumpCase : public PreparedCase {
 public:
  explicit DumpCase(DumpSpec s) : s_(std::move(s)) {}

  nlohmann::json describe() const override {
    return {{"id", s_.id},
            {"check", s_.check_id},
            {"kind", "dump"},
            {"golden", s_.golden},
            {"actual", s_.actual}};
  }

  CheckResult run(RunContext&) override {
    CheckResult r;
    const compare::NameMap map =
        s_.map.empty() ? compare::NameMap{} : compare::load_name_map(s_.map);
    const compare::DumpComparison c =
        compare::compare_dump_dirs(s_.golden, s_.actual, map, s_.cosine_min, s_.rel_l2_max);
    r.details = c.to_json();
    double worst = 1;
    size_t probes = 0;
    for (const auto& f : c.files) {
      for (const auto& row : f.report.rows) worst = std::min(worst, row.cosine);
      probes += f.report.rows.size();
      if (f.report.first_divergent >= 0 && r.message.empty()) {
        r.message = f.file + ": first divergence at " + f.report.first_divergence();
      }
    }
    if (!c.missing_files.empty() && r.message.empty())
      r.message = "no actual dump for " + c.missing_files[0];
    for (const auto& f : c.files) {
      if (!f.unmatched.empty() && r.message.empty()) {
        r.message = f.file + ": " + std::to_string(f.unmatched.size()) +
                    " golden probes have no actual tensor (first: " + f.unmatched[0] +
                    "; a name map may be needed)";
      }
    }
    r.metrics = {{"probe_cosine_min", worst}, {"probes_compared", double(probes)}};
    r.status = c.ok() ? Status::kPass : Status::kFail;
    return r;
  }

 private:
  DumpSpec s_;
};

std::string path_field(const suite::Case& c, const char* key, bool required) {
  const YAML::Node n = case_field(c, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (required) suite::fail_at(c.check->where, std::string("kind dump needs '") + key + "'");
    return "";
  }
  if (!n.IsScalar()) suite::fail_at(c.check->file, n, std::string(key) + " must be a path");
  return resolve_case_path(c, n.Scalar());
}

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  DumpSpec s;
  s.id = c.id;
  s.check_id = c.check->id;
  s.golden = path_field(c, "golden", true);
  s.actual = path_field(c, "actual", true);
  s.map = path_field(c, "map", false);
  if (const YAML::Node t = case_field(c, "tolerance"); t.IsDefined()) {
    if (!t.IsMap())
      suite::fail_at(c.check->file, t, "tolerance must be a mapping {cosine_min, rel_l2_max}");
    for (const auto& kv : t) {
      const std::string k = kv.first.Scalar();
      double* out = k == "cosine_min" ? &s.cosine_min : k == "rel_l2_max" ? &s.rel_l2_max : nullptr;
      if (out == nullptr)
        suite::fail_at(c.check->file, kv.first,
                       "unknown tolerance '" + k + "' (cosine_min, rel_l2_max)");
      *out = as_double(c, kv.second, k);
    }
  }
  return std::make_unique<DumpCase>(std::move(s));
}

}  // namespace

CheckKind dump_check_kind() {
  return {"dump", {"golden", "actual", "map", "tolerance", "timeout", "description"}, &prepare};
}

}  // namespace h0::checks
