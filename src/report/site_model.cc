#include "report/site_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unordered_map>

#include "base/json_read.h"
#include "report/html_text.h"
#include "suite/filter.h"

namespace h0::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct KindLayer {
  const char* kind;
  const char* layer;
};
// Check kinds (checks/check.h) by the layer of the model they validate.
constexpr KindLayer kLayers[] = {
    {"op", "op"},         {"layer", "layer"},     {"model", "model"},  {"image", "model"},
    {"dump", "model"},    {"load", "model"},      {"service", "e2e"},  {"e2e_text", "e2e"},
    {"e2e_image", "e2e"}, {"determinism", "e2e"}, {"e2e_load", "e2e"}, {"collective", "mesh"},
    {"plan", "plan"},     {"eval", "accuracy"},
};

// The Day-0 checklist in order, each stage with the check kinds it is made of.
struct Day0StageDef {
  const char* id;
  const char* title;
  std::vector<std::string> kinds;
};
const std::vector<Day0StageDef>& day0_stage_defs() {
  static const std::vector<Day0StageDef> defs = {
      {"plan", "sharding plan fits in memory", {"plan"}},
      {"load", "weights load", {"load"}},
      {"op", "operators are numerically right", {"op"}},
      {"layer", "every layer matches golden", {"layer"}},
      {"model", "the full model matches golden", {"model", "image", "dump"}},
      {"service", "the service starts", {"service"}},
      {"e2e",
       "text and image requests come back",
       {"e2e_text", "e2e_image", "determinism", "e2e_load"}},
      {"mesh", "collectives are right", {"collective"}},
      {"accuracy", "task accuracy matches the reference", {"eval"}},
  };
  return defs;
}

// Key metrics by preference; a metric matches by full name or by the part after a '.'.
constexpr const char* kKeyMetrics[] = {"max_abs_err", "rmse",           "max_rel_err",
                                       "cosine",      "top1_agreement", "score"};

bool metric_matches(const std::string& name, const std::string& want) {
  return name == want || (name.size() > want.size() && name.ends_with(want) &&
                          name[name.size() - want.size() - 1] == '.');
}

std::string key_metric_of(const store::ResultData& r) {
  for (const char* want : kKeyMetrics) {
    for (const auto& [name, value] : r.metrics) {
      if (metric_matches(name, want)) return name;
    }
  }
  return "";
}

double metric_value(const store::ResultData& r, const std::string& name) {
  for (const auto& [n, v] : r.metrics) {
    if (n == name) return v;
  }
  return kNaN;
}

// The text right after the first `"key":` in a JSON text; "" if absent. A quoted key cannot occur
// inside a JSON string (quotes there are escaped), so only a real key matches.
std::string_view after_key(std::string_view json_text, std::string_view key) {
  const std::string pattern = "\"" + std::string(key) + "\":";
  const size_t at = json_text.find(pattern);
  return at == std::string_view::npos ? std::string_view() : json_text.substr(at + pattern.size());
}

// "bf16 rtol=0.016 atol=1e-05" from the first "preset", "rtol" and "atol" keys of a result's
// details (its first output's: op checks write {"outputs": [{..., "preset", "rtol", "atol"}]});
// "" if there are none. Scans instead of parsing: this runs once per case of every run.
std::string tolerance_text(const std::string& details_json) {
  std::string text;
  if (const std::string_view preset = after_key(details_json, "preset"); preset.starts_with('"')) {
    text = std::string(preset.substr(1, preset.find('"', 1) - 1));
  }
  for (const char* bound : {"rtol", "atol"}) {
    const std::string value(after_key(details_json, bound).substr(0, 32));
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) continue;
    text += (text.empty() ? "" : " ") + std::string(bound) + "=" + rounded(v, 3).dump();
  }
  return text;
}

// A result's engine kernels: each one's median time per step and share of its phase's steps.
EngineKernels engine_kernels(const store::ResultData& r, int run_index) {
  EngineKernels e;
  e.run = run_index;
  const std::map<std::string, double> phase_ns = diff::engine_phase_ns(r.profiles);
  for (const auto& p : r.profiles) {
    if (!diff::is_engine_phase(p.phase) || p.name == "(step)") continue;
    const double whole = phase_ns.count(p.phase) ? phase_ns.at(p.phase) : 0;
    e.kernels[{p.phase, p.name}] = {diff::row_median(p), whole > 0 ? p.total_ns / whole : 0};
  }
  return e;
}

const store::ProfileData* steady_row(const store::ResultData& r) {
  for (const auto& p : r.profiles) {
    if (p.phase.starts_with("steady")) return &p;
  }
  return nullptr;
}

