// harness run SUITE [--platform P] [--filter F] [--db F | --no-db] [--label k=v]...
//                   [--json OUT] [--junit OUT] [--no-isolation] [--timeout S] [-q]
//                   [--dump-cases DIR [--no-run]]
// Runs a suite on a platform: one line per case and a summary; every result goes into the
// store as it finishes (one run record, `running` until the end); exit 1 on any failure.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "mesh_run.h"
#include "report/terminal.h"
#include "run/listener.h"
#include "run/runner.h"
#include "suite/platform.h"
#include "suite/suite.h"

namespace h0::cli {
namespace {

struct RunOptions {
  std::string suite, platform, filter, json_out, junit_out, dump_dir, service_logs,
      db = "reports/results.db";
  std::vector<std::string> labels;
  bool no_db = false, no_isolation = false, no_run = false, quiet = false;
  std::string
      mesh_fault;  // JSON options of mesh::make_faulty_communicator (tests of the mesh checks)
  double mesh_timeout_s = 300;
  double timeout_s = 0;
};

int run_run(RunOptions opt) {
  MeshRun mesh_run = open_mesh(opt.mesh_fault, opt.mesh_timeout_s);
  if (!mesh_run.root) {  // the other ranks compute; rank 0 reports
    opt.no_db = true;
    opt.quiet = true;
    opt.json_out.clear();
    opt.junit_out.clear();
  }
  const auto labels = parse_labels(opt.labels);
  checks::register_kinds_with_suite_parser();
  const suite::Suite s = suite::load_suite(opt.suite);
  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));
  // Nothing to run is the input's fault, never "0 cases: PASS".
  if (run::list_cases(s, opt.filter).empty()) {
    if (!opt.filter.empty())
      throw InputError("--filter " + opt.filter, "matches none of the cases of " + opt.suite +
                                                     " (harness list " + opt.suite +
                                                     " shows their ids)");
    throw InputError(opt.suite, "has no cases to run");
  }
  run::RunOptions ro;
  ro.filter = opt.filter;
  ro.isolate = !opt.no_isolation && platform.isolation != "none" &&
               !mesh_run.world;  // MPI does not survive fork
  ro.world = mesh_run.world.get();
  ro.timeout_s = opt.timeout_s;
  ro.dump_dir = opt.dump_dir;
  ro.service_log_dir = opt.service_logs;
  ro.run = !opt.no_run;
  ro.store_path = opt.db;  // an eval check's reference may be a run there (read with --no-db too)
  if (opt.no_run && opt.dump_dir.empty())
    throw InputError("--no-run", "only makes sense with --dump-cases DIR");

  const bool to_terminal = mesh_run.root && !opt.no_run;
  if (opt.no_run) {  // dumping only: nothing is recorded
    opt.no_db = true;
    opt.json_out.clear();
    opt.junit_out.clear();
  }
  run::RunSinks sinks(opt.no_db ? "" : opt.db, opt.json_out, opt.junit_out);
  if (to_terminal) sinks.add_terminal(stdout, opt.quiet, report::color_enabled(1));
  run::RunRecorder recorder(sinks.listeners());
  const run::RunReport report =
      run::run_suite_recorded(s, platform, ro, labels, mesh_run.name, &recorder);
  if (!opt.dump_dir.empty())
    std::fprintf(stderr, "dumped %s cases to %s\n", s.name.c_str(), opt.dump_dir.c_str());
  if (opt.no_run) return kExitOk;
  if (const run::StoreListener* db = sinks.store())
    std::printf("stored as run %lld in %s\n", static_cast<long long>(db->run_id()), opt.db.c_str());
  return report.failed() ? kExitMismatch : kExitOk;
}

}  // namespace

void register_run(CLI::App& app, Run* run) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* sub =
      app.add_subcommand("run", "Run a suite on a platform, store and report every case");
  sub->add_option("suite", opt->suite, "Suite YAML file")->required();
  sub->add_option("--platform", opt->platform,
                  "Platform config (default configs/platforms/cpu.yaml)");
  sub->add_option("--filter", opt->filter, "gtest-style case filter: 'rmsnorm*:rope*-*bf16*'");
  sub->add_option("--db", opt->db, "Results store (SQLite)")->capture_default_str();
  sub->add_flag("--no-db", opt->no_db, "Do not write the results store");
  sub->add_option("--label", opt->labels,
                  "Stack label KEY=VALUE, e.g. stack=cann-8.1.rc2 (repeatable)");
  sub->add_option("--json", opt->json_out, "Write the run as JSON to this file");
  sub->add_option("--junit", opt->junit_out, "Write the run as JUnit XML to this file");
  sub->add_flag("--no-isolation", opt->no_isolation,
                "Run cases in this process (a crash ends the run)");
  sub->add_option("--mesh-timeout", opt->mesh_timeout_s,
                  "Multi-rank runs: seconds a collective may wait for its peers before the run "
                  "stops (default 300)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--mesh-fault", opt->mesh_fault,
                  "Multi-rank runs: inject a communication fault, e.g. "
                  "'{\"op\":\"all_reduce\",\"rank\":1,\"call\":3,\"fault\":\"drop\"}'");
  sub->add_option("--timeout", opt->timeout_s,
                  "Per-case timeout in seconds (default: the check's, else the platform's)");
  sub->add_option("--dump-cases", opt->dump_dir,
                  "Write each case's description and inputs to DIR (for golden/tools)");
  sub->add_option("--service-logs", opt->service_logs,
                  "Where started services write their output (default: a temporary folder)");
  sub->add_flag("--no-run", opt->no_run, "With --dump-cases: dump only, run nothing");
  sub->add_flag("-q,--quiet", opt->quiet, "Print only failing cases and the summary");
  sub->callback([run, opt] { *run = [opt] { return run_run(*opt); }; });
}

}  // namespace h0::cli
