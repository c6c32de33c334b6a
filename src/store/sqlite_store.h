// The results store: one SQLite file (WAL, busy_timeout, prepared statements, every write in a
// transaction). Schema (DESIGN.md): schema_version, stacks, runs, results, metrics, profiles.
// A run is opened `running`, gets each result as it finishes (one transaction per result), and
// is closed `pass` or `fail`; a run whose process died stays `running` until the next open
// finds it (same host, pid gone) and marks it `incomplete` — and says so, through
// interrupted_runs(). An incomplete run is never reported as complete.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/run_data.h"

namespace h0::store {

// Everything known at the start of a run (results come later).
struct RunStart {
  std::string suite, suite_file, suite_sha256;
  std::string platform, platform_file, platform_sha256, platform_content;
  std::string backend;
  std::string versions_json;  // the stack fingerprint's content
  std::string host, mesh;
  std::map<std::string, std::string> labels;
};

// A new run's record from its start (no id or uuid yet): the stack fingerprint is the sha256
// of versions_json ("{}" if empty), the host this machine's if empty, started now, `running`.
RunData run_record_of(const RunStart& start);
// Now as ISO 8601 UTC with milliseconds: "2026-11-30T12:00:00.123Z".
std::string utc_now();
// This machine's host name ("" if unknown).
std::string host_name();

class SqliteStore {
 public:
  // Opens (creating and migrating if needed) the store at `path`; creates parent directories.
  // Throws InputError naming the file if it is not a harness store or cannot be opened.
  static std::unique_ptr<SqliteStore> open(const std::string& path);
  ~SqliteStore();

  const std::string& path() const;
  int schema_version() const;
  // Runs found `running` by this open whose process is gone; they are now `incomplete`.
  const std::vector<RunData>& interrupted_runs() const;

  // Records `run` (its header; results come by add_result) as it is, `running`: a uuid and
  // started_at are given to it here when it has none. Sets run->id, and returns it. What the
  // store then holds is this record, field for field, so a writer that has it need not read the
  // run back.
  int64_t begin_run(RunData* run);
  // begin_run of run_record_of(start).
  int64_t begin_run(const RunStart& start);
  // Writes one result (with its metrics and profiles) in one transaction; returns its id.
  int64_t add_result(int64_t run_id, const ResultData& result);
  // status: "pass" or "fail"; finished now.
  void finish_run(int64_t run_id, const std::string& status);
  // The run's status ("pass" or "fail") and finished_at as `run` holds them.
  void finish_run(const RunData& run);

  // Runs, newest first, without their results.
  std::vector<RunData> list_runs() const;
  // A run with all its results, metrics and profiles. nullopt if absent.
  std::optional<RunData> load_run(int64_t run_id) const;
  // The id a selector names: a run id, "latest", "latest~N" (N runs before the latest),
  // "label:key=value" (the latest run with that label), "stack:<fingerprint prefix>",
  // "platform:<name>" (the latest run of that platform). Throws InputError if none matches.
  int64_t resolve(const std::string& selector) const;
  // Whether `text` has the form of a selector resolve() takes (it may still match no run).
  static bool is_selector(const std::string& text);

  // Copies every run of `other` not already here (same uuid) into this store, with its stack,
  // results, metrics and profiles, in one transaction. Returns the number of runs copied;
  // `conflicts` gets one line per run whose uuid exists here with different content.
  int merge_from(const SqliteStore& other, std::vector<std::string>* conflicts);

 private:
  struct Impl;
  explicit SqliteStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace h0::store