// A `harness day0` run records each stage as a case of kind day0_stage ("stage/NN-<id>", in
// order): its status ("blocked" and "not_run" are stored as skips), title and summary.
std::vector<Day0Stage> recorded_day0_stages(const store::RunData& run) {
  std::vector<Day0Stage> stages;
  for (const auto& r : run.results) {
    if (r.kind != "day0_stage") continue;
    const nlohmann::json d = base::parse_json_or_discarded(r.details_json);
    Day0Stage s;
    s.id = r.check_id;
    s.title = d.is_object() ? d.value("title", r.check_id) : r.check_id;
    s.status = d.is_object() ? d.value("stage_status", r.status) : r.status;
    s.summary = r.message;
    const std::string prefix = r.check_id + "/";
    for (const auto& c : run.results) {
      if (c.kind == "day0_stage" || c.case_id.rfind(prefix, 0) != 0) continue;
      ++s.cases;
      s.failed += diff::is_failing(c.status);
    }
    stages.push_back(s);
  }
  return stages;
}

std::vector<Day0Stage> day0_stages(const store::RunData& run) {
  if (std::vector<Day0Stage> recorded = recorded_day0_stages(run); !recorded.empty())
    return recorded;
  std::vector<Day0Stage> stages;
  for (const auto& def : day0_stage_defs()) {
    Day0Stage s;
    s.id = def.id;
    s.title = def.title;
    s.status = "not run";
    int skipped = 0;
    for (const auto& r : run.results) {
      if (std::find(def.kinds.begin(), def.kinds.end(), r.kind) == def.kinds.end()) continue;
      ++s.cases;
      if (diff::is_failing(r.status)) ++s.failed;
      if (r.status == "skip") ++skipped;
    }
    if (s.cases > 0) s.status = s.failed > 0 ? "fail" : skipped == s.cases ? "skip" : "pass";
    stages.push_back(s);
  }
  return stages;
}

bool is_day0_run(const store::RunData& run) {
  return run.suite == "day0" || run.labels.count("day0") > 0;
}

bool is_complete(const store::RunData& run) { return is_complete_run(run.status); }

// The runs `options` select, oldest first, without results.
std::vector<store::RunData> select_runs(const store::SqliteStore& db, const SiteOptions& options) {
  std::vector<store::RunData> runs;
  for (auto& run : db.list_runs()) {
    if (!options.since.empty() && run.started_at < options.since) continue;
    if (!suite::glob_match(options.suite_glob, run.suite)) continue;
    runs.push_back(std::move(run));
  }
  std::reverse(runs.begin(), runs.end());
  return runs;
}

// The diff with perf rows reduced to the ones a reader acts on.
diff::DiffReport trimmed_diff(const store::RunData& base, const store::RunData& head) {
  diff::DiffReport d = diff::diff_runs(base, head, diff::DiffOptions{});
  std::erase_if(d.perf, [](const diff::PerfChange& p) {
    return p.verdict != "regression" && p.verdict != "improvement";
  });
  return d;
}

class Gatherer {
 public:
  Gatherer(SiteModel* model, const SiteOptions& options) : model_(model), options_(options) {}

  void add(store::RunData run) {
    SiteRun site_run;
    site_run.column = column_of(run);
    site_run.page = "runs/run-" + std::to_string(run.id) + ".html";
    site_run.data = "data/run-" + std::to_string(run.id) + ".js";
    const int run_index = static_cast<int>(model_->runs.size());
    std::unordered_map<std::string, int> tolerances;
    for (const auto& r : run.results) {
      ++site_run.counts[r.status];
      site_run.cases.push_back(
          digest(run, run_index, site_run.column, r, &site_run.tolerances, &tolerances));
    }
    if (is_day0_run(run)) {
      site_run.day0 = day0_stages(run);
      for (const auto& r : run.results) {
        if (r.kind != "day0_stage") continue;
        const nlohmann::json d = base::parse_json_or_discarded(r.details_json);
        if (d.is_object()) site_run.day0_verdict = d.value("verdict", "");
        break;
      }
    }
    if (auto prev = last_complete_.find({run.platform, run.suite}); prev != last_complete_.end()) {
      site_run.previous = prev->second.first;
      site_run.diff = trimmed_diff(prev->second.second, run);
    }
    const std::string& ref_platform = options_.compare_platform;
    if (!ref_platform.empty() && run.platform != ref_platform) {
      if (auto ref = last_complete_.find({ref_platform, run.suite}); ref != last_complete_.end()) {
        site_run.reference = ref->second.first;
        site_run.reference_diff = trimmed_diff(ref->second.second, run);
      }
    }
    std::vector<store::ResultData> results = std::move(run.results);
    site_run.run = run;
    run.results = std::move(results);
    if (is_complete(run)) {
      auto& slot = last_complete_[{run.platform, run.suite}];
      slot.first = run_index;
      slot.second = std::move(run);
    }
    model_->runs.push_back(std::move(site_run));
  }

