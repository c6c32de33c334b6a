// An engine's kernel profile from its Chrome trace (io/trace_events.h): per kernel name and per
// phase, its calls, total time, the distribution of one call and its time in each engine step, as
// the store's profile rows, so `harness diff` and `history` compare engine kernels across stack
// versions as they compare the harness's own ops.
//
// Which events are kernels: the device's when the trace has any (cat kernel, gpu_memcpy,
// gpu_memset, or any complete event of a process whose name says it is a device: "GPU", "NPU",
// "Ascend Hardware", "Device", "stream"); otherwise the host's operators (cat cpu_op, as the
// PyTorch profiler writes them for a CPU engine) at their self time — a call's duration less its
// nested calls' on the same thread — so a matmul inside a linear counts once. Complete events
// ("X") and begin/end pairs ("B"/"E") both count.
//
// Steps: the annotations (cat user_annotation or gpu_user_annotation, or any host event) whose
// name matches the step pattern mark the engine's steps. A step's phase: vLLM's
// execute_context_N(..)_generation_M(..) is prefill (N > 0, M = 0), decode (N = 0, M > 0) or
// mixed (both); another name saying "prefill" or "decode" puts its kernels in that phase. Each
// kernel call belongs to the last step that began at or before it. With steps, a row's samples are
// its time in each step of its phase; without, they are its calls' durations (a bounded uniform
// sample of them past kMaxSamples).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "store/run_data.h"

namespace h0::io {

struct TraceProfileOptions {
  // ECMAScript regex over annotation names: which mark one engine step. The default knows the
  // PyTorch profiler's ProfilerStep#N, vLLM's step annotation (execute_context_N(..)_generation_M
  // (..): its worker's, one a scheduler step) and names with prefill or decode in them.
  std::string step_pattern =
      "^(ProfilerStep#\\d+|execute_context_\\d+\\(.*_generation_\\d+\\(.*|.*(prefill|decode).*)$";
};

inline constexpr size_t kMaxSamples = 4096;

struct TraceProfile {
  std::string stream;  // "device" or "host": which events were read as kernels
  int64_t events = 0, bytes = 0, kernel_calls = 0;
  int64_t steps = 0, prefill_steps = 0, decode_steps = 0, mixed_steps = 0;
  // Rows, phase "steady/engine" (no steps, or steps of no known kind), "steady/engine-prefill",
  // "steady/engine-decode", "steady/engine-mixed"; the name "(step)" holds each phase's step
  // durations.
  std::vector<store::ProfileData> rows;
  std::vector<std::string> notes;  // what the reader had to guess (an unterminated array, ...)
  std::map<std::string, std::string> metadata;  // the trace's top-level fields (vllm_version)
};

// Reads `path` twice (steps, then kernels). Throws InputError for a malformed trace, a bad step
// pattern, or a trace with no kernel events at all.
TraceProfile profile_trace(const std::string& path, const TraceProfileOptions& options);

// One kernel's name whatever its launch: template arguments and parameter lists dropped
// ("void gemm<float, 128>(float*, int)" -> "gemm"), a leading return type dropped, hexadecimal
// addresses and numbers of 4 or more digits written '#'.
std::string normalize_kernel_name(std::string_view name);

}  // namespace h0::io
