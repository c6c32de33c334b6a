// harness history --db F [--check GLOB] [--last N] [--json] [--exit-code]
// Every complete run of the results store, per stack and platform: how many runs, the pass rate
// of the checks matching GLOB, and for each timed case whether (and at which run) its
// steady-state median stepped to a new level within its last N runs; per platform, the change
// points of each timed case across stack versions. --exit-code: exit 1 when the newest run made
// a slowdown detectable (the nightly job's timing verdict).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "diff/history.h"
#include "store/sqlite_store.h"

namespace h0::cli {
namespace {

struct HistoryOptions {
  std::string db = "reports/results.db";
  std::string check = "*";
  int last = 20;
  bool json = false, exit_code = false;
};

int run_history(const HistoryOptions& opt) {
  if (opt.last < 0) throw InputError("--last", "expected a number of runs (0: all)");
  require_store_file(opt.db);
  const auto db = store::SqliteStore::open(opt.db);
  std::vector<store::RunData> runs;
  for (const auto& summary : db->list_runs()) {  // newest first
    if (summary.status != "pass" && summary.status != "fail") continue;
    if (auto run = db->load_run(summary.id)) runs.push_back(std::move(*run));
  }
  std::reverse(runs.begin(), runs.end());
  const diff::HistoryReport report = diff::history(runs, opt.check, opt.last);
  if (opt.json) {
    std::printf("%s\n", report.to_json().dump(2).c_str());
  } else {
    std::fputs(report.to_text(use_color()).c_str(), stdout);
  }
  return opt.exit_code && report.new_slowdowns() > 0 ? kExitMismatch : kExitOk;
}

}  // namespace

void register_history(CLI::App& app, Run* run) {
  auto opt = std::make_shared<HistoryOptions>();
  CLI::App* sub = app.add_subcommand(
      "history", "Runs per stack and platform: pass rate and timing steps over time");
  sub->add_option("--db", opt->db, "Results store")->capture_default_str();
  sub->add_option("--check", opt->check,
                  "Only cases whose case id or check id matches this glob ('*', '?')")
      ->capture_default_str();
  sub->add_option("--last", opt->last, "Look for timing steps in each case's last N runs (0: all)")
      ->capture_default_str();
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->add_flag("--exit-code", opt->exit_code,
                "Exit 1 when a change point that the newest run made detectable is a slowdown");
  sub->callback([run, opt] { *run = [opt] { return run_history(*opt); }; });
}

}  // namespace h0::cli
