#include "base/status.h"

namespace h0 {
namespace {

constexpr const char* kNames[] = {"pass",  "fail",    "error", "skip",
                                  "crash", "timeout", "xfail", "xpass"};

}  // namespace

const char* status_name(Status s) { return kNames[static_cast<int>(s)]; }

bool parse_status(std::string_view name, Status* out) {
  for (const Status s : all_statuses()) {
    if (name == status_name(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

const std::vector<Status>& all_statuses() {
  static const std::vector<Status> kAll = {Status::kPass,  Status::kFail,  Status::kError,
                                           Status::kSkip,  Status::kCrash, Status::kTimeout,
                                           Status::kXfail, Status::kXpass};
  return kAll;
}

bool is_failing(Status s) {
  return s == Status::kFail || s == Status::kError || s == Status::kCrash || s == Status::kTimeout;
}

bool is_good(Status s) { return s == Status::kPass || s == Status::kXfail || s == Status::kXpass; }

bool is_failing(std::string_view name) {
  Status s;
  return !parse_status(name, &s) || is_failing(s);
}

bool is_good(std::string_view name) {
  Status s;
  return parse_status(name, &s) && is_good(s);
}

bool is_complete_run(std::string_view run_status) {
  return run_status == "pass" || run_status == "fail";
}

}  // namespace h0
