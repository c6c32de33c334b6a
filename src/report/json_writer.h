// The JSON form of a run, for scripts and other tools. Field names are stable (they only grow):
//   {"run":    {id, uuid, suite, suite_file, suite_sha256, platform, platform_file,
//               platform_sha256, host, mesh, started_at, finished_at, status, labels},
//    "stack":  {fingerprint, backend, versions},
//    "counts": {status: n},
//    "cases":  [{id, check, kind, params, status, duration_s, message, metrics: {name: value},
//                profile: [{phase, name, count, total_ns, min_ns, median_ns, p99_ns, mean_ns,
//                           stddev_ns, bytes, flops}],
//                details}]}
// Raw timing samples are left out to keep files small (the store has them). A non-finite
// metric is the string "nan", "inf" or "-inf"; params, versions and details that are not valid
// JSON appear as their raw text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "store/run_data.h"

namespace h0::report {

nlohmann::json run_json(const store::RunData& run);

// Writes run_json(run) with indent 1 and a final newline (invalid UTF-8 replaced by U+FFFD).
// Throws InputError naming `path` if it cannot be written.
void write_json(const std::string& path, const store::RunData& run);

// Replaces `path` with `text` atomically: a temporary file in the same directory (created with
// any missing parent directories), then rename(2); readers see the old file or the whole new
// one. Throws InputError naming `path` on failure, leaving no temporary file behind.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace h0::report