 private:
  int column_of(const store::RunData& run) {
    const std::string key = run.platform + '\n' + run.stack.fingerprint;
    const auto [it, added] = columns_.emplace(key, static_cast<int>(model_->columns.size()));
    if (added) {
      const auto label = run.labels.find("stack");
      SiteColumn c;
      c.platform = run.platform;
      c.fingerprint = run.stack.fingerprint;
      c.backend = run.stack.backend;
      c.label = label != run.labels.end() ? label->second : run.stack.fingerprint.substr(0, 12);
      c.first_started = run.started_at;
      const nlohmann::json versions = base::parse_json_or_discarded(run.stack.versions_json);
      c.fault_injector = versions.is_object() && versions.contains("backend") &&
                         versions["backend"].is_object() &&
                         versions["backend"].value("fault_injector", false);
      if (const auto ab = run.labels.find("ab"); ab != run.labels.end()) {
        c.ab = ab->second;
        if (const auto side = run.labels.find("ab_side"); side != run.labels.end())
          c.label += " (" + side->second + ")";
      }
      model_->columns.push_back(std::move(c));
    }
    return it->second;
  }

  int case_of(const store::RunData& run, const store::ResultData& r) {
    const auto [it, added] =
        model_->case_index.emplace(r.case_id, static_cast<int>(model_->cases.size()));
    if (added) {
      SiteCase c;
      c.case_id = r.case_id;
      c.check_id = r.check_id;
      c.kind = r.kind;
      c.suite = run.suite;
      c.layer = layer_of(r.kind);
      c.page = "checks/" + file_stem(r.case_id) + ".html";
      model_->cases.push_back(std::move(c));
    }
    return it->second;
  }

  CaseDigest digest(const store::RunData& run, int run_index, int column,
                    const store::ResultData& r, std::vector<std::string>* tolerance_list,
                    std::unordered_map<std::string, int>* tolerance_ids) {
    CaseDigest d;
    d.case_index = case_of(run, r);
    SiteCase& c = model_->cases[static_cast<size_t>(d.case_index)];
    if (c.key_metric.empty()) c.key_metric = key_metric_of(r);
    d.status = status_code(r.status);
    d.key = c.key_metric.empty() ? kNaN : metric_value(r, c.key_metric);
    if (const std::string tol = tolerance_text(r.details_json); !tol.empty()) {
      const auto [it, added] =
          tolerance_ids->emplace(tol, static_cast<int>(tolerance_list->size()));
      if (added) tolerance_list->push_back(tol);
      d.tolerance = it->second;
    }
    const store::ProfileData* steady = steady_row(r);
    d.median_ns = steady ? steady->median_ns : kNaN;
    d.p99_ns = steady ? steady->p99_ns : kNaN;
    const double cal = steady ? diff::calibration_median(r, steady->phase, 0) : 0;
    d.calibration_ns = cal > 0 ? cal : kNaN;
    d.message = r.message;
    c.runs.push_back(run_index);
    c.params_json = r.params_json;
    c.latest_run = run_index;
    c.latest = r;
    if (std::any_of(r.profiles.begin(), r.profiles.end(),
                    [](const auto& p) { return diff::is_engine_phase(p.phase); }))
      c.engine[column] = engine_kernels(r, run_index);
    for (auto& p : c.latest.profiles) p.samples_ns = {};
    if (diff::is_failing(r.status)) {
      c.failure_run = run_index;
      c.last_failure = c.latest;
    }
    if (r.kind == "eval") {  // the score per stack version; the latest run of a column wins
      AccuracyPoint& a = c.accuracy[column];
      a.run = run_index;
      a.status = r.status;
      a.metrics.clear();
      for (const auto& [name, value] : r.metrics) a.metrics[name] = value;
    }
    return d;
  }

  SiteModel* model_;
  const SiteOptions& options_;
  std::unordered_map<std::string, int> columns_;
  // (platform, suite) -> its latest complete run so far (index, run with results)
  std::map<std::pair<std::string, std::string>, std::pair<int, store::RunData>> last_complete_;
};

}  // namespace

