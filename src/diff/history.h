// History of many runs (`harness history`): per stack and platform, how many runs, the pass
// rate of the selected checks, and for each timed case whether its steady-state median stepped
// to a new level in its last N runs, and at which run; and per platform, across stack versions,
// the change points of each timed case's medians (E-Divisive, diff/change_points.h), each
// marked when the newest run is what made it detectable (reported once, that night).
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/run_data.h"

namespace h0::diff {

// Where a timed case's median left the noise band of the runs before it and stayed out.
struct Step {
  int64_t run_id = 0;           // the first run at the new level
  double before_median_ns = 0;  // median of the runs before it (in the window)
  double after_median_ns = 0;   // median of it and the runs after it
  double change = 0;            // after / before - 1
};

// One steady profile row of one case, followed over the runs of a stack and platform.
struct TimedCase {
  std::string case_id, phase, name;
  int runs = 0;                 // runs in the window that timed it
  double latest_median_ns = 0;  // in the newest of them
  std::optional<Step> step;
};

struct StackHistory {
  std::string stack;  // fingerprint, first 12 characters
  std::string backend, platform;
  int runs = 0;
  int failed_runs = 0;  // runs whose own status is fail (a day0 run not established among them)
  int64_t first_run_id = 0, last_run_id = 0;
  std::string first_started_at, last_started_at;
  // Results of the matching cases over all runs: the good ones (pass, xfail, xpass) count as
  // passed, skip is left out.
  int results = 0, passed = 0;
  double pass_rate = std::numeric_limits<double>::quiet_NaN();  // passed / results
  std::vector<TimedCase> timed;                                 // first-seen order
};

// A change point of one timed case's steady medians over the runs of one platform (every stack
// version, in run order).
struct ChangeReport {
  std::string platform, case_id, phase, name;
  int64_t run_id = 0;                     // the first run at the new level
  int64_t previous_run_id = 0;            // the last run before it
  std::string stack_before, stack_after;  // those two runs' fingerprints, 12 characters
  int runs_before = 0, runs_after = 0;    // runs in the levels either side
  double before_median_ns = 0, after_median_ns = 0;
  double change = 0;   // after / before - 1 of the levels' means
  double p_value = 1;  // Mann-Whitney of the two levels
  // The medians were scaled by each run's host-loop calibration (the levels are then in the
  // first run's machine time); false when a run has no calibration row.
  bool normalized = false;
  // The host loop's own change between the levels; a change smaller than it is reported as an
  // unreliable machine and fails no night.
  double calibration_change = std::numeric_limits<double>::quiet_NaN();
  bool unreliable = false;
  bool newest = false;  // the series without its newest run shows no change here
};

struct HistoryReport {
  std::string check_glob;
  int last_n = 0;
  std::vector<StackHistory> stacks;   // in the order their first run appears
  std::vector<ChangeReport> changes;  // by platform, then case, then run
  // Slower changes that the newest run made detectable: what a nightly job fails on.
  int new_slowdowns() const;

  nlohmann::json to_json() const;
  std::string to_text(bool color) const;
};

// The steady medians of one timed case on one platform over its runs (every stack, run order),
// with the host loop's median timed next to each (0 where there is none).
struct TimingSeries {
  std::string case_id, phase, name;
  std::vector<int64_t> run_ids;
  std::vector<std::string> stacks;  // fingerprints, 12 characters
  std::vector<double> medians;
  std::vector<double> calibrations;
};
// The change points of one series within its last `last_n` points (all when <= 0), calibrated
// when every point has a calibration (history() and the dashboard both use this).
std::vector<ChangeReport> change_points_of(const std::string& platform, const TimingSeries& s,
                                           int last_n);

// `runs_oldest_first` are complete runs with their results. Only cases whose case id or check id
// matches `check_glob` count. Steps and change points are looked for in each timed case's last
// `last_n` runs (all of them when last_n <= 0).
HistoryReport history(const std::vector<store::RunData>& runs_oldest_first,
                      const std::string& check_glob, int last_n);

// The index of the first value outside the noise band of the values before it (median ± 3 MAD,
// MAD at least 1% of the median), which every later value also lies outside of on the same
// side (or which is the last value). Needs 3 values before it; nullopt when there is no step.
std::optional<size_t> find_step(const std::vector<double>& medians);

}  // namespace h0::diff
