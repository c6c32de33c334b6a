// SqliteStore::merge_from: runs copied once, stacks deduplicated, conflicts reported.
#include <gtest/gtest.h>

#include "store/sqlite_store.h"
#include "store_test_util.h"

namespace h0::store {
namespace {

using test::raw_sql;
using test::sample_result;
using test::sample_start;
using test::StoreTest;

class MergeTest : public StoreTest {
 protected:
  // There: run 1 pass (stack S, 3 results with profiles), run 2 fail (stack T, 1 result).
  // Here: one run of stack S.
  void SetUp() override {
    there_path_ = store_path("there.db");
    here_path_ = store_path("here.db");
    there_ = SqliteStore::open(there_path_);
    here_ = SqliteStore::open(here_path_);
    const int64_t a = there_->begin_run(sample_start("cpu", kStackS, {{"branch", "main"}}));
    for (int i = 0; i < 3; ++i) there_->add_result(a, sample_result(i, 2, 16));
    there_->finish_run(a, "pass");
    const int64_t b = there_->begin_run(sample_start("gpu", kStackT));
    there_->add_result(b, sample_result(9));
    there_->finish_run(b, "fail");
    const int64_t c = here_->begin_run(sample_start("cpu", kStackS));
    here_->finish_run(c, "pass");
  }
  static constexpr const char* kStackS = R"({"v":"S"})";
  static constexpr const char* kStackT = R"({"v":"T"})";
  std::string there_path_, here_path_;
  std::unique_ptr<SqliteStore> there_, here_;
};

TEST_F(MergeTest, CopiesNewRunsWithTheirStacksDeduplicated) {
  std::vector<std::string> conflicts;
  EXPECT_EQ(here_->merge_from(*there_, &conflicts), 2);
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(raw_sql(here_path_, "SELECT count(*) FROM stacks"), "2");
  const std::vector<RunData> runs = here_->list_runs();
  ASSERT_EQ(runs.size(), 3u);
  for (int64_t there_id : {1, 2}) {
    const RunData want = *there_->load_run(there_id);
    const auto it = std::find_if(runs.begin(), runs.end(),
                                 [&](const RunData& r) { return r.uuid == want.uuid; });
    ASSERT_NE(it, runs.end());
    const RunData got = *here_->load_run(it->id);
    EXPECT_EQ(got.suite, want.suite);
    EXPECT_EQ(got.platform, want.platform);
    EXPECT_EQ(got.platform_content, want.platform_content);
    EXPECT_EQ(got.started_at, want.started_at);
    EXPECT_EQ(got.finished_at, want.finished_at);
    EXPECT_EQ(got.status, want.status);
    EXPECT_EQ(got.labels, want.labels);
    EXPECT_EQ(got.host, want.host);
    EXPECT_EQ(got.stack.fingerprint, want.stack.fingerprint);
    EXPECT_EQ(got.stack.versions_json, want.stack.versions_json);
    ASSERT_EQ(got.results.size(), want.results.size());
    for (size_t i = 0; i < got.results.size(); ++i) {
      EXPECT_EQ(got.results[i].case_id, want.results[i].case_id);
      EXPECT_EQ(got.results[i].metrics, want.results[i].metrics);
      ASSERT_EQ(got.results[i].profiles.size(), want.results[i].profiles.size());
      for (size_t k = 0; k < got.results[i].profiles.size(); ++k) {
        EXPECT_EQ(got.results[i].profiles[k].samples_ns, want.results[i].profiles[k].samples_ns);
        EXPECT_EQ(got.results[i].profiles[k].p99_ns, want.results[i].profiles[k].p99_ns);
      }
    }
  }
  // The copy of run 1 shares stack S with the run that was here.
  EXPECT_EQ(here_->load_run(1)->stack.id,
            here_->load_run(here_->resolve("label:branch=main"))->stack.id);
  EXPECT_EQ(
      raw_sql(here_path_, "SELECT count(*) FROM runs WHERE pid = " + std::to_string(getpid())),
      "3");
}

TEST_F(MergeTest, IdenticalRunsAreSkippedSilently) {
  std::vector<std::string> conflicts;
  EXPECT_EQ(here_->merge_from(*there_, &conflicts), 2);
  EXPECT_EQ(here_->merge_from(*there_, &conflicts), 0);
  EXPECT_EQ(here_->merge_from(*here_, &conflicts), 0);  // a store into itself
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(here_->list_runs().size(), 3u);
  EXPECT_EQ(raw_sql(here_path_, "SELECT count(*) FROM results"), "4");
}

TEST_F(MergeTest, DifferingRunsAreReportedAndNotCopied) {
  ASSERT_EQ(here_->merge_from(*there_, nullptr), 2);
  there_->add_result(1, sample_result(3));
  raw_sql(there_path_, "UPDATE runs SET status = 'pass' WHERE id = 2");
  const RunData one = *there_->load_run(1), two = *there_->load_run(2);
  std::vector<std::string> conflicts;
  EXPECT_EQ(here_->merge_from(*there_, &conflicts), 0);
  ASSERT_EQ(conflicts.size(), 2u);
  EXPECT_EQ(conflicts[0], "run " + one.uuid + " (ops-core on cpu, " + one.started_at +
                              "): 3 results here, 4 in " + there_path_);
  EXPECT_EQ(conflicts[1], "run " + two.uuid + " (ops-core on gpu, " + two.started_at +
                              "): status fail here, pass in " + there_path_);
  EXPECT_EQ(raw_sql(here_path_, "SELECT count(*) FROM results"), "4");
}

TEST_F(MergeTest, RunningRunKeepsItsPidAndIsFoundIncompleteLater) {
  // A run `running` there whose process is gone on this host: the copy is marked too.
  raw_sql(there_path_,
          "UPDATE runs SET status = 'running', finished_at = NULL, pid = 999999999 "
          "WHERE id = 2");
  EXPECT_EQ(here_->merge_from(*there_, nullptr), 2);
  auto reopened = SqliteStore::open(here_path_);
  ASSERT_EQ(reopened->interrupted_runs().size(), 1u);
  EXPECT_EQ(reopened->interrupted_runs()[0].uuid, there_->load_run(2)->uuid);
}

}  // namespace
}  // namespace h0::store
