// Running a suite on a platform: expand and filter the cases, prepare them all (a malformed
// suite is an input error before anything runs), then run each one, in a worker process by
// default, so a crash or a hang is that case's result and the run goes on.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checks/check.h"
#include "suite/platform.h"
#include "suite/suite.h"

namespace h0::mesh {
class Communicator;
}

namespace h0::run {

struct RunOptions {
  std::string filter;    // gtest-style: "pos1:pos2-neg1:neg2"; empty = everything
  bool isolate = true;   // false: run in this process (a crash ends the run)
  double timeout_s = 0;  // per case; 0 = the check's `timeout`, else the platform's
  std::string dump_dir;  // write every case's description and inputs here (--dump-cases)
  bool run = true;       // false with dump_dir: only dump
  mesh::Communicator* world = nullptr;  // the mesh of a multi-rank run (every rank runs the suite)
  std::string service_log_dir;  // where started services' logs go; empty: a fresh temporary folder
  // The results store checks may read references from (checks::RunContext::store_path); never
  // written by the runner, and read only when it exists.
  std::string store_path;
};

struct CaseOutcome {
  std::string id, check, kind;
  std::vector<std::string> tags;
  checks::CheckResult result;
};

struct RunReport {
  std::string suite_name, suite_file, suite_sha256;
  std::string platform_name, platform_file, platform_sha256;
  nlohmann::json stack = nlohmann::json::object();  // the backend's stack_info
  std::vector<CaseOutcome> cases;
  double duration_s = 0;

  bool failed() const;  // any fail, error, crash or timeout
};

using CaseListener = std::function<void(size_t done, size_t total, const CaseOutcome& outcome)>;
// Called once the backend's stack is known, before the first case runs (the store opens the
// run record here).
using StartListener = std::function<void(const RunReport& report, size_t total_cases)>;

// The case ids of a suite after filtering, in order. Throws InputError for a malformed suite.
std::vector<std::string> list_cases(const suite::Suite& suite, const std::string& filter);

// Throws InputError for a malformed suite or an unusable platform (a plugin that does not
// load). Everything the platform does wrong is in the report.
RunReport run_suite(const suite::Suite& suite, const suite::Platform& platform,
                    const RunOptions& options, const CaseListener& listener,
                    const StartListener& on_start = {});

}  // namespace h0::run
