#include "diff/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>
#include <unordered_map>

#include "base/json_read.h"
#include "base/text_format.h"
#include "diff/statistics.h"

namespace h0::diff {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Metrics that are errors already (larger = worse), matched by exact name.
const std::set<std::string, std::less<>> kErrorMetrics = {
    "max_abs_err",  "max_rel_err",  "mean_abs_err", "rmse",   "max_ulp",         "mismatch_count",
    "nan_mismatch", "inf_mismatch", "kl_mean",      "kl_max", "max_logprob_diff"};
// Fractions that are better high: their error is 1 - value (a speculator's acceptance rate).
const std::set<std::string, std::less<>> kGoodFractions = {"cosine", "acceptance_rate"};
constexpr std::string_view kRatioPrefix = "ratio_rel_lt_";

std::string flip_kind(const std::string& base, const std::string& head) {
  if (is_good(base) && is_failing(head)) return "regression";
  if (is_failing(base) && is_good(head)) return "fixed";
  return "changed";
}

void diff_metrics(const store::ResultData& base, const store::ResultData& head,
                  const DiffOptions& options, std::vector<MetricDrift>* out) {
  std::unordered_map<std::string, double> base_values;
  for (const auto& [name, value] : base.metrics) base_values.emplace(name, value);
  std::set<std::string> seen;
  for (const auto& [name, value] : head.metrics) {
    if (!seen.insert(name).second) continue;
    const auto b = base_values.find(name);
    if (b == base_values.end()) continue;
    const auto base_error = metric_error(name, b->second);
    const auto head_error = metric_error(name, value);
    if (!base_error || !head_error) continue;
    const double reference = std::max(*base_error, options.metric_floor);
    // A NaN error in head where base had a number is the worst drift there is.
    const bool became_nan = std::isnan(*head_error) && !std::isnan(*base_error);
    const bool drifted =
        *head_error > options.metric_factor * reference && *head_error > options.metric_floor;
    if (!drifted && !became_nan) continue;
    out->push_back(
        {head.case_id, name, b->second, value, *base_error, *head_error,
         became_nan ? std::numeric_limits<double>::infinity() : *head_error / reference});
  }
}

std::vector<double> scaled(const std::vector<double>& v, double by) {
  std::vector<double> out(v);
  for (double& x : out) x /= by;
  return out;
}

// The head's perf_threshold, else the base's, else the options'.
double threshold_of(const store::ResultData& base, const store::ResultData& head,
                    const DiffOptions& options) {
  if (auto t = threshold_override(head)) return *t;
  if (auto t = threshold_override(base)) return *t;
  return options.perf_threshold;
}

void diff_profiles(const store::ResultData& base, const store::ResultData& head,
                   const DiffOptions& options, std::vector<PerfChange>* out,
                   std::vector<EngineShift>* shifts) {
  const double threshold = threshold_of(base, head, options);
  diff_engine_kernels(base, head, options, threshold, out, shifts);
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& h : head.profiles) {
    if (!h.phase.starts_with("steady") || is_engine_phase(h.phase) ||
        !seen.emplace(h.phase, h.name).second)
      continue;
    const store::ProfileData* b = nullptr;
    for (const auto& candidate : base.profiles) {
      if (candidate.phase == h.phase && candidate.name == h.name) {
        b = &candidate;
        break;
      }
    }
    if (!b) continue;
    PerfChange c;
    c.case_id = head.case_id;
    c.phase = h.phase;
    c.name = h.name;
    c.base_median_ns = row_median(*b);
    c.head_median_ns = row_median(h);
    c.base_samples = b->samples_ns.size();
    c.head_samples = h.samples_ns.size();
    c.threshold = threshold;
    const size_t min_samples = static_cast<size_t>(std::max(options.min_samples, 1));
    // With calibration rows on both sides, kernel times are compared relative to the machine's
    // speed during each run, so a run on a momentarily slower machine is not a regression.
    const double base_cal = calibration_median(base, h.phase, min_samples);
    const double head_cal = calibration_median(head, h.phase, min_samples);
    c.normalized = base_cal > 0 && head_cal > 0;
    const double base_ref = c.normalized ? c.base_median_ns / base_cal : c.base_median_ns;
    const double head_ref = c.normalized ? c.head_median_ns / head_cal : c.head_median_ns;
    c.change = base_ref > 0 ? head_ref / base_ref - 1 : kNaN;
    if (c.base_samples < min_samples || c.head_samples < min_samples) {
      c.p_value = kNaN;
      c.verdict = "not enough samples";
    } else {
      c.p_value = c.normalized ? mann_whitney_u(scaled(h.samples_ns, head_cal),
                                                scaled(b->samples_ns, base_cal))
                                     .p_value
                               : mann_whitney_u(h.samples_ns, b->samples_ns).p_value;
      const bool significant = c.p_value < options.alpha;
      if (significant && c.change > threshold)
        c.verdict = "regression";
      else if (significant && c.change < -threshold)
        c.verdict = "improvement";
      else
        c.verdict = "unchanged";
      if (c.normalized) {
        c.calibration_change = head_cal / base_cal - 1;
        if (c.verdict != "unchanged" && std::abs(c.calibration_change) > std::abs(c.change))
          c.verdict = "unreliable machine";
      }
    }
    out->push_back(std::move(c));
  }
}

