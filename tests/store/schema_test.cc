// The schema and its migrations, and the files open() refuses.
#include "store/schema.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "store/sqlite_db.h"
#include "store/sqlite_store.h"
#include "store_test_util.h"

namespace h0::store {
namespace {

using test::raw_sql;
using test::StoreTest;

TEST(Schema, MigrationsAreNumberedInOrder) {
  ASSERT_FALSE(migrations().empty());
  for (size_t i = 0; i < migrations().size(); ++i) EXPECT_EQ(migrations()[i].version, int(i) + 1);
  EXPECT_EQ(latest_schema_version(), migrations().back().version);
}

TEST_F(StoreTest, CreatesEveryTableAndIndexInWalMode) {
  const std::string path = store_path("sub/dir/store.db");  // parent directories are created
  auto store = SqliteStore::open(path);
  EXPECT_EQ(store->schema_version(), latest_schema_version());
  EXPECT_EQ(store->path(), path);
  EXPECT_TRUE(store->interrupted_runs().empty());
  EXPECT_EQ(raw_sql(path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"),
            "eval_items\nmetrics\nprofiles\nresults\nruns\nschema_version\nstacks");
  EXPECT_EQ(raw_sql(path,
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE "
                    "'sqlite_autoindex%' ORDER BY name"),
            "profiles_by_result\nresults_by_run_case\nruns_by_platform\nruns_by_stack\n"
            "runs_by_started_at");
  EXPECT_EQ(raw_sql(path, "PRAGMA page_size"), "1024");
  EXPECT_EQ(raw_sql(path, "SELECT version FROM schema_version"), "2");
  EXPECT_EQ(raw_sql(path, "PRAGMA journal_mode"), "wal");
}

TEST_F(StoreTest, OpeningTwiceMigratesOnce) {
  const std::string path = store_path();
  { SqliteStore::open(path)->begin_run(test::sample_start()); }
  const std::string schema = raw_sql(path, "SELECT sql FROM sqlite_master ORDER BY name");
  auto again = SqliteStore::open(path);
  EXPECT_EQ(again->schema_version(), 2);
  EXPECT_EQ(raw_sql(path, "SELECT sql FROM sqlite_master ORDER BY name"), schema);
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM schema_version"), "1");
  EXPECT_EQ(again->list_runs().size(), 1u);
}

TEST_F(StoreTest, OlderStoreGetsTheMissingMigrations) {
  const std::string path = store_path();
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  raw_sql(path,
          "CREATE TABLE schema_version (version INTEGER NOT NULL); "
          "INSERT INTO schema_version VALUES (0)");
  auto store = SqliteStore::open(path);
  EXPECT_EQ(store->schema_version(), 2);
  EXPECT_EQ(raw_sql(path, "SELECT version FROM schema_version"), "2");
  EXPECT_GT(store->begin_run(test::sample_start()), 0);
}

// A store written before per-item eval results existed (version 1) keeps its runs and gets the
// eval_items table.
TEST_F(StoreTest, AVersionOneStoreGainsEvalItemsAndKeepsItsRuns) {
  const std::string path = store_path();
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  {
    Database db(path);
    EXPECT_EQ(migrate(db, std::vector<Migration>{migrations()[0]}), 1);
  }
  raw_sql(path,
          "INSERT INTO stacks (fingerprint, backend, versions_json) VALUES ('f', 'cpu', '{}')");
  auto store = SqliteStore::open(path);
  EXPECT_EQ(store->schema_version(), 2);
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM stacks"), "1");
  const int64_t run = store->begin_run(test::sample_start());
  ResultData r;
  r.case_id = "t/facts";
  r.check_id = "t/facts";
  r.kind = "eval";
  r.status = "pass";
  r.eval_items = {{"q1", "2", true, "2", 1, R"({"choice_logprobs":[-1,-2,-0.5]})"},
                  {"q2", "0", false, "", -1, "{}"}};
  store->add_result(run, r);
  store->finish_run(run, "pass");
  const auto loaded = store->load_run(run);
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->results.size(), 1u);
  const auto& items = loaded->results[0].eval_items;
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].item_id, "q1");
  EXPECT_TRUE(items[0].correct);
  EXPECT_EQ(items[0].ref_correct, 1);
  EXPECT_EQ(items[0].evidence_json, R"({"choice_logprobs":[-1,-2,-0.5]})");
  EXPECT_EQ(items[1].ref_correct, -1);  // no reference result: NULL in the store
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM eval_items WHERE ref_correct IS NULL"), "1");
}

