// harness report [--db F] [--out DIR] [--since 30d] [--suite GLOB] [--compare-platform NAME]
//                [--chart-js FILE] [--json]
// Writes the static HTML dashboard of the results store (src/report/html_site.h): index.html
// (overview, Day-0 checklist, matrix), one page per run and per check. Opens from disk.
// A missing store or a bad --since is exit 2.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "report/html_site.h"
#include "report/terminal.h"
#include "store/sqlite_store.h"

namespace h0::cli {
namespace {

struct ReportOptions {
  std::string db = "reports/results.db";
  std::string out = "reports/site";
  std::string since;  // "30d", "12h", "2w", "90m"; "" = every run
  std::string suite = "*";
  std::string chart_js;
  std::string compare_platform;
  bool json = false;
};

// The ISO 8601 UTC time `since` ago ("30d" -> 30 days before now), as the store writes times.
std::string cutoff_of(const std::string& since) {
  static const std::regex form(R"((\d{1,6})([mhdw]))");
  std::smatch m;
  if (!std::regex_match(since, m, form)) {
    throw InputError("--since",
                     "expected a duration like 90m, 12h, 30d or 2w, got '" + since + "'");
  }
  const int64_t unit = m[2] == "m" ? 60 : m[2] == "h" ? 3600 : m[2] == "d" ? 86400 : 7 * 86400;
  const std::time_t t = std::time(nullptr) - static_cast<std::time_t>(std::stoll(m[1]) * unit);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", &utc);
  return buf;
}

int run_report(const ReportOptions& opt) {
  report::SiteOptions site;
  if (!opt.since.empty()) site.since = cutoff_of(opt.since);
  site.suite_glob = opt.suite;
  site.compare_platform = opt.compare_platform;
  require_store_file(opt.db);
  const std::string chart_js = report::find_chart_js(opt.chart_js);
  if (!opt.chart_js.empty() && chart_js.empty()) throw InputError(opt.chart_js, "no such file");
  if (chart_js.empty()) {
    std::fprintf(
        stderr,
        "harness: warning: Chart.js not found (apt install libjs-chart.js): pages get no charts\n");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto db = store::SqliteStore::open(opt.db);
  report::ProgressLine progress(stderr);
  const report::SiteModel model = report::gather_site(
      *db, site, [&](size_t done, size_t total) { progress.update(done, total, "loading runs"); });
  const report::SiteStats stats = report::write_site(
      model, opt.out, chart_js,
      [&](size_t done, size_t total) { progress.update(done, total, "writing pages"); });
  progress.clear();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string index = (std::filesystem::path(opt.out) / "index.html").string();
  if (opt.json) {
    const nlohmann::json j = {{"out", opt.out},
                              {"index", index},
                              {"runs", model.runs.size()},
                              {"checks", model.cases.size()},
                              {"pages", stats.pages},
                              {"files", stats.files},
                              {"bytes", stats.bytes},
                              {"seconds", seconds},
                              {"charts", stats.charts}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%zu runs, %zu checks: %d pages (%d files, %s) in %.2f s: %s\n", model.runs.size(),
                model.cases.size(), stats.pages, stats.files, human_bytes(stats.bytes).c_str(),
                seconds, index.c_str());
  }
  return kExitOk;
}

}  // namespace

void register_report(CLI::App& app, Run* run) {
  auto opt = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write the HTML dashboard: overview, matrix, a page per run and per check");
  sub->add_option("--db", opt->db, "Results store")->capture_default_str();
  sub->add_option("--out", opt->out, "Directory of the site (index.html and the pages)")
      ->capture_default_str();
  sub->add_option("--since", opt->since, "Only runs started within this long: 90m, 12h, 30d, 2w");
  sub->add_option("--suite", opt->suite, "Only runs of suites matching this glob")
      ->capture_default_str();
  sub->add_option(
      "--compare-platform", opt->compare_platform,
      "The reference platform: runs on other platforms are also diffed against its latest "
      "run of the same suite (overview column, and the regressions in \"What is wrong\")");
  sub->add_option("--chart-js", opt->chart_js,
                  "Chart.js UMD file to copy (default: the libjs-chart.js package's)");
  sub->add_flag("--json", opt->json, "Print what was written as JSON (pages, bytes, seconds)");
  sub->callback([run, opt] { *run = [opt] { return run_report(*opt); }; });
}

}  // namespace h0::cli