void diff_items(const store::ResultData& base, const store::ResultData& head,
                const DiffOptions& options, std::vector<AccuracyChange>* out) {
  if (base.eval_items.empty() || head.eval_items.empty()) return;
  std::unordered_map<std::string, const store::EvalItemData*> by_id;
  for (const auto& e : base.eval_items) by_id.emplace(e.item_id, &e);
  AccuracyChange a;
  a.case_id = head.case_id;
  int64_t base_right = 0, head_right = 0;
  for (const auto& h : head.eval_items) {
    const auto it = by_id.find(h.item_id);
    if (it == by_id.end()) continue;
    const store::EvalItemData& b = *it->second;
    ++a.items;
    base_right += b.correct;
    head_right += h.correct;
    a.lost += b.correct && !h.correct;
    a.gained += h.correct && !b.correct;
    if (b.answer != h.answer) a.flipped.push_back(h.item_id);
  }
  if (a.items == 0) return;
  a.base_score = double(base_right) / double(a.items);
  a.head_score = double(head_right) / double(a.items);
  a.p_value = mcnemar_exact_p(a.gained, a.lost);
  a.verdict = a.p_value >= options.alpha ? "unchanged"
              : a.lost > a.gained        ? "regression"
                                         : "improvement";
  out->push_back(std::move(a));
}

}  // namespace

