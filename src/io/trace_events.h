// A streaming reader of Chrome trace-event JSON, the format the PyTorch profiler's
// export_chrome_trace writes (vLLM's and SGLang's torch profiler, and the trace view vendor tools
// such as Ascend's msprof export): {"traceEvents": [event, ...], ...} or the bare array form, whose
// closing bracket the format lets a writer omit. Plain or gzipped (zlib tells them apart). The file
// is parsed as a stream of SAX events: memory stays bounded by the largest event, not the file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace h0::io {

// The fields of one trace event the profile reads; the rest (args but their "name") is skipped.
struct TraceEvent {
  std::string ph;         // "X" complete, "B"/"E" begin/end, "M" metadata, "i" instant, ...
  std::string name, cat;  // the kernel or op; its category ("kernel", "cpu_op", ...)
  std::string pid, tid;   // as written (integers or strings), as text
  double ts = 0;          // start, microseconds
  double dur = -1;        // "X" only; -1 when absent
  std::string args_name;  // args.name: a metadata event's value (process_name, thread_name)
};

struct TraceReadStats {
  int64_t events = 0;         // trace events handed to the callback
  int64_t bytes = 0;          // uncompressed JSON bytes read
  bool unterminated = false;  // the array form without its closing bracket (accepted)
  // The top-level object's string and number fields (vLLM writes vllm_version, the profiler
  // schemaVersion, trace_id): at most 64, values cut at 256 bytes.
  std::map<std::string, std::string> metadata;
};

// Calls `on_event` for each event in file order. Throws InputError naming the file and the byte
// of the first malformed JSON, or a top level that is neither of the trace forms. Event names and
// categories longer than kMaxNameBytes are cut there.
TraceReadStats read_trace_events(const std::string& path,
                                 const std::function<void(const TraceEvent&)>& on_event);

inline constexpr size_t kMaxNameBytes = 4096;

}  // namespace h0::io
