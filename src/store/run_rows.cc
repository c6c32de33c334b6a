#include "store/run_rows.h"

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/error.h"
#include "store/sqlite_db.h"

namespace h0::store {
namespace {

using Json = nlohmann::json;

// The columns read_run() reads, in its order; the run's pid last.
#define H0_RUN_SELECT                                                                         \
  "SELECT r.id, r.uuid, r.suite, r.suite_file, r.suite_sha256, r.platform, r.platform_file, " \
  "r.platform_sha256, r.platform_content, r.host, r.mesh, r.started_at, r.finished_at, "      \
  "r.status, r.labels_json, s.id, s.fingerprint, s.backend, s.versions_json, r.pid "          \
  "FROM runs r JOIN stacks s ON s.id = r.stack_id "
constexpr int kPidColumn = 19;
constexpr const char* kSelectRuns = H0_RUN_SELECT "ORDER BY r.started_at DESC, r.id DESC";
constexpr const char* kSelectRun = H0_RUN_SELECT "WHERE r.id = ?1";
#undef H0_RUN_SELECT

// Rows of one run in result-id order. `IN (subquery)` walks the run's ids in sorted order, so
// none of these sorts its output (results_by_run_case is ordered by case id, not id).
constexpr const char* kSelectResults =
    "SELECT id, case_id, check_id, kind, params_json, status, duration_s, message, details_json "
    "FROM results WHERE id IN (SELECT id FROM results WHERE run_id = ?1) ORDER BY id";
constexpr const char* kSelectMetrics =
    "SELECT result_id, name, value FROM metrics "
    "WHERE result_id IN (SELECT id FROM results WHERE run_id = ?1) ORDER BY result_id, seq";
constexpr const char* kSelectProfiles =
    "SELECT result_id, phase, name, count, total_ns, min_ns, median_ns, p99_ns, mean_ns, "
    "stddev_ns, bytes, flops, samples FROM profiles "
    "WHERE result_id IN (SELECT id FROM results WHERE run_id = ?1) ORDER BY result_id, id";
constexpr const char* kSelectEvalItems =
    "SELECT result_id, item_id, answer, correct, ref_answer, ref_correct, evidence_json "
    "FROM eval_items WHERE result_id IN (SELECT id FROM results WHERE run_id = ?1) "
    "ORDER BY result_id, seq";
constexpr const char* kInsertEvalItem =
    "INSERT INTO eval_items (result_id, seq, item_id, answer, correct, ref_answer, ref_correct, "
    "evidence_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
constexpr const char* kCountResults = "SELECT count(*) FROM results WHERE run_id = ?1";

constexpr const char* kInsertStack =
    "INSERT INTO stacks (fingerprint, backend, versions_json) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (fingerprint) DO NOTHING";
constexpr const char* kFindStack = "SELECT id FROM stacks WHERE fingerprint = ?1";
constexpr const char* kInsertRun =
    "INSERT INTO runs (uuid, suite, suite_file, suite_sha256, platform, platform_file, "
    "platform_sha256, platform_content, stack_id, host, mesh, pid, started_at, finished_at, "
    "status, labels_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
    "?15, ?16)";
constexpr const char* kInsertResult =
    "INSERT INTO results (run_id, case_id, check_id, kind, params_json, status, duration_s, "
    "message, details_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
constexpr const char* kInsertMetric =
    "INSERT INTO metrics (result_id, seq, name, value) VALUES (?1, ?2, ?3, ?4)";
constexpr const char* kInsertProfile =
    "INSERT INTO profiles (result_id, phase, name, count, total_ns, min_ns, median_ns, p99_ns, "
    "mean_ns, stddev_ns, bytes, flops, samples) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
    "?11, ?12, ?13)";

std::string labels_to_json(const std::map<std::string, std::string>& labels) {
  return Json(labels).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::map<std::string, std::string> labels_from_json(const std::string& text,
                                                    const std::string& path, int64_t run_id) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::map<std::string, std::string> labels;
  bool ok = j.is_object();
  for (auto it = j.begin(); ok && it != j.end(); ++it) {
    ok = it->is_string();
    if (ok) labels[it.key()] = it->get<std::string>();
  }
  if (!ok) {
    throw InputError(path, "run " + std::to_string(run_id) +
                               ": labels_json is not a JSON object of strings: " + text);
  }
  return labels;
}

RunData read_run(const Statement& q, const std::string& path) {
  RunData run;
  run.id = q.integer(0);
  run.uuid = q.text(1);
  run.suite = q.text(2);
  run.suite_file = q.text(3);
  run.suite_sha256 = q.text(4);
  run.platform = q.text(5);
  run.platform_file = q.text(6);
  run.platform_sha256 = q.text(7);
  run.platform_content = q.text(8);
  run.host = q.text(9);
  run.mesh = q.text(10);
  run.started_at = q.text(11);
  run.finished_at = q.text(12);
  run.status = q.text(13);
  run.labels = labels_from_json(q.text(14), path, run.id);
  run.stack.id = q.integer(15);
  run.stack.fingerprint = q.text(16);
  run.stack.backend = q.text(17);
  run.stack.versions_json = q.text(18);
  return run;
}

// Finds results by id for rows that come in ascending result id, as `results` is: a merge walk.
class ResultCursor {
 public:
  explicit ResultCursor(std::vector<ResultData>& results) : results_(results) {}
  ResultData& at(int64_t id) {
    while (i_ < results_.size() && results_[i_].id < id) ++i_;
    H0_CHECK(i_ < results_.size() && results_[i_].id == id) << "row of unknown result " << id;
    return results_[i_];
  }