namespace {

// Per platform and timed check, the calibrated steady medians of its complete runs in run order;
// a series whose last change point (within the last 20 runs) is a slowdown the machine's own
// move does not explain is the check's current state: listed with what is wrong.
void find_slowdowns(SiteModel* model) {
  std::map<std::pair<std::string, int>, diff::TimingSeries> series;
  for (const auto& run : model->runs) {
    if (!is_complete(run.run)) continue;
    for (const auto& d : run.cases) {
      if (!std::isfinite(d.median_ns) || d.median_ns <= 0 || (d.status != 'P' && d.status != 'x'))
        continue;
      diff::TimingSeries& t = series[{run.run.platform, d.case_index}];
      t.case_id = model->cases[static_cast<size_t>(d.case_index)].case_id;
      t.phase = "steady";
      t.run_ids.push_back(run.run.id);
      t.stacks.push_back(run.run.stack.fingerprint.substr(0, 12));
      t.medians.push_back(d.median_ns);
      t.calibrations.push_back(std::isfinite(d.calibration_ns) ? d.calibration_ns : 0);
    }
  }
  for (const auto& [key, t] : series) {
    if (t.medians.size() < 6) continue;
    const std::vector<diff::ChangeReport> found = diff::change_points_of(key.first, t, 20);
    if (found.empty()) continue;
    const diff::ChangeReport& last = found.back();
    if (last.change > 0 && !last.unreliable)
      model->slowdowns.push_back({key.first, key.second, last});
  }
}

}  // namespace

std::map<std::string, std::string> regressed_cases(const diff::DiffReport& d) {
  std::map<std::string, std::string> out;  // the first reason found for a case is kept
  char buf[160];
  for (const auto& s : d.statuses) {
    if (s.kind == "regression")
      out.emplace(s.case_id, "status " + s.base_status + " -> " + s.head_status);
  }
  for (const auto& m : d.drifts) {
    std::snprintf(buf, sizeof buf, "%s grew %.3gx", m.metric.c_str(), m.factor);
    out.emplace(m.case_id, buf);
  }
  for (const auto& a : d.accuracy) {
    if (a.verdict != "regression") continue;
    std::snprintf(buf, sizeof buf,
                  "accuracy %.3f -> %.3f, %lld items lost, %lld gained (McNemar p=%.2g)",
                  a.base_score, a.head_score, static_cast<long long>(a.lost),
                  static_cast<long long>(a.gained), a.p_value);
    out.emplace(a.case_id, buf);
  }
  for (const auto& p : d.perf) {
    // A timing change counts by the rule the nightly verdict uses: repeated runs (welch) or
    // interleaved rounds (paired), or the timing history's change points (find_slowdowns). One
    // run a side (mann-whitney) flags same-stack pairs on a loaded machine: listed on the run
    // page's diff, never a regression here.
    if (p.verdict != "regression" || p.test == "mann-whitney") continue;
    std::snprintf(buf, sizeof buf, "timing %+.1f%% (%s p=%.2g)", 100 * p.change, p.test.c_str(),
                  p.p_value);
    out.emplace(p.case_id, buf);
  }
  return out;
}

int SiteRun::regressions() const { return diff ? int(regressed_cases(*diff).size()) : 0; }

int SiteRun::reference_regressions() const {
  return reference_diff ? int(regressed_cases(*reference_diff).size()) : 0;
}

SiteModel gather_site(const store::SqliteStore& db, const SiteOptions& options,
                      const std::function<void(size_t, size_t)>& progress) {
  SiteModel model;
  model.db_path = db.path();
  model.generated_at = store::utc_now();
  model.compare_platform = options.compare_platform;
  const std::vector<store::RunData> runs = select_runs(db, options);
  if (runs.empty()) return model;
  // Run i+1 loads through a second connection while run i is digested and diffed.
  const auto loader_db = store::SqliteStore::open(db.path());
  const auto load = [&](size_t i) {
    return std::async(std::launch::async,
                      [&loader_db, id = runs[i].id] { return loader_db->load_run(id); });
  };
  Gatherer gatherer(&model, options);
  auto next = load(0);
  for (size_t i = 0; i < runs.size(); ++i) {
    auto run = next.get();
    if (i + 1 < runs.size()) next = load(i + 1);
    if (run) gatherer.add(std::move(*run));
    if (progress) progress(i + 1, runs.size());
  }
  find_slowdowns(&model);
  return model;
}

std::string layer_of(const std::string& kind) {
  for (const auto& k : kLayers) {
    if (kind == k.kind) return k.layer;
  }
  return "other";
}

const char* status_of_code(char code) {
  for (const auto& s : kStatusCodes) {
    if (s.code == code) return s.status;
  }
  return "other";
}

char status_code(const std::string& status) {
  for (const auto& s : kStatusCodes) {
    if (status == s.status) return s.code;
  }
  return '?';
}

}  // namespace h0::report
