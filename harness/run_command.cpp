// harness run SUITE [--platform P] [--filter F] [--json OUT] [--no-isolation] [--timeout S]
//                   [--dump-cases DIR [--no-run]]
// Runs a suite on a platform: one line per case and a summary; exit 1 on any failure.
#include <cstdio>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>

#include "base/error.h"
#include "checks/runner.h"
#include "cli_output.h"
#include "commands.h"
#include "suite/platform.h"
#include "suite/suite.h"

namespace h0::cli {
namespace {

struct RunOptions {
  std::string suite, platform, filter, json_out, dump_dir;
  bool no_isolation = false, no_run = false, quiet = false;
  double timeout_s = 0;
};

// The most telling number of a case for its one line.
std::string key_numbers(const checks::CheckResult& r) {
  std::string out;
  for (const char* name : {"max_abs_err", "cosine", "median_ms"}) {
    for (const auto& [k, v] : r.metrics) {
      if (k == name) out += std::string(out.empty() ? "" : "  ") + (k == "max_abs_err" ? "max_abs " : k == "cosine" ? "cos " : "") +
                            short_number(v) + (k == "median_ms" ? " ms" : "");
    }
  }
  return out;
}

const char* status_color(checks::Status s) {
  switch (s) {
    case checks::Status::kPass: return "32";
    case checks::Status::kSkip: case checks::Status::kXfail: return "33";
    default: return "31";
  }
}

int run_run(const RunOptions& opt) {
  checks::register_kinds_with_suite_parser();
  const suite::Suite s = suite::load_suite(opt.suite);
  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));
  checks::RunOptions ro;
  ro.filter = opt.filter;
  ro.isolate = !opt.no_isolation && platform.isolation != "none";
  ro.timeout_s = opt.timeout_s;
  ro.dump_dir = opt.dump_dir;
  ro.run = !opt.no_run;
  if (opt.no_run && opt.dump_dir.empty()) throw InputError("--no-run", "only makes sense with --dump-cases DIR");
  const bool tty = use_color();
  auto listener = [&](size_t done, size_t total, const checks::CaseOutcome& c) {
    if (opt.quiet && !checks::is_failure(c.result.status)) return;
    std::string status = checks::status_name(c.result.status);
    for (auto& ch : status) ch = static_cast<char>(std::toupper(ch));
    std::printf("[%*zu/%zu] %s %s  %s\n", static_cast<int>(std::to_string(total).size()), done, total,
                colored(status + std::string(7 - std::min<size_t>(7, status.size()), ' '), status_color(c.result.status)).c_str(),
                c.id.c_str(), key_numbers(c.result).c_str());
    if (!c.result.message.empty() && c.result.status != checks::Status::kPass) {
      std::printf("          %s\n", c.result.message.c_str());
    }
    if (tty) std::fflush(stdout);
  };
  const checks::RunReport report = checks::run_suite(s, platform, ro, listener);
  if (!opt.dump_dir.empty()) std::fprintf(stderr, "dumped %s cases to %s\n", s.name.c_str(), opt.dump_dir.c_str());
  if (opt.no_run) return kExitOk;
  if (!opt.json_out.empty()) {
    std::ofstream out(opt.json_out);
    if (!out) throw InputError(opt.json_out, "cannot write");
    out << report.to_json().dump(1) << "\n";
  }
  std::string summary;
  for (const auto& [status, n] : report.counts()) summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + status;
  std::printf("%s on %s (%s): %zu cases: %s in %.1f s: %s\n", s.name.c_str(), platform.name.c_str(),
              report.stack.value("op_library", report.stack.dump()).c_str(), report.cases.size(),
              summary.empty() ? "none" : summary.c_str(), report.duration_s,
              report.failed() ? colored("FAIL", "31").c_str() : colored("PASS", "32").c_str());
  return report.failed() ? kExitMismatch : kExitOk;
}

}  // namespace

void register_run(CLI::App& app, Run* run) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Run a suite on a platform and report every case");
  sub->add_option("suite", opt->suite, "Suite YAML file")->required();
  sub->add_option("--platform", opt->platform, "Platform config (default configs/platforms/cpu.yaml)");
  sub->add_option("--filter", opt->filter, "gtest-style case filter: 'rmsnorm*:rope*-*bf16*'");
  sub->add_option("--json", opt->json_out, "Write every case's result as JSON to this file");
  sub->add_flag("--no-isolation", opt->no_isolation, "Run cases in this process (a crash ends the run)");
  sub->add_option("--timeout", opt->timeout_s, "Per-case timeout in seconds (default: the check's, else the platform's)");
  sub->add_option("--dump-cases", opt->dump_dir, "Write each case's description and inputs to DIR (for golden/tools)");
  sub->add_flag("--no-run", opt->no_run, "With --dump-cases: dump only, run nothing");
  sub->add_flag("-q,--quiet", opt->quiet, "Print only failing cases and the summary");
  sub->callback([run, opt] { *run = [opt] { return run_run(*opt); }; });
}

}  // namespace h0::cli
