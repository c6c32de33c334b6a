// Comparison of two runs (`harness diff`): per case id, status flips, drift of the accuracy
// metrics and changes of the steady-state timings, each judged against DiffOptions. Field names
// of to_json() are stable: scripts and the dashboard read them.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/run_data.h"

namespace h0::diff {

struct DiffOptions {
  // A metric that grows when worse regresses when head > metric_factor * max(base, metric_floor)
  // and head > metric_floor.
  double metric_factor = 2.0;
  double metric_floor = 1e-6;
  // A timing regresses when its median grew by more than perf_threshold (relative) and the
  // Mann-Whitney p-value is below alpha. A result's details_json {"perf_threshold": x}
  // overrides perf_threshold for its rows.
  double perf_threshold = 0.05;
  double alpha = 0.05;
  int min_samples = 5;  // fewer raw samples on either side: "not enough samples"
  // An engine's kernels (`harness profile import`): a kernel's change is named only when it moves
  // its phase's step time by at least this share, and a kernel that appeared in the head is a
  // regression when it takes at least this share (a fused kernel split into unfused ones).
  double kernel_share = 0.005;
};

// Who the run is, for the report header.
struct RunInfo {
  int64_t id = 0;
  std::string uuid, suite, platform, started_at, status;
  std::string stack;  // fingerprint, first 12 characters
  std::string backend;
  std::map<std::string, std::string> labels;
};

// kind: "regression" (pass/xfail -> fail/error/crash/timeout), "fixed" (the reverse),
// "changed" (any other status change), "new" (only in head), "removed" (only in base).
struct StatusChange {
  std::string case_id, kind;
  std::string base_status, head_status;  // empty on the side the case is absent from
  std::string message;                   // head's message (base's for "removed")
};

// One accuracy metric whose error grew beyond the factor. `base_error`/`head_error` are the
// metric itself, or 1 - metric for cosine, ratio_rel_lt_* and acceptance_rate.
struct MetricDrift {
  std::string case_id, metric;
  double base = 0, head = 0;
  double base_error = 0, head_error = 0;
  double factor = 0;  // head_error / max(base_error, metric_floor)
};

// verdict: "regression", "improvement", "unchanged", "not enough samples", or "unreliable
// machine": significant and beyond the threshold, but the host-loop calibration moved more than
// the change itself between the sides, so the machine, not the stack, may be what changed. An
// engine's kernels (phases steady/engine*) may also be "appeared" or "vanished": on one side only.
struct PerfChange {
  std::string case_id, phase, name;
  double base_median_ns = 0, head_median_ns = 0;
  double change = 0;        // head / base - 1 (relative to each run's calibration when normalized)
  double p_value = 1;       // NaN when not tested (not enough samples)
  bool normalized = false;  // both sides had calibration rows: times compared relative to them
  size_t base_samples = 0, head_samples = 0;
  double threshold = 0;  // the one applied (options or the result's perf_threshold; or the noise)
  // Over several runs a side (diff_repeated_runs): the runs, the noise a change had to exceed
  // (max / min - 1 of the base side's calibrated run medians; paired, of the rounds' head/base
  // ratios), and the test that was run.
  size_t base_runs = 1, head_runs = 1;
  double noise = 0;
  std::string test = "mann-whitney";  // "mann-whitney" (samples), "welch" (runs), "paired" (rounds)
  double calibration_change = std::numeric_limits<double>::quiet_NaN();  // head / base - 1
  // An engine kernel's share of its phase's step time (the head's; the base's when vanished).
  double share = std::numeric_limits<double>::quiet_NaN();
  std::string verdict;
};

// One task-accuracy case (kind: eval) answered item by item on both sides, paired by item id:
// "regression" when the head lost significantly more items than it gained (exact McNemar
// p < alpha), "improvement" the reverse, else "unchanged". `flipped`: the items whose answer
// changed, right or wrong.
struct AccuracyChange {
  std::string case_id;
  int64_t items = 0;  // paired
  double base_score = 0, head_score = 0;
  int64_t lost = 0, gained = 0;  // right in base only / in head only
  double p_value = 1;
  std::vector<std::string> flipped;
  std::string verdict;
};

// An engine phase as a whole (`harness profile import`, the served load's capture): its step
// time on each side and the engine's calibration — the time-weighted median change of its
// kernels. A machine that ran slower and a stack slower for every kernel alike look the same in
// the engine's own trace: this says how much the whole moved, the kernels are judged against it.
struct EngineShift {
  std::string case_id, phase;
  double base_step_ns = 0, head_step_ns = 0;  // median step time; 0 without steps
  double step_change = std::numeric_limits<double>::quiet_NaN();
  double calibration_change = std::numeric_limits<double>::quiet_NaN();  // NaN: not calibrated
};

struct DiffSummary {
  int compared = 0;  // cases present on both sides
  int regressions = 0, fixed = 0, changed = 0, added = 0, removed = 0;
  int metric_drift = 0;
  int accuracy_regressions = 0, accuracy_improvements = 0;
  int perf_regressions = 0, perf_improvements = 0, perf_unchanged = 0, perf_not_enough_samples = 0;
  int perf_unreliable = 0;
  int perf_appeared = 0, perf_vanished = 0;  // engine kernels on one side only
  int perf_rows = 0;                         // steady rows in the geometric mean
  // Of head/base medians over those rows; NaN when there are none.
  double geomean_ratio = std::numeric_limits<double>::quiet_NaN();
};

struct DiffReport {
  RunInfo base, head;
  DiffOptions options;
  std::vector<StatusChange> statuses;  // head order, then base-only cases in base order
  std::vector<MetricDrift> drifts;
  std::vector<PerfChange> perf;          // every steady row present on both sides
  std::vector<AccuracyChange> accuracy;  // every eval case with items on both sides
  std::vector<EngineShift> engine;       // every engine phase on both sides
  DiffSummary summary;