std::optional<double> threshold_override(const store::ResultData& r) {
  // Most results have none: skip the parse (JSON written by the harness never escapes a letter).
  if (r.details_json.find("\"perf_threshold\"") == std::string::npos) return std::nullopt;
  const auto details = base::parse_json_or_discarded(r.details_json);
  if (!details.is_object()) return std::nullopt;
  const auto it = details.find("perf_threshold");
  if (it == details.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

DiffSummary summarize(const DiffReport& r) {
  DiffSummary s;
  for (const auto& c : r.statuses) {
    if (c.kind == "regression")
      ++s.regressions;
    else if (c.kind == "fixed")
      ++s.fixed;
    else if (c.kind == "changed")
      ++s.changed;
    else if (c.kind == "new")
      ++s.added;
    else if (c.kind == "removed")
      ++s.removed;
  }
  s.metric_drift = static_cast<int>(r.drifts.size());
  for (const auto& a : r.accuracy) {
    s.accuracy_regressions += a.verdict == "regression";
    s.accuracy_improvements += a.verdict == "improvement";
  }
  std::vector<double> ratios;
  for (const auto& p : r.perf) {
    if (p.verdict == "regression")
      ++s.perf_regressions;
    else if (p.verdict == "improvement")
      ++s.perf_improvements;
    else if (p.verdict == "unchanged")
      ++s.perf_unchanged;
    else if (p.verdict == "unreliable machine")
      ++s.perf_unreliable;
    else if (p.verdict == "appeared")
      ++s.perf_appeared;
    else if (p.verdict == "vanished")
      ++s.perf_vanished;
    else
      ++s.perf_not_enough_samples;
    if (p.base_median_ns > 0 && p.head_median_ns > 0) ratios.push_back(p.change + 1);
  }
  s.perf_rows = static_cast<int>(ratios.size());
  s.geomean_ratio = geometric_mean(ratios);
  return s;
}

double row_median(const store::ProfileData& p) {
  return p.samples_ns.empty() ? p.median_ns : median(p.samples_ns);
}

double calibration_median(const store::ResultData& r, const std::string& phase,
                          size_t min_samples) {
  const std::string want = "calibration" + phase.substr(std::string("steady").size());
  for (const auto& p : r.profiles) {
    if (p.phase == want && p.samples_ns.size() >= min_samples) return row_median(p);
  }
  return 0;
}

std::optional<double> metric_error(const std::string& name, double value) {
  // The full name, then what follows each '.': "logits.max_abs_err" -> "max_abs_err".
  for (size_t start = 0; start != std::string::npos;) {
    const std::string_view part = std::string_view(name).substr(start);
    if (kErrorMetrics.contains(part)) return value;
    if (kGoodFractions.contains(part) || part.starts_with(kRatioPrefix)) return 1 - value;
    const size_t dot = name.find('.', start);
    start = dot == std::string::npos ? dot : dot + 1;
  }
  return std::nullopt;
}

RunInfo run_info(const store::RunData& run) {
  return {run.id,
          run.uuid,
          run.suite,
          run.platform,
          run.started_at,
          run.status,
          run.stack.fingerprint.substr(0, 12),
          run.stack.backend,
          run.labels};
}

DiffReport diff_runs(const store::RunData& base, const store::RunData& head,
                     const DiffOptions& options) {
  DiffReport r;
  r.base = run_info(base);
  r.head = run_info(head);
  r.options = options;

  std::unordered_map<std::string, const store::ResultData*> base_by_case, head_by_case;
  for (const auto& res : base.results) base_by_case.emplace(res.case_id, &res);
  for (const auto& res : head.results) head_by_case.emplace(res.case_id, &res);

  std::set<std::string> done;
  for (const auto& h : head.results) {
    if (!done.insert(h.case_id).second) continue;  // a repeated case id: the first one counts
    const auto it = base_by_case.find(h.case_id);
    if (it == base_by_case.end()) {
      r.statuses.push_back({h.case_id, "new", "", h.status, h.message});
      continue;
    }
    const store::ResultData& b = *it->second;
    ++r.summary.compared;
    if (b.status != h.status) {
      r.statuses.push_back(
          {h.case_id, flip_kind(b.status, h.status), b.status, h.status, h.message});
    }
    diff_metrics(b, h, options, &r.drifts);
    diff_items(b, h, options, &r.accuracy);
    // Timings are compared only where the case passes on both sides: a case that fails has
    // its status flip as the finding, and a broken kernel's speed means nothing.
    if (is_good(b.status) && is_good(h.status)) diff_profiles(b, h, options, &r.perf, &r.engine);
  }
  for (const auto& b : base.results) {
    if (head_by_case.contains(b.case_id) || !done.insert(b.case_id).second) continue;
    r.statuses.push_back({b.case_id, "removed", b.status, "", b.message});
  }
  const int compared = r.summary.compared;
  r.summary = summarize(r);
  r.summary.compared = compared;
  return r;
}

bool DiffReport::has_regression() const {
  const bool kernel_appeared = std::any_of(perf.begin(), perf.end(), [&](const PerfChange& p) {
    return p.verdict == "appeared" && p.share >= options.kernel_share;
  });
  return summary.regressions > 0 || summary.metric_drift > 0 || summary.perf_regressions > 0 ||
         summary.accuracy_regressions > 0 || kernel_appeared;
}

std::string format_ns(double ns) {
  char buf[32];
  const double a = std::abs(ns);
  if (std::isnan(ns))
    std::snprintf(buf, sizeof buf, "n/a");
  else if (a >= 1e9)
    std::snprintf(buf, sizeof buf, "%.4g s", ns / 1e9);
  else if (a >= 1e6)
    std::snprintf(buf, sizeof buf, "%.4g ms", ns / 1e6);
  else if (a >= 1e3)
    std::snprintf(buf, sizeof buf, "%.4g us", ns / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.4g ns", ns);
  return buf;
}

// ---- output ---------------------------------------------------------------------------------

namespace {

nlohmann::json run_json(const RunInfo& r) {
  return {{"id", r.id},
          {"uuid", r.uuid},
          {"suite", r.suite},
          {"platform", r.platform},
          {"stack", r.stack},
          {"backend", r.backend},
          {"started_at", r.started_at},
          {"status", r.status},
          {"labels", r.labels}};
}

std::string run_line(const char* which, const RunInfo& r) {
  std::string s = std::string(which) + " run " + std::to_string(r.id) + "  platform " +
                  (r.platform.empty() ? "?" : r.platform) + "  stack " +
                  (r.stack.empty() ? "?" : r.stack);
  if (!r.backend.empty()) s += " (" + r.backend + ")";
  if (!r.started_at.empty()) s += "  " + r.started_at;
  if (!r.labels.empty()) {
    s += "  labels";
    for (const auto& [k, v] : r.labels) s += " " + k + "=" + v;
  }
  return s + "\n";
}

// count(2, "regression") -> "2 regressions".
std::string count(int n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string percent(double change) { return printf_string("%+.1f%%", change * 100); }

std::string p_string(double p) {
  return std::isnan(p) ? std::string("p n/a") : printf_string("p=%.2g", p);
}

// One section per status kind, in this order; a section only when it has entries.
std::string statuses_text(const std::vector<StatusChange>& statuses, bool color) {
  struct Section {
    const char* kind;
    const char* title;
    const char* color;
  };
  constexpr Section kSections[] = {{"regression", "regressions", "31"},
                                   {"fixed", "fixed", "32"},
                                   {"changed", "changed", "33"},
                                   {"new", "new", "36"},
                                   {"removed", "removed", "36"}};
  std::string out;
  for (const auto& section : kSections) {
    std::string lines;
    int n = 0;
    for (const auto& c : statuses) {
      if (c.kind != section.kind) continue;
      ++n;
      lines += "  " + c.case_id + "  ";
      if (c.kind == "new")
        lines += c.head_status;
      else if (c.kind == "removed")
        lines += "was " + c.base_status;
      else
        lines += c.base_status + " -> " + paint(c.head_status, section.color, color);
      if (!c.message.empty() && c.kind != "removed") lines += "  " + c.message;
      lines += "\n";
    }
    if (n == 0) continue;
    out +=
        "\n" +
        paint(std::string(section.title) + " (" + std::to_string(n) + ")", section.color, color) +
        "\n" + lines;
  }
  return out;
}

// The metric drift section; "" when there is none.
std::string drifts_text(const std::vector<MetricDrift>& drifts, bool color) {
  if (drifts.empty()) return "";
  std::string out =
      "\n" + paint("metric drift (" + std::to_string(drifts.size()) + ")", "31", color) + "\n";
  for (const auto& d : drifts) {
    out += "  " + d.case_id + "  " + d.metric + "  " + printf_string("%.6g", d.base) + " -> " +
           printf_string("%.6g", d.head) + "  (error x" + printf_string("%.3g", d.factor) + ")\n";
  }
  return out;
}

// The accuracy section: the eval cases whose answers flipped (the first 8 ids each); "" when
// none did.
std::string accuracy_text(const std::vector<AccuracyChange>& accuracy, const DiffSummary& summary,
                          bool color) {
  bool flips = false;
  for (const auto& a : accuracy) flips = flips || !a.flipped.empty();
  if (!flips) return "";
  std::string out =
      "\n" + paint("accuracy", summary.accuracy_regressions > 0 ? "31" : "33", color) + "\n";
  for (const auto& a : accuracy) {
    if (a.flipped.empty()) continue;
    const char* c = a.verdict == "regression" ? "31" : a.verdict == "improvement" ? "32" : "33";
    std::string ids;
    for (size_t i = 0; i < a.flipped.size() && i < 8; ++i) ids += (i ? ", " : "") + a.flipped[i];
    if (a.flipped.size() > 8) ids += ", ...";
    out += "  " + paint(a.verdict, c, color) + "  " + a.case_id + "  " +
           printf_string("%.3f", a.base_score) + " -> " + printf_string("%.3f", a.head_score) +
           " on " + std::to_string(a.items) + " items, " + std::to_string(a.lost) + " lost, " +
           std::to_string(a.gained) + " gained (McNemar exact " + p_string(a.p_value) +
           "); answers changed: " + ids + "\n";
  }
  return out;
}

// One slower, faster or unreliable performance row.
std::string perf_row_text(const PerfChange& p, bool color) {
  const bool unreliable = p.verdict == "unreliable machine";
  const char* word = unreliable                  ? "unreliable machine"
                     : p.verdict == "regression" ? "slower"
                                                 : "faster";
  return "  " +
         paint(word,
               unreliable                  ? "33"
               : p.verdict == "regression" ? "31"
                                           : "32",
               color) +
         "  " + p.case_id + "  " + p.phase + " " + p.name + "  " + format_ns(p.base_median_ns) +
         " -> " + format_ns(p.head_median_ns) + "  " + percent(p.change) + "  " +
         p_string(p.p_value) +
         (p.base_runs > 1 || p.head_runs > 1
              ? "  (" + std::to_string(p.base_runs) + " vs " + std::to_string(p.head_runs) +
                    " runs, " + p.test + ", noise " + percent(p.noise) + ")"
              : std::string()) +
         (unreliable ? "  the calibration moved " + percent(p.calibration_change) : std::string()) +
         (!unreliable && !std::isnan(p.share) && p.normalized && !std::isnan(p.calibration_change)
              ? "  (engine calibration " + percent(p.calibration_change) + ")"
              : std::string()) +
         "\n";
}

// An engine kernel on one side only.
std::string presence_row_text(const PerfChange& p, bool color) {
  const bool appeared = p.verdict == "appeared";
  return "  " + paint(p.verdict, appeared ? "31" : "33", color) + "  " + p.case_id + "  " +
         p.phase + " " + p.name + "  " + format_ns(appeared ? p.head_median_ns : p.base_median_ns) +
         " a step, " + printf_string("%.1f%%", 100 * p.share) + " of the " +
         (appeared ? "head's" : "base's") + " step time\n";
}

// The performance section: the counts, then the rows that changed or ran on an unreliable
// machine, then the engine kernels on one side only; "" when there are none.
std::string perf_text(const std::vector<PerfChange>& perf, const DiffSummary& s, bool color) {
  if (s.perf_regressions + s.perf_improvements + s.perf_unreliable + s.perf_appeared +
          s.perf_vanished <=
      0)
    return "";
  std::string out =
      "\n" + paint("performance", s.perf_regressions > 0 ? "31" : "32", color) + " (" +
      std::to_string(s.perf_regressions) + " slower, " + std::to_string(s.perf_improvements) +
      " faster, " + std::to_string(s.perf_unchanged) + " unchanged, " +
      (s.perf_unreliable > 0 ? std::to_string(s.perf_unreliable) + " on an unreliable machine, "
                             : std::string()) +
      (s.perf_appeared + s.perf_vanished > 0
           ? std::to_string(s.perf_appeared) + " kernels appeared, " +
                 std::to_string(s.perf_vanished) + " vanished, "
           : std::string()) +
      std::to_string(s.perf_not_enough_samples) + " with too few samples)\n";
  for (const auto& p : perf) {
    const bool unreliable = p.verdict == "unreliable machine";
    if (p.verdict == "appeared" || p.verdict == "vanished") {
      out += presence_row_text(p, color);
      continue;
    }
    if (p.verdict != "regression" && p.verdict != "improvement" && !unreliable) continue;
    out += perf_row_text(p, color);
  }
  return out;
}

// Each engine phase as a whole: its step time and the engine's calibration.
std::string engine_text(const std::vector<EngineShift>& engine) {
  std::string out;
  for (const auto& e : engine) {
    out += "  engine  " + e.case_id + "  " + e.phase + ": " +
           (e.base_step_ns > 0 && e.head_step_ns > 0
                ? "step median " + format_ns(e.base_step_ns) + " -> " + format_ns(e.head_step_ns) +
                      " (" + percent(e.step_change) + "), "
                : std::string()) +
           (std::isnan(e.calibration_change)
                ? "its kernels not calibrated (too few steps to compare: judged as timed)"
                : "its kernels as a whole " + percent(e.calibration_change) +
                      " (a slower machine or a stack slower for every kernel alike; each kernel "
                      "is judged against it)") +
           "\n";
  }
  return out.empty() ? "" : "\nengine phases\n" + out;
}

// The geomean line and the one-line summary ending in REGRESSION or OK.
std::string summary_text(const DiffSummary& s, bool regression, bool color) {
  std::string out;
  if (s.perf_rows > 0) {
    out += "geomean head/base over " + count(s.perf_rows, "steady row") + ": " +
           printf_string("%.4f", s.geomean_ratio) + " (" + percent(s.geomean_ratio - 1) + ")\n";
  } else {
    out += "geomean head/base: no steady rows on both sides\n";
  }
  out += count(s.compared, "case") + " compared: " + count(s.regressions, "regression") + ", " +
         std::to_string(s.fixed) + " fixed, " + std::to_string(s.changed) + " changed, " +
         std::to_string(s.added) + " new, " + std::to_string(s.removed) + " removed, " +
         count(s.metric_drift, "metric drift") + ", " +
         count(s.accuracy_regressions, "accuracy regression") + ", " +
         std::to_string(s.perf_regressions) + " slower, " + std::to_string(s.perf_improvements) +
         " faster" +
         (s.perf_appeared + s.perf_vanished > 0
              ? ", " + count(s.perf_appeared, "kernel") + " appeared, " +
                    std::to_string(s.perf_vanished) + " vanished"
              : std::string()) +
         ": " + (regression ? paint("REGRESSION", "31", color) : paint("OK", "32", color)) + "\n";
  return out;
}

nlohmann::json engine_json(const std::vector<EngineShift>& engine) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : engine) {
    out.push_back({{"case_id", e.case_id},
                   {"phase", e.phase},
                   {"base_step_ns", e.base_step_ns},
                   {"head_step_ns", e.head_step_ns},
                   {"step_change", number_or_null(e.step_change)},
                   {"calibration_change", number_or_null(e.calibration_change)}});
  }
  return out;
}

}  // namespace

nlohmann::json DiffReport::to_json() const {
  nlohmann::json statuses_json = nlohmann::json::array();
  for (const auto& c : statuses) {
    statuses_json.push_back({{"case_id", c.case_id},
                             {"kind", c.kind},
                             {"base_status", c.base_status},
                             {"head_status", c.head_status},
                             {"message", c.message}});
  }
  nlohmann::json drift_json = nlohmann::json::array();
  for (const auto& d : drifts) {
    drift_json.push_back({{"case_id", d.case_id},
                          {"metric", d.metric},
                          {"base", number_or_null(d.base)},
                          {"head", number_or_null(d.head)},
                          {"base_error", number_or_null(d.base_error)},
                          {"head_error", number_or_null(d.head_error)},
                          {"factor", number_or_null(d.factor)}});
  }
  nlohmann::json perf_json = nlohmann::json::array();
  for (const auto& p : perf) {
    perf_json.push_back({{"case_id", p.case_id},
                         {"phase", p.phase},
                         {"name", p.name},
                         {"base_median_ns", p.base_median_ns},
                         {"head_median_ns", p.head_median_ns},
                         {"change", number_or_null(p.change)},
                         {"p_value", number_or_null(p.p_value)},
                         {"base_samples", p.base_samples},
                         {"head_samples", p.head_samples},
                         {"threshold", p.threshold},
                         {"normalized", p.normalized},
                         {"base_runs", p.base_runs},
                         {"head_runs", p.head_runs},
                         {"noise", p.noise},
                         {"test", p.test},
                         {"calibration_change", number_or_null(p.calibration_change)},
                         {"share", number_or_null(p.share)},
                         {"verdict", p.verdict}});
  }
  nlohmann::json accuracy_json = nlohmann::json::array();
  for (const auto& a : accuracy) {
    accuracy_json.push_back({{"case_id", a.case_id},
                             {"items", a.items},
                             {"base_score", a.base_score},
                             {"head_score", a.head_score},
                             {"lost", a.lost},
                             {"gained", a.gained},
                             {"p_value", a.p_value},
                             {"flipped", a.flipped},
                             {"verdict", a.verdict}});
  }
  const DiffSummary& s = summary;
  return {{"base", run_json(base)},
          {"head", run_json(head)},
          {"options",
           {{"metric_factor", options.metric_factor},
            {"metric_floor", options.metric_floor},
            {"perf_threshold", options.perf_threshold},
            {"alpha", options.alpha},
            {"min_samples", options.min_samples}}},
          {"statuses", statuses_json},
          {"metric_drift", drift_json},
          {"performance", perf_json},
          {"accuracy", accuracy_json},
          {"engine", engine_json(engine)},
          {"summary",
           {{"compared", s.compared},
            {"regressions", s.regressions},
            {"fixed", s.fixed},
            {"changed", s.changed},
            {"new", s.added},
            {"removed", s.removed},
            {"metric_drift", s.metric_drift},
            {"accuracy_regressions", s.accuracy_regressions},
            {"accuracy_improvements", s.accuracy_improvements},
            {"perf_regressions", s.perf_regressions},
            {"perf_improvements", s.perf_improvements},
            {"perf_unchanged", s.perf_unchanged},
            {"perf_not_enough_samples", s.perf_not_enough_samples},
            {"perf_appeared", s.perf_appeared},
            {"perf_vanished", s.perf_vanished},
            {"perf_rows", s.perf_rows},
            {"geomean_ratio", number_or_null(s.geomean_ratio)}}},
          {"has_regression", has_regression()}};
}

std::string DiffReport::to_text(bool color) const {
  return run_line("base", base) + run_line("head", head) + statuses_text(statuses, color) +
         drifts_text(drifts, color) + accuracy_text(accuracy, summary, color) +
         perf_text(perf, summary, color) + engine_text(engine) + "\n" +
         summary_text(summary, has_regression(), color);
}

}  // namespace h0::diff
