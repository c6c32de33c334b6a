// Who hears of a run as it happens — the store, the terminal, the JSON and JUnit writers — as
// google/benchmark's BenchmarkReporter: one interface, and a command composes the listeners it
// wants (`harness run`: store, terminal, JSON, JUnit; `harness day0`: store, JSON, JUnit, with
// its own checklist on the terminal). A RunRecorder builds the run's one record (store::RunData)
// from the runner's outcomes and hands it to each listener in turn; nobody reads a run back from
// the store to write it somewhere else.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "report/terminal.h"
#include "run/runner.h"
#include "store/run_data.h"
#include "store/sqlite_store.h"

namespace h0::run {

class RunListener {
 public:
  virtual ~RunListener() = default;
  // Before the first result: `run` is the header, without results. A listener that gives the
  // run its identity (the store: id, uuid) writes it into `run`; listeners hear in the order
  // given to the recorder, so the store comes first.
  virtual void run_started(store::RunData& run, size_t total_cases) {}
  // `result` has just been appended to run.results.
  virtual void case_finished(const store::RunData& run, const store::ResultData& result,
                             size_t total_cases) {}
  // After the last result: status ("pass" or "fail") and finished_at are set.
  virtual void run_finished(const store::RunData& run) {}
};

// The one record of a run, built as the run goes and handed to every listener.
class RunRecorder {
 public:
  explicit RunRecorder(std::vector<RunListener*> listeners);

  // `started_at` empty: now.
  void start(const store::RunStart& start, size_t total_cases, const std::string& started_at = "");
  void add(const CaseOutcome& outcome);
  // Pass unless a case is failing (base/status.h) or `verdict_failed` (a day0 run whose
  // readiness is not established though no case failed: stages blocked or inconclusive); finished
  // now.
  void finish(bool verdict_failed = false);

  bool started() const { return started_; }
  const store::RunData& run() const { return run_; }

 private:
  std::vector<RunListener*> listeners_;
  store::RunData run_;
  size_t total_ = 0;
  bool started_ = false;
};

// run_suite with its outcomes recorded: the record starts once the backend's stack is known (and
// the worker process exists), each case is added as it finishes, and the run is finished after
// the last. `labels` and `mesh` are the stack's labels and the mesh's name (run_start).
RunReport run_suite_recorded(const suite::Suite& suite, const suite::Platform& platform,
                             const RunOptions& options,
                             const std::map<std::string, std::string>& labels,
                             const std::string& mesh, RunRecorder* recorder);

// The store: opened when the run starts (so a worker process forked before it never holds the
// file), the run begun, each result written in its own transaction, the run finished. Warns on
// stderr of runs an earlier process left `running`.
class StoreListener : public RunListener {
 public:
  explicit StoreListener(std::string path);
  void run_started(store::RunData& run, size_t total_cases) override;
  void case_finished(const store::RunData& run, const store::ResultData& result,
                     size_t total_cases) override;
  void run_finished(const store::RunData& run) override;

  const std::string& path() const { return path_; }
  int64_t run_id() const { return run_id_; }
  // The store, once the run has started (null before).
  store::SqliteStore* db() const { return db_.get(); }

 private:
  std::string path_;
  std::unique_ptr<store::SqliteStore> db_;
  int64_t run_id_ = 0;
};

// The terminal checklist (report/terminal.h): a line per case (with --quiet, the failing ones
// only), the live status line while the next runs, and the summary after the last.
class TerminalListener : public RunListener {
 public:
  TerminalListener(std::FILE* out, bool quiet, bool color);
  void case_finished(const store::RunData& run, const store::ResultData& result,
                     size_t total_cases) override;
  void run_finished(const store::RunData& run) override;

 private:
  std::FILE* out_;
  bool quiet_, color_;
  report::ProgressLine progress_;
};

// A file of the whole run, written when it finishes by `write` (report::write_json,
// report::write_junit).
class FileListener : public RunListener {
 public:
  using Writer = void (*)(const std::string& path, const store::RunData& run);
  FileListener(std::string path, Writer write) : path_(std::move(path)), write_(write) {}
  void run_finished(const store::RunData& run) override { write_(path_, run); }

 private:
  std::string path_;
  Writer write_;
};

// The listeners a command composes, in the order they hear a run: the store first (it gives the
// run its id and uuid, which the others then write), the JSON and JUnit files, the terminal last.
// An empty path leaves that one out.
class RunSinks {
 public:
  RunSinks(const std::string& store_path, const std::string& json_path,
           const std::string& junit_path);
  // The terminal checklist on `out`, after the others.
  void add_terminal(std::FILE* out, bool quiet, bool color);
  std::vector<RunListener*> listeners();
  // The store's listener; null without a store.
  StoreListener* store() { return store_ ? &*store_ : nullptr; }

 private:
  std::optional<StoreListener> store_;
  std::optional<FileListener> json_, junit_;
  std::optional<TerminalListener> terminal_;
};

}  // namespace h0::run