  // A status regression, a metric drift, an accuracy or a performance regression.
  bool has_regression() const;
  nlohmann::json to_json() const;
  // The terminal report; `color` wraps verdicts in ANSI colors.
  std::string to_text(bool color) const;
};

DiffReport diff_runs(const store::RunData& base, const store::RunData& head,
                     const DiffOptions& options);

// Several runs a side (oldest first; e.g. the last 3 nights of each stack, or `harness ab`'s
// rounds): statuses, metric drift and accuracy exactly as diff_runs of the newest run of each;
// timings with the run as the unit of replication: each run's calibrated median, log-scaled,
// Welch's t test between the sides (`paired`: the one-sample t test of round-by-round
// differences, base[i] against head[i]), and a change must exceed the larger of the threshold
// and the noise: the base side's own run-to-run spread (paired: the spread of the rounds'
// ratios). Needs 2 runs a side for a timing verdict.
DiffReport diff_repeated_runs(const std::vector<store::RunData>& base,
                              const std::vector<store::RunData>& head, const DiffOptions& options,
                              bool paired);

// The pieces diff_runs and diff_repeated_runs share.
// A result's own perf_threshold from its details, if it has one.
std::optional<double> threshold_override(const store::ResultData& r);
DiffSummary summarize(const DiffReport& r);

// The error-like value of an accuracy metric (larger = worse); nullopt for a metric diff does
// not judge. Matches the full name or the part after a '.', so "logits.max_abs_err" is
// max_abs_err. cosine, ratio_rel_lt_* and a speculator's acceptance_rate give 1 - value; the
// serving checks' kl_mean, kl_max and max_logprob_diff are errors as they are.
std::optional<double> metric_error(const std::string& name, double value);

RunInfo run_info(const store::RunData& run);

// The statuses that count as failing, and as good (a good -> failing flip is a regression):
// base/status.h's one rule, shared by diff, history, the terminal summary and the dashboard.
using h0::is_failing;
using h0::is_good;

// 1234567 -> "1.235 ms"; for timings in reports.
std::string format_ns(double ns);

// Whether a profile row's phase is a serving engine's (steady/engine, steady/engine-prefill,
// steady/engine-decode: io/trace_profile.h).
bool is_engine_phase(const std::string& phase);
// Each engine phase's time in `rows` (a result's profile rows): its steps' total (the "(step)"
// row), or its kernels' total where the trace marked no steps — what a kernel's share is of.
std::map<std::string, double> engine_phase_ns(const std::vector<store::ProfileData>& rows);
// The engine kernels of two results (diff/engine_kernels.cc): each kernel on both sides judged
// relative to the engine's own calibration (the time-weighted median of the kernels' head/base
// ratios), Mann-Whitney over its time per step, beyond `threshold`; the kernels on one side only
// as "appeared" / "vanished" with their share of the step.
void diff_engine_kernels(const store::ResultData& base, const store::ResultData& head,
                         const DiffOptions& options, double threshold, std::vector<PerfChange>* out,
                         std::vector<EngineShift>* shifts);

// A profile row's median: of its raw samples when it has them, else the stored median.
double row_median(const store::ProfileData& p);
// The median of a result's calibration row for a steady `phase` (steady -> calibration, keeping
// any [shape=..] suffix: the host loop timed next to the kernel), or 0 if it has none with at
// least `min_samples` samples.
double calibration_median(const store::ResultData& r, const std::string& phase,
                          size_t min_samples = 1);

}  // namespace h0::diff