 private:
  std::vector<ResultData>& results_;
  size_t i_ = 0;
};

void select_results(Database& db, int64_t run_id, std::vector<ResultData>& results) {
  {
    Statement q = db.prepare(kSelectResults);
    q.bind(1, run_id);
    while (q.step()) {
      ResultData& r = results.emplace_back();
      r.id = q.integer(0);
      r.case_id = q.text(1);
      r.check_id = q.text(2);
      r.kind = q.text(3);
      r.params_json = q.text(4);
      r.status = q.text(5);
      r.duration_s = q.real(6);
      r.message = q.text(7);
      r.details_json = q.text(8);
    }
  }
  {
    Statement q = db.prepare(kSelectMetrics);
    q.bind(1, run_id);
    ResultCursor cursor(results);
    while (q.step()) cursor.at(q.integer(0)).metrics.emplace_back(q.text(1), q.real(2));
  }
  {
    Statement q = db.prepare(kSelectEvalItems);
    q.bind(1, run_id);
    ResultCursor cursor(results);
    while (q.step()) {
      EvalItemData& e = cursor.at(q.integer(0)).eval_items.emplace_back();
      e.item_id = q.text(1);
      e.answer = q.text(2);
      e.correct = q.integer(3) != 0;
      e.ref_answer = q.is_null(4) ? "" : q.text(4);
      e.ref_correct = q.is_null(5) ? -1 : int(q.integer(5));
      e.evidence_json = q.text(6);
    }
  }
  Statement q = db.prepare(kSelectProfiles);
  q.bind(1, run_id);
  ResultCursor cursor(results);
  while (q.step()) {
    ProfileData& p = cursor.at(q.integer(0)).profiles.emplace_back();
    p.phase = q.text(1);
    p.name = q.text(2);
    p.count = q.integer(3);
    p.total_ns = q.real(4);
    p.min_ns = q.real(5);
    p.median_ns = q.real(6);
    p.p99_ns = q.real(7);
    p.mean_ns = q.real(8);
    p.stddev_ns = q.real(9);
    p.bytes = q.real(10);
    p.flops = q.real(11);
    p.samples_ns = q.f64_blob(12);
  }
}

}  // namespace

int64_t insert_stack(Database& db, const StackData& stack) {
  db.prepare(kInsertStack)
      .bind(1, stack.fingerprint)
      .bind(2, stack.backend)
      .bind(3, stack.versions_json)
      .run();
  Statement q = db.prepare(kFindStack);
  q.bind(1, stack.fingerprint);
  H0_CHECK(q.step()) << "stack " << stack.fingerprint << " vanished";
  return q.integer(0);
}

int64_t insert_run(Database& db, const RunData& run, int64_t pid) {
  const int64_t stack_id = insert_stack(db, run.stack);
  const std::string labels = labels_to_json(run.labels);
  Statement q = db.prepare(kInsertRun);
  q.bind(1, run.uuid).bind(2, run.suite).bind(3, run.suite_file).bind(4, run.suite_sha256);
  q.bind(5, run.platform).bind(6, run.platform_file).bind(7, run.platform_sha256);
  q.bind(8, run.platform_content).bind(9, stack_id).bind(10, run.host).bind(11, run.mesh);
  q.bind(12, pid).bind(13, run.started_at);
  if (run.finished_at.empty()) {
    q.bind_null(14);
  } else {
    q.bind(14, run.finished_at);
  }
  q.bind(15, run.status).bind(16, labels);
  q.run();
  return db.last_insert_rowid();
}

int64_t insert_result(Database& db, int64_t run_id, const ResultData& r) {
  db.prepare(kInsertResult)
      .bind(1, run_id)
      .bind(2, r.case_id)
      .bind(3, r.check_id)
      .bind(4, r.kind)
      .bind(5, r.params_json)
      .bind(6, r.status)
      .bind(7, r.duration_s)
      .bind(8, r.message)
      .bind(9, r.details_json)
      .run();
  const int64_t id = db.last_insert_rowid();
  int64_t seq = 0;
  for (const auto& [name, value] : r.metrics) {
    db.prepare(kInsertMetric).bind(1, id).bind(2, seq++).bind(3, name).bind(4, value).run();
  }
  for (const ProfileData& p : r.profiles) {
    Statement q = db.prepare(kInsertProfile);
    q.bind(1, id).bind(2, p.phase).bind(3, p.name).bind(4, p.count).bind(5, p.total_ns);
    q.bind(6, p.min_ns).bind(7, p.median_ns).bind(8, p.p99_ns).bind(9, p.mean_ns);
    q.bind(10, p.stddev_ns).bind(11, p.bytes).bind(12, p.flops).bind_f64_blob(13, p.samples_ns);
    q.run();
  }
  seq = 0;
  for (const EvalItemData& e : r.eval_items) {
    Statement q = db.prepare(kInsertEvalItem);
    q.bind(1, id).bind(2, seq++).bind(3, e.item_id).bind(4, e.answer).bind(5, int64_t(e.correct));
    if (e.ref_correct < 0) {
      q.bind_null(6).bind_null(7);
    } else {
      q.bind(6, e.ref_answer).bind(7, int64_t(e.ref_correct));
    }
    q.bind(8, e.evidence_json);
    q.run();
  }
  return id;
}

std::vector<RunData> select_runs(Database& db) {
  std::vector<RunData> runs;
  Statement q = db.prepare(kSelectRuns);
  while (q.step()) runs.push_back(read_run(q, db.path()));
  return runs;
}

std::optional<RunData> select_run(Database& db, int64_t run_id, bool with_results, int64_t* pid) {
  ReadTransaction snapshot(db);
  std::optional<RunData> run;
  {
    Statement q = db.prepare(kSelectRun);
    q.bind(1, run_id);
    if (!q.step()) return std::nullopt;
    run = read_run(q, db.path());
    if (pid != nullptr) *pid = q.integer(kPidColumn);
  }
  if (with_results) select_results(db, run_id, run->results);
  return run;
}

int64_t count_results(Database& db, int64_t run_id) {
  Statement q = db.prepare(kCountResults);
  q.bind(1, run_id);
  H0_CHECK(q.step());
  return q.integer(0);
}

}  // namespace h0::store
