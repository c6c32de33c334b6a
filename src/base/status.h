// The one status vocabulary: what a check's result can be, and the rules every part of the
// harness reads (checks, the runner's exit code, store, diff, history, JUnit, the terminal, the
// dashboard). Names reach the store and never change; new ones may be added.
//
//   status   meaning                                               failing  good
//   pass     compared, within tolerance                            no       yes
//   fail     compared, outside tolerance                           yes      no
//   error    the check could not be carried out                    yes      no
//   skip     nothing was compared (not applicable, unsupported,   no       no
//            inconclusive): never counted as a pass
//   crash    the platform's process died                           yes      no
//   timeout  the platform's process hung                           yes      no
//   xfail    failed, as the suite's `xfail: reason` expects         no       yes
//   xpass    passed though the suite expects it to fail            no       yes
//
// xpass is decided here once, as pytest's non-strict xfail: good news, not a failure (the run
// passes, exit 0), reported so the stale marker gets removed — the terminal names it, JUnit
// writes a passed testcase whose <system-out> says so, diff counts xfail -> xpass as fixed.
// A status name this build does not know (a newer harness wrote it) counts as failing: never a
// silent pass.
#pragma once

#include <string_view>
#include <vector>

namespace h0 {

enum class Status { kPass, kFail, kError, kSkip, kCrash, kTimeout, kXfail, kXpass };

const char* status_name(Status s);
// False for a name that is not one of the above.
bool parse_status(std::string_view name, Status* out);
// Every status, in the order summaries list them (the enum's).
const std::vector<Status>& all_statuses();

bool is_failing(Status s);  // fail, error, crash, timeout: the run fails (exit 1)
bool is_good(Status s);     // pass, xfail, xpass: a regression is good -> failing
// The same for a stored name; an unknown name is failing and not good.
bool is_failing(std::string_view name);
bool is_good(std::string_view name);

// A run's status as the store keeps it: running, pass, fail, incomplete. A run is complete when
// it finished (pass or fail); a running or incomplete run is never reported as complete.
bool is_complete_run(std::string_view run_status);

}  // namespace h0
