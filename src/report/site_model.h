// What the HTML dashboard shows, gathered from the results store in one pass over the runs
// (oldest first, one run in memory at a time): per run a compact digest of its cases and the
// diff against the previous complete run of the same platform and suite (and, when asked,
// against the reference platform's latest run of that suite); per case its latest result and
// its last failure; the stack-version columns of the matrix. Writers in html_site.h turn it
// into pages; nothing here knows HTML.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "diff/diff.h"
#include "diff/history.h"
#include "store/run_data.h"
#include "store/sqlite_store.h"

namespace h0::report {

struct SiteOptions {
  std::string since;             // ISO 8601 UTC: runs started before it are left out; "" = all
  std::string suite_glob = "*";  // suite names to keep (suite::glob_match)
  // The reference platform (the reference GPU's): every run on another platform is also diffed
  // against the latest complete run of the same suite there; "" = none.
  std::string compare_platform;
};

// One case of a run, as the run page, the matrix and the check trends read it.
struct CaseDigest {
  int case_index = 0;                // into SiteModel::cases
  char status = '?';                 // status_code()
  double key = 0;                    // the case's key metric; NaN if absent
  int tolerance = -1;                // into SiteRun::tolerances; -1 if none
  double median_ns = 0, p99_ns = 0;  // the first steady profile row; NaN if none
  double calibration_ns = 0;         // the host loop's median next to that row; NaN if none
  std::string message;
};

// A Day-0 checklist stage: status "pass", "fail", "skip" or "not run".
struct Day0Stage {
  std::string id, title, status;
  int cases = 0, failed = 0;
  std::string summary;  // `harness day0`'s line for the stage (its key number, or why)
};

struct SiteRun {
  store::RunData run;                 // without results
  int column = 0;                     // into SiteModel::columns
  std::map<std::string, int> counts;  // status -> cases
  int previous = -1;  // index of the previous complete run of the same platform and suite
  // The diff against `previous`; perf keeps only regressions and improvements.
  std::optional<diff::DiffReport> diff;
  // With SiteOptions::compare_platform, on another platform: the latest complete run of the same
  // suite on the reference platform before this one, and the diff against it.
  int reference = -1;
  std::optional<diff::DiffReport> reference_diff;
  std::vector<CaseDigest> cases;
  std::vector<std::string> tolerances;  // distinct tolerance texts of this run
  std::vector<Day0Stage> day0;          // empty unless this is a Day-0 run
  // `harness day0`'s verdict: "established", "service_level", "not_established"; "" if unknown.
  std::string day0_verdict;
  std::string page;  // "runs/run-<id>.html"
  std::string data;  // "data/run-<id>.js"

  // Cases that regressed against `previous`: a status regression, a metric drift, an accuracy
  // or a timing regression (a case counts once).
  int regressions() const;
  // The same against `reference`.
  int reference_regressions() const;
};

// A matrix column: one stack version (fingerprint) on one platform.
struct SiteColumn {
  std::string platform, fingerprint, backend;
  std::string label;          // the run's `stack` label, else the fingerprint's first 12 digits
  std::string first_started;  // the first run's start: columns are in this order
  // Its backend's stack_info says `fault_injector: true` (the faulty plugin): failures expected.
  bool fault_injector = false;
  std::string ab;  // the `harness ab` comparison (label ab) its runs belong to; "" for none
};

// An eval check's result on one stack version: its status and metrics (score, score_lo/hi,
// ref_score, delta, agreement, items_lost/gained, mcnemar_p, ...).
struct AccuracyPoint {
  int run = -1;  // into SiteModel::runs
  std::string status;
  std::map<std::string, double> metrics;
};

// An engine's kernels on one stack version (profile rows of phases steady/engine*, `harness
// profile import` or the served load's capture): per (phase, kernel) its median time per step and
// its share of the phase's step time.
struct EngineKernels {
  int run = -1;  // into SiteModel::runs
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> kernels;
};

struct SiteCase {
  std::string case_id, check_id, kind, suite, params_json;
  std::string layer;       // layer_of(kind)
  std::string key_metric;  // the metric the trends and the matrix show; "" if none
  std::string page;        // "checks/<file_stem(case_id)>.html"
  std::vector<int> runs;   // runs that have it, oldest first
  int latest_run = -1;     // its latest result (raw samples dropped)
  store::ResultData latest;
  int failure_run = -1;  // its last failing result, if any
  store::ResultData last_failure;
  std::map<int, AccuracyPoint> accuracy;  // kind eval: column -> its latest result there
  std::map<int, EngineKernels> engine;    // column -> its latest result's engine kernels
};

// The current timing level of a check on a platform came from a slowdown (the last change point
// of its calibrated history over the last 20 complete runs, diff::change_points_of).
struct SiteChange {
  std::string platform;
  int case_index = 0;
  diff::ChangeReport change;
};

struct SiteModel {
  std::string db_path, generated_at;
  std::string compare_platform;  // SiteOptions::compare_platform
  std::vector<SiteChange> slowdowns;
  std::vector<SiteRun> runs;  // oldest first
  std::vector<SiteColumn> columns;
  std::vector<SiteCase> cases;                      // in order of first appearance
  std::unordered_map<std::string, int> case_index;  // case id -> index into cases
};

// The case ids a diff found regressed: status regressions, metric drift, accuracy and timing
// regressions, each with what flagged it ("status pass -> fail", "timing +12.0% (welch
// p=0.001)"). A timing change of one run a side (Mann-Whitney on one pair) is not one: the nightly
// verdict never fails on it, and two runs of one stack under different load would be "regressed".
std::map<std::string, std::string> regressed_cases(const diff::DiffReport& d);

// Reads the runs `options` select. `progress(done, total)` is called after each run loaded.
SiteModel gather_site(const store::SqliteStore& db, const SiteOptions& options,
                      const std::function<void(size_t, size_t)>& progress = {});

// The matrix groups by layer: op, layer, model, e2e, mesh, plan (other kinds: "other").
std::string layer_of(const std::string& kind);
// One character per status for compact data: pass P, fail F, error E, skip S, crash C,
// timeout T, xfail x, xpass X; anything else '?'.
struct StatusCode {
  const char* status;
  char code;
};
inline constexpr StatusCode kStatusCodes[] = {{"pass", 'P'},  {"fail", 'F'},  {"error", 'E'},
                                              {"skip", 'S'},  {"crash", 'C'}, {"timeout", 'T'},
                                              {"xfail", 'x'}, {"xpass", 'X'}};
char status_code(const std::string& status);
// The reverse: the status a code stands for; "other" for '?' and unknown codes.
const char* status_of_code(char code);
// The statuses that count as failing: diff::is_failing.

}  // namespace h0::report
