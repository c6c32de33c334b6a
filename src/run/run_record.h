// How a run of checks becomes a store record: the stack fingerprint (what the backend reports
// plus the harness's own version, commit and compiler, plus the user's labels), the run's
// identity, and each case's result.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "run/runner.h"
#include "store/sqlite_store.h"

namespace h0::run {

// {"backend": {...stack_info...}, "harness": {version, git_sha, compiler, build_type},
//  "labels": {...}} — its sha256 is the stack fingerprint, so a new driver, a new op library,
// a new harness or a new label makes a new stack — but not `harness ab`'s labels ab (the
// comparison's tag) and ab_round, which name a run, not a stack (ab_side stays: base and head).
nlohmann::json stack_versions(const nlohmann::json& stack_info,
                              std::map<std::string, std::string> labels);

store::RunStart run_start(const RunReport& report, const suite::Platform& platform,
                          const std::map<std::string, std::string>& labels,
                          const std::string& mesh);

store::ResultData result_data(const CaseOutcome& outcome);

}  // namespace h0::run
