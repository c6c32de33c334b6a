// harness diff --db F --base SELECTOR --head SELECTOR [--runs N] [--json] [--threshold T]
//              [--alpha A] [--metric-factor K] [--no-timing-exit]
// Compares two runs of the results store: status flips, accuracy-metric drift, steady-state
// timing changes (Mann-Whitney significant and beyond the threshold). With --runs N each side is
// its selected run and the N - 1 complete runs of the same suite and platform before it (the
// last N nights): timings are then judged run by run (diff_repeated_runs: Welch's t test of the
// calibrated run medians, beyond the base side's own run-to-run noise). Exit 1 if anything
// regressed, 0 otherwise; a bad selector or store is exit 2.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "diff/diff.h"
#include "store/sqlite_store.h"

namespace h0::cli {
namespace {

struct DiffCommandOptions {
  std::string db = "reports/results.db";
  std::string base, head;
  bool json = false;
  bool timing_exit = true;  // --no-timing-exit: timing changes are listed but do not fail
  int runs = 1;             // runs a side
  diff::DiffOptions diff;
};

// The store at `path`; never creates one (a typo would otherwise diff an empty new store).
std::unique_ptr<store::SqliteStore> open_existing_store(const std::string& path) {
  require_store_file(path);
  return store::SqliteStore::open(path);
}

store::RunData load(const store::SqliteStore& db, const std::string& flag,
                    const std::string& selector) {
  const int64_t id = db.resolve(selector);
  auto run = db.load_run(id);
  if (!run)
    throw InputError(flag + " " + selector,
                     "run " + std::to_string(id) + " is not in " + db.path());
  if (run->status != "pass" && run->status != "fail") {
    std::fprintf(
        stderr,
        "harness: warning: run %lld is %s: the cases it did not reach show as new or removed\n",
        static_cast<long long>(id), run->status.c_str());
  }
  return std::move(*run);
}

// The selected run and the runs - 1 complete runs of its suite and platform before it, oldest
// first.
std::vector<store::RunData> load_side(const store::SqliteStore& db, const std::string& flag,
                                      const std::string& selector, int runs) {
  std::vector<store::RunData> out = {load(db, flag, selector)};
  const int64_t last_id = out.front().id;  // copies: `out` grows below
  const std::string suite = out.front().suite, platform = out.front().platform;
  for (const auto& r : db.list_runs()) {  // newest first
    if (int(out.size()) >= runs) break;
    if (r.id >= last_id || r.suite != suite || r.platform != platform) continue;
    if (r.status != "pass" && r.status != "fail") continue;
    if (auto full = db.load_run(r.id)) out.push_back(std::move(*full));
  }
  if (int(out.size()) < runs) {
    std::fprintf(
        stderr,
        "harness: warning: %s %s: only %zu complete runs of suite %s on %s (asked for %d)\n",
        flag.c_str(), selector.c_str(), out.size(), suite.c_str(), platform.c_str(), runs);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

int report_and_exit(const diff::DiffReport& report, const DiffCommandOptions& opt) {
  if (opt.json) {
    std::printf("%s\n", report.to_json().dump(2).c_str());
  } else {
    std::fputs(report.to_text(use_color()).c_str(), stdout);
  }
  const diff::DiffSummary& s = report.summary;
  const bool failing = opt.timing_exit
                           ? report.has_regression()
                           : s.regressions > 0 || s.metric_drift > 0 || s.accuracy_regressions > 0;
  return failing ? kExitMismatch : kExitOk;
}

int run_diff(const DiffCommandOptions& opt) {
  if (!(opt.diff.perf_threshold >= 0)) throw InputError("--threshold", "expected a number >= 0");
  if (!(opt.diff.alpha > 0 && opt.diff.alpha <= 1))
    throw InputError("--alpha", "expected a number in (0, 1]");
  if (!(opt.diff.metric_factor >= 1)) throw InputError("--metric-factor", "expected a number >= 1");
  if (opt.runs < 1) throw InputError("--runs", "expected a number of runs >= 1");
  if (opt.runs > 1) {
    const auto db = open_existing_store(opt.db);
    const auto base = load_side(*db, "--base", opt.base, opt.runs);
    const auto head = load_side(*db, "--head", opt.head, opt.runs);
    for (const auto& h : head) {
      for (const auto& b : base) {
        if (h.id == b.id)
          throw InputError(
              "--runs " + std::to_string(opt.runs),
              "run " + std::to_string(h.id) + " is on both sides: choose runs that do not overlap");
      }
    }
    return report_and_exit(diff::diff_repeated_runs(base, head, opt.diff, false), opt);
  }
  // The two runs load at once, each through its own connection (a 100k-case run takes ~0.5 s).
  const auto db = open_existing_store(opt.db);
  const auto db2 = open_existing_store(opt.db);
  store::RunData base;
  std::exception_ptr base_error;
  std::thread base_loader([&] {
    try {
      base = load(*db2, "--base", opt.base);
    } catch (...) {
      base_error = std::current_exception();
    }
  });
  store::RunData head;
  try {
    head = load(*db, "--head", opt.head);
  } catch (...) {
    base_loader.join();
    throw;
  }
  base_loader.join();
  if (base_error) std::rethrow_exception(base_error);
  return report_and_exit(diff::diff_runs(base, head, opt.diff), opt);
}

}  // namespace

void register_diff(CLI::App& app, Run* run) {
  auto opt = std::make_shared<DiffCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "diff", "Compare two runs: status flips, metric drift, significant timing changes");
  sub->add_option("--db", opt->db, "Results store")->capture_default_str();
  sub->add_option("--base", opt->base,
                  "The reference run: an id, latest, latest~N, label:key=value, stack:PREFIX, "
                  "platform:NAME")
      ->required();
  sub->add_option("--head", opt->head, "The run under test (same selectors)")->required();
  sub->add_option("--runs", opt->runs,
                  "Runs a side: each selected run and the N - 1 complete runs of its suite and "
                  "platform before it; timings are then judged run by run (Welch's t test of the "
                  "calibrated run medians, beyond the base side's own noise)")
      ->capture_default_str();
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->add_flag("!--no-timing-exit", opt->timing_exit,
                "List timing changes but exit 1 only for status flips, metric drift and accuracy "
                "drops (the nightly job judges timings by change points: harness history)");
  sub->add_option("--threshold", opt->diff.perf_threshold,
                  "Relative median change a significant timing change must exceed to count "
                  "(a check's details perf_threshold overrides it)")
      ->capture_default_str();
  sub->add_option("--alpha", opt->diff.alpha, "Significance level of the Mann-Whitney test")
      ->capture_default_str();
  sub->add_option("--metric-factor", opt->diff.metric_factor,
                  "An error metric regresses when it grows by more than this factor")
      ->capture_default_str();
  sub->callback([run, opt] { *run = [opt] { return run_diff(*opt); }; });
}

}  // namespace h0::cli
