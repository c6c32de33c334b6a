// The serving engine's own profile around a workload (the platform's `service: {profiler: ...}`,
// suite/platform.h EngineProfiler): its profiler started before the work and stopped after it,
// the trace it wrote found in its directory, and its kernels read (io/trace_profile.h) into the
// check's profile rows, stored with the run's stack so `harness diff` compares them.
#pragma once

#include <filesystem>
#include <string>

#include "checks/check.h"
#include "checks/e2e_request.h"

namespace h0::checks {

class EngineProfileCapture {
 public:
  // POSTs the profiler's start endpoint when the service has one (else does nothing).
  explicit EngineProfileCapture(const ServiceHandle& h);
  bool active() const { return active_; }
  // POSTs the stop endpoint, waits for the trace the engine wrote since the start (a name holding
  // "rank0" first, else the largest), and reads its kernels into `out->profile`, with what was
  // read — or why nothing could be — in `out->details["engine_profile"]`. A profile that could
  // not be captured never fails the check: the load's numbers stand.
  void finish(const ServiceHandle& h, CheckResult* out);

 private:
  bool active_ = false;
  std::string error_;
  std::filesystem::file_time_type started_;
};

}  // namespace h0::checks