TEST_F(StoreTest, MigrateRunsOnlyMissingStepsAndIsIdempotent) {
  const std::string path = store_path();
  SqliteStore::open(path);
  const std::vector<Migration> steps = {
      migrations()[0], migrations()[1], {3, "CREATE TABLE extra (x INTEGER)"}};
  {
    Database db(path);
    EXPECT_EQ(migrate(db, steps), 3);  // would fail if version 1 ran again (tables exist)
    EXPECT_EQ(migrate(db, steps), 3);
  }
  EXPECT_EQ(raw_sql(path, "SELECT version FROM schema_version"), "3");
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM sqlite_master WHERE name = 'extra'"), "1");
}

TEST_F(StoreTest, FailedMigrationLeavesTheStoreAsItWas) {
  const std::string path = store_path();
  SqliteStore::open(path);
  const std::vector<Migration> steps = {
      migrations()[0], migrations()[1], {3, "CREATE TABLE extra (x INTEGER); CREATE TABLE ("}};
  EXPECT_DEATH(
      {
        Database db(path);
        migrate(db, steps);
      },
      "internal error");
  EXPECT_EQ(raw_sql(path, "SELECT version FROM schema_version"), "2");
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM sqlite_master WHERE name = 'extra'"), "0");
}

TEST_F(StoreTest, NewerSchemaVersionIsRefusedWithTheExactMessage) {
  const std::string path = store_path();
  SqliteStore::open(path);
  raw_sql(path, "UPDATE schema_version SET version = 7");
  try {
    SqliteStore::open(path);
    FAIL() << "opened a store of schema version 7";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 ("store " + path + " has schema version 7; this harness knows up to 2").c_str());
  }
  EXPECT_EQ(raw_sql(path, "SELECT version FROM schema_version"), "7");  // left alone
}

TEST(StoreFiles, NotSqliteIsAnInputErrorNamingTheFile) {
  h0::test::TempDir dir;
  const std::string path = dir.file("notes.txt");
  std::ofstream(path) << std::string(2000, 'x') << "\nnot a database\n";
  try {
    SqliteStore::open(path);
    FAIL() << "opened a text file";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path);
    EXPECT_NE(std::string(e.what()).find("not an SQLite database"), std::string::npos) << e.what();
  }
}

TEST(StoreFiles, AnotherProgramsDatabaseIsRefusedAndLeftUnchanged) {
  h0::test::TempDir dir;
  const std::string path = dir.file("other.db");
  raw_sql(path, "CREATE TABLE contacts (name TEXT)");
  try {
    SqliteStore::open(path);
    FAIL() << "opened a database without schema_version";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path);
    EXPECT_NE(std::string(e.what()).find("not a harness store"), std::string::npos) << e.what();
  }
  EXPECT_EQ(raw_sql(path, "PRAGMA journal_mode"), "delete");
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM sqlite_master"), "1");
}

TEST(StoreFiles, UnopenablePathIsAnInputError) {
  h0::test::TempDir dir;
  std::ofstream(dir.file("plain")) << "x";
  EXPECT_THROW(SqliteStore::open(dir.file("plain/store.db")), InputError);  // parent is a file
  EXPECT_THROW(SqliteStore::open(dir.path()), InputError);                  // a directory
}

}  // namespace
}  // namespace h0::store
