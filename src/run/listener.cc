#include "run/listener.h"

#include "base/status.h"
#include "report/json_writer.h"
#include "report/junit_writer.h"
#include "run/run_record.h"

namespace h0::run {

RunRecorder::RunRecorder(std::vector<RunListener*> listeners) : listeners_(std::move(listeners)) {}

void RunRecorder::start(const store::RunStart& start, size_t total_cases,
                        const std::string& started_at) {
  run_ = store::run_record_of(start);
  if (!started_at.empty()) run_.started_at = started_at;
  total_ = total_cases;
  started_ = true;
  for (RunListener* l : listeners_) l->run_started(run_, total_);
}

void RunRecorder::add(const CaseOutcome& outcome) {
  run_.results.push_back(result_data(outcome));
  for (RunListener* l : listeners_) l->case_finished(run_, run_.results.back(), total_);
}

void RunRecorder::finish(bool verdict_failed) {
  bool failed = verdict_failed;
  for (const store::ResultData& r : run_.results) failed = failed || is_failing(r.status);
  run_.status = failed ? "fail" : "pass";
  run_.finished_at = store::utc_now();
  for (RunListener* l : listeners_) l->run_finished(run_);
}

RunReport run_suite_recorded(const suite::Suite& suite, const suite::Platform& platform,
                             const RunOptions& options,
                             const std::map<std::string, std::string>& labels,
                             const std::string& mesh, RunRecorder* recorder) {
  auto on_start = [&](const RunReport& report, size_t total) {
    recorder->start(run_start(report, platform, labels, mesh), total);
  };
  auto on_case = [&](size_t, size_t, const CaseOutcome& c) { recorder->add(c); };
  RunReport report = run_suite(suite, platform, options, on_case, on_start);
  if (recorder->started()) recorder->finish();
  return report;
}

StoreListener::StoreListener(std::string path) : path_(std::move(path)) {}

void StoreListener::run_started(store::RunData& run, size_t) {
  db_ = store::SqliteStore::open(path_);
  for (const auto& r : db_->interrupted_runs()) {
    std::fprintf(
        stderr,
        "warning: %s: run %lld (%s on %s, started %s) was interrupted; it is marked incomplete\n",
        path_.c_str(), static_cast<long long>(r.id), r.suite.c_str(), r.platform.c_str(),
        r.started_at.c_str());
  }
  run_id_ = db_->begin_run(&run);
}

void StoreListener::case_finished(const store::RunData&, const store::ResultData& result, size_t) {
  db_->add_result(run_id_, result);
}

void StoreListener::run_finished(const store::RunData& run) { db_->finish_run(run); }

TerminalListener::TerminalListener(std::FILE* out, bool quiet, bool color)
    : out_(out), quiet_(quiet), color_(color), progress_(out) {}

void TerminalListener::case_finished(const store::RunData& run, const store::ResultData& result,
                                     size_t total_cases) {
  const size_t done = run.results.size();
  if (!quiet_ || is_failing(result.status))
    progress_.print(report::case_line(result, done, total_cases, color_));
  if (done < total_cases) progress_.update(done + 1, total_cases, "");
}

void TerminalListener::run_finished(const store::RunData& run) {
  progress_.clear();
  std::fprintf(out_, "%s", report::summary_line(run, color_).c_str());
}

RunSinks::RunSinks(const std::string& store_path, const std::string& json_path,
                   const std::string& junit_path) {
  if (!store_path.empty()) store_.emplace(store_path);
  if (!json_path.empty()) json_.emplace(json_path, &report::write_json);
  if (!junit_path.empty()) junit_.emplace(junit_path, &report::write_junit);
}

void RunSinks::add_terminal(std::FILE* out, bool quiet, bool color) {
  terminal_.emplace(out, quiet, color);
}

std::vector<RunListener*> RunSinks::listeners() {
  std::vector<RunListener*> out;
  if (store_) out.push_back(&*store_);
  if (json_) out.push_back(&*json_);
  if (junit_) out.push_back(&*junit_);
  if (terminal_) out.push_back(&*terminal_);
  return out;
}

}  // namespace h0::run
