#include "store/schema.h"

#include "base/check.h"
#include "base/error.h"
#include "store/sqlite_db.h"

namespace h0::store {
namespace {

// Version 1: the initial tables. Times are ISO 8601 UTC text (they sort as text); finished_at is
// NULL while a run is running. A REAL that is NaN is stored as NULL (SQLite has no NaN).
// profiles.samples is a blob of little-endian f64. metrics are clustered by result (no rowid, no
// separate index) and keep their insertion order in seq (0, 1, ...).
constexpr const char* kVersion1 = R"sql(
CREATE TABLE stacks (
  id INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL UNIQUE,
  backend TEXT NOT NULL,
  versions_json TEXT NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  suite TEXT NOT NULL,
  suite_file TEXT NOT NULL,
  suite_sha256 TEXT NOT NULL,
  platform TEXT NOT NULL,
  platform_file TEXT NOT NULL,
  platform_sha256 TEXT NOT NULL,
  platform_content TEXT NOT NULL,
  stack_id INTEGER NOT NULL REFERENCES stacks(id),
  host TEXT NOT NULL,
  mesh TEXT NOT NULL,
  pid INTEGER NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL,
  labels_json TEXT NOT NULL
);
CREATE INDEX runs_by_started_at ON runs(started_at);
CREATE INDEX runs_by_platform ON runs(platform, started_at);
CREATE INDEX runs_by_stack ON runs(stack_id);
CREATE TABLE results (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  case_id TEXT NOT NULL,
  check_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  params_json TEXT NOT NULL,
  status TEXT NOT NULL,
  duration_s REAL,
  message TEXT NOT NULL,
  details_json TEXT NOT NULL
);
CREATE INDEX results_by_run_case ON results(run_id, case_id);
CREATE TABLE metrics (
  result_id INTEGER NOT NULL REFERENCES results(id),
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  value REAL,
  PRIMARY KEY (result_id, seq)
) WITHOUT ROWID;
CREATE TABLE profiles (
  id INTEGER PRIMARY KEY,
  result_id INTEGER NOT NULL REFERENCES results(id),
  phase TEXT NOT NULL,
  name TEXT NOT NULL,
  count INTEGER NOT NULL,
  total_ns REAL,
  min_ns REAL,
  median_ns REAL,
  p99_ns REAL,
  mean_ns REAL,
  stddev_ns REAL,
  bytes REAL,
  flops REAL,
  samples BLOB NOT NULL
);
CREATE INDEX profiles_by_result ON profiles(result_id);
)sql";

// Version 2: per-item results of task-accuracy checks (kind: eval), so two runs' answers can be
// compared item by item. Clustered by result like metrics; seq keeps the scoring order.
constexpr const char* kVersion2 = R"sql(
CREATE TABLE eval_items (
  result_id INTEGER NOT NULL REFERENCES results(id),
  seq INTEGER NOT NULL,
  item_id TEXT NOT NULL,
  answer TEXT NOT NULL,
  correct INTEGER NOT NULL,
  ref_answer TEXT,
  ref_correct INTEGER,
  evidence_json TEXT NOT NULL,
  PRIMARY KEY (result_id, seq)
) WITHOUT ROWID;
)sql";

constexpr Migration kMigrations[] = {
    {1, kVersion1},
    {2, kVersion2},
};

// One statement, so one snapshot: read as two, another process's migration could commit between
// them and a store being created would look like somebody else's database.
constexpr const char* kCountTables =
    "SELECT count(*) FILTER (WHERE name = 'schema_version'), count(*) FROM sqlite_master "
    "WHERE type = 'table' AND name NOT LIKE 'sqlite_%'";
constexpr const char* kCreateVersionTable =
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)";
constexpr const char* kSelectVersion = "SELECT max(version) FROM schema_version";
constexpr const char* kClearVersion = "DELETE FROM schema_version";
constexpr const char* kInsertVersion = "INSERT INTO schema_version (version) VALUES (?1)";

// The store's version: 0 for an empty database. Throws if it is not ours or is too new.
int read_version(Database& db, int known) {
  Statement tables = db.prepare(kCountTables);
  H0_CHECK(tables.step()) << kCountTables;
  if (tables.integer(0) == 0) {
    if (tables.integer(1) > 0) {
      throw InputError(db.path(), "not a harness store: no schema_version table");
    }
    return 0;
  }
  Statement q = db.prepare(kSelectVersion);
  H0_CHECK(q.step());
  const int version = q.is_null(0) ? 0 : static_cast<int>(q.integer(0));
  if (version > known) {
    throw InputError("", "store " + db.path() + " has schema version " + std::to_string(version) +
                             "; this harness knows up to " + std::to_string(known));
  }
  return version;
}

}  // namespace

std::span<const Migration> migrations() { return kMigrations; }

int latest_schema_version() { return migrations().back().version; }

int migrate(Database& db, std::span<const Migration> steps) {
  for (size_t i = 0; i < steps.size(); ++i) {
    H0_CHECK(steps[i].version == static_cast<int>(i) + 1) << "migrations out of order at " << i;
  }
  const int target = static_cast<int>(steps.size());
  if (read_version(db, target) == target) return target;

  WriteTransaction tx(db);
  const int version = read_version(db, target);  // another process may have migrated meanwhile
  if (version == target) return target;
  db.exec(kCreateVersionTable);
  for (const Migration& m : steps) {
    if (m.version > version) db.exec(m.sql);
  }
  db.prepare(kClearVersion).run();
  db.prepare(kInsertVersion).bind(1, target).run();
  tx.commit();
  return target;
}

}  // namespace h0::store
