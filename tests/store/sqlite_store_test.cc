// SqliteStore in one process: the round trip of every field, run order and selectors.
#include "store/sqlite_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <regex>

#include "base/error.h"
#include "base/sha256.h"
#include "store_test_util.h"

namespace h0::store {
namespace {

using test::raw_sql;
using test::sample_result;
using test::sample_start;
using test::StoreTest;

void expect_same_value(double got, double want) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got));
  } else {
    EXPECT_EQ(got, want);
  }
}

void expect_same_result(const ResultData& got, const ResultData& want) {
  EXPECT_EQ(got.case_id, want.case_id);
  EXPECT_EQ(got.check_id, want.check_id);
  EXPECT_EQ(got.kind, want.kind);
  EXPECT_EQ(got.params_json, want.params_json);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.duration_s, want.duration_s);
  EXPECT_EQ(got.message, want.message);
  EXPECT_EQ(got.details_json, want.details_json);
  ASSERT_EQ(got.metrics.size(), want.metrics.size());
  for (size_t i = 0; i < got.metrics.size(); ++i) {
    EXPECT_EQ(got.metrics[i].first, want.metrics[i].first);
    expect_same_value(got.metrics[i].second, want.metrics[i].second);
  }
  ASSERT_EQ(got.profiles.size(), want.profiles.size());
  for (size_t i = 0; i < got.profiles.size(); ++i) {
    const ProfileData &g = got.profiles[i], &w = want.profiles[i];
    EXPECT_EQ(g.phase, w.phase);
    EXPECT_EQ(g.name, w.name);
    EXPECT_EQ(g.count, w.count);
    EXPECT_EQ(g.total_ns, w.total_ns);
    EXPECT_EQ(g.min_ns, w.min_ns);
    EXPECT_EQ(g.median_ns, w.median_ns);
    EXPECT_EQ(g.p99_ns, w.p99_ns);
    EXPECT_EQ(g.mean_ns, w.mean_ns);
    EXPECT_EQ(g.stddev_ns, w.stddev_ns);
    EXPECT_EQ(g.bytes, w.bytes);
    EXPECT_EQ(g.flops, w.flops);
    EXPECT_EQ(g.samples_ns, w.samples_ns);
  }
}

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

TEST_F(StoreTest, RoundTripsEveryField) {
  const std::string path = store_path();
  auto store = SqliteStore::open(path);
  const RunStart start =
      sample_start("cpu", R"({"backend":"cpu","blas":"openblas 0.3.21"})",
                   {{"branch", "main"}, {"ci", "yes"}, {"note", "ünïcode \"q\""}});
  const int64_t run_id = store->begin_run(start);

  std::vector<ResultData> written = {sample_result(1), sample_result(5, 0, 1000),
                                     sample_result(7, 4, 0)};
  written[0].metrics = {{"zeta", 1.0},
                        {"alpha", -0.0},
                        {"nan", std::nan("")},
                        {"inf", std::numeric_limits<double>::infinity()},
                        {"zeta", 2.0}};
  written[0].message = "line one\nline two, \xe2\x9c\x93";
  ProfileData second = written[1].profiles[0];
  second.phase = "warmup";
  second.samples_ns = {1e-300, 1e300, std::numeric_limits<double>::denorm_min()};
  written[1].profiles.push_back(second);
  std::vector<int64_t> ids;
  for (const ResultData& r : written) ids.push_back(store->add_result(run_id, r));
  store->finish_run(run_id, "fail");

  const std::optional<RunData> run = store->load_run(run_id);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->id, run_id);
  EXPECT_TRUE(std::regex_match(run->uuid, std::regex("[0-9a-f]{32}"))) << run->uuid;
  EXPECT_EQ(run->suite, start.suite);
  EXPECT_EQ(run->suite_file, start.suite_file);
  EXPECT_EQ(run->suite_sha256, start.suite_sha256);
  EXPECT_EQ(run->platform, start.platform);
  EXPECT_EQ(run->platform_file, start.platform_file);
  EXPECT_EQ(run->platform_sha256, start.platform_sha256);
  EXPECT_EQ(run->platform_content, start.platform_content);
  EXPECT_EQ(run->stack.backend, "cpu");
  EXPECT_EQ(run->stack.versions_json, start.versions_json);
  EXPECT_EQ(run->stack.fingerprint,
            base::sha256_hex(start.versions_json.data(), start.versions_json.size()));
  EXPECT_GT(run->stack.id, 0);
  EXPECT_EQ(run->host, hostname());  // an empty RunStart::host means this machine
  EXPECT_EQ(run->mesh, "1x1");
  const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  EXPECT_TRUE(std::regex_match(run->started_at, iso)) << run->started_at;
  EXPECT_TRUE(std::regex_match(run->finished_at, iso)) << run->finished_at;
  EXPECT_LE(run->started_at, run->finished_at);
  EXPECT_EQ(run->status, "fail");
  EXPECT_EQ(run->labels, start.labels);
  ASSERT_EQ(run->results.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(run->results[i].id, ids[i]);
    expect_same_result(run->results[i], written[i]);
  }
  EXPECT_EQ(raw_sql(path, "SELECT pid FROM runs"), std::to_string(getpid()));
  EXPECT_EQ(raw_sql(path, "SELECT length(samples) FROM profiles ORDER BY id"), "8000\n24\n0");
  // Little-endian f64: 900.0 is 0x408C200000000000.
  EXPECT_EQ(raw_sql(path, "SELECT hex(substr(samples, 1, 8)) FROM profiles ORDER BY id LIMIT 1"),
            "0000000000208C40");
}

TEST_F(StoreTest, RunningRunHasNoFinishTimeAndExplicitHostIsKept) {
  auto store = SqliteStore::open(store_path());
  RunStart start = sample_start();
  start.host = "node7";
  const int64_t id = store->begin_run(start);
  const RunData run = *store->load_run(id);
  EXPECT_EQ(run.status, "running");
  EXPECT_EQ(run.finished_at, "");
  EXPECT_EQ(run.host, "node7");
  EXPECT_TRUE(run.results.empty());
  EXPECT_FALSE(store->load_run(id + 1).has_value());
}

TEST_F(StoreTest, RunsShareAStackOnlyWithTheSameVersions) {
  auto store = SqliteStore::open(store_path());
  const int64_t a = store->begin_run(sample_start("cpu", R"({"v":1})"));
  const int64_t b = store->begin_run(sample_start("gpu", R"({"v":1})"));
  const int64_t c = store->begin_run(sample_start("cpu", R"({"v":2})"));
  EXPECT_EQ(store->load_run(a)->stack.id, store->load_run(b)->stack.id);
  EXPECT_NE(store->load_run(a)->stack.id, store->load_run(c)->stack.id);
}

TEST_F(StoreTest, ListsNewestFirstWithoutResults) {
  const std::string path = store_path();
  auto store = SqliteStore::open(path);
  std::vector<int64_t> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(store->begin_run(sample_start()));
    store->add_result(ids.back(), sample_result(i));
  }
  std::vector<RunData> runs = store->list_runs();
  ASSERT_EQ(runs.size(), 4u);
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].id, ids[3 - i]);  // same millisecond or not, the later id comes first
    EXPECT_TRUE(runs[i].results.empty());
    EXPECT_EQ(runs[i].suite, "ops-core");
  }
  // started_at decides before id does.
  raw_sql(path, "UPDATE runs SET started_at = '2999-01-01T00:00:00.000Z' WHERE id = " +
                    std::to_string(ids[1]));
  runs = store->list_runs();
  EXPECT_EQ(runs[0].id, ids[1]);
  EXPECT_EQ(runs[1].id, ids[3]);
}

TEST_F(StoreTest, ResultForAnUnknownRunIsOurBug) {
  const std::string path = store_path();
  SqliteStore::open(path);
  EXPECT_DEATH(SqliteStore::open(path)->add_result(42, sample_result(1)), "FOREIGN KEY");
  EXPECT_DEATH(SqliteStore::open(path)->finish_run(42, "pass"), "no run 42");
  EXPECT_DEATH(SqliteStore::open(path)->finish_run(1, "done"), "finish_run status 'done'");
}

// Selectors over: 1 pass cpu {branch: main} stack A; 2 fail gpu {branch: dev} stack B;
// 3 incomplete cpu {branch: dev}; 4 running gpu.
class SelectorTest : public StoreTest {
 protected:
  void SetUp() override {
    path_ = store_path();
    store_ = SqliteStore::open(path_);
    const int64_t a = store_->begin_run(sample_start("cpu", R"({"v":"A"})", {{"branch", "main"}}));
    store_->finish_run(a, "pass");
    const int64_t b = store_->begin_run(sample_start("gpu", R"({"v":"B"})", {{"branch", "dev"}}));
    store_->finish_run(b, "fail");
    store_->begin_run(sample_start("cpu", R"({"v":"A"})", {{"branch", "dev"}}));
    raw_sql(path_, "UPDATE runs SET status = 'incomplete' WHERE id = 3");
    store_->begin_run(sample_start("gpu", R"({"v":"A"})"));
  }
  std::string error_of(const std::string& selector) {
    try {
      store_->resolve(selector);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
  std::string no_match(const std::string& selector) {
    return "selector '" + selector + "': no run matches (4 runs in " + path_ + ")";
  }
  std::string path_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SelectorTest, RunIdMustExistWhateverItsStatus) {
  EXPECT_EQ(store_->resolve("1"), 1);
  EXPECT_EQ(store_->resolve("3"), 3);
  EXPECT_EQ(store_->resolve("4"), 4);
  EXPECT_EQ(error_of("5"), no_match("5"));
  EXPECT_EQ(error_of("0"), no_match("0"));
  EXPECT_EQ(error_of("99999999999999999999"), no_match("99999999999999999999"));
}

TEST_F(SelectorTest, LatestSkipsIncompleteAndRunning) {
  EXPECT_EQ(store_->resolve("latest"), 2);
  EXPECT_EQ(store_->resolve("latest~0"), 2);
  EXPECT_EQ(store_->resolve("latest~1"), 1);
  EXPECT_EQ(error_of("latest~2"), no_match("latest~2"));
  EXPECT_EQ(error_of("latest~x"), "selector 'latest~x': expected latest~N with N a count of runs");
}

TEST_F(SelectorTest, LabelPlatformAndStack) {
  EXPECT_EQ(store_->resolve("label:branch=main"), 1);
  EXPECT_EQ(store_->resolve("label:branch=dev"), 2);  // run 3 has it too, but is incomplete
  EXPECT_EQ(error_of("label:branch=none"), no_match("label:branch=none"));
  EXPECT_EQ(error_of("label:nokey=main"), no_match("label:nokey=main"));
  EXPECT_EQ(error_of("label:branch"), "selector 'label:branch': expected label:key=value");
  EXPECT_EQ(store_->resolve("platform:cpu"), 1);
  EXPECT_EQ(store_->resolve("platform:gpu"), 2);
  EXPECT_EQ(error_of("platform:tpu"), no_match("platform:tpu"));
  const std::string fp_a = store_->load_run(1)->stack.fingerprint;
  const std::string fp_b = store_->load_run(2)->stack.fingerprint;
  EXPECT_EQ(store_->resolve("stack:" + fp_a), 1);
  EXPECT_EQ(store_->resolve("stack:" + fp_b.substr(0, 12)), 2);
  EXPECT_EQ(error_of("stack:zz"), no_match("stack:zz"));
  EXPECT_EQ(error_of("stack:"), "selector 'stack:': expected stack:<fingerprint prefix>");
}

TEST_F(StoreTest, StackPrefixOfTwoStacksIsAmbiguous) {
  auto store = SqliteStore::open(store_path());
  const std::string v1 = R"({"v":0})";
  const std::string fp1 = base::sha256_hex(v1.data(), v1.size());
  std::string v2;  // another stack whose fingerprint starts with the same digit
  for (int i = 1; v2.empty(); ++i) {
    const std::string v = R"({"v":)" + std::to_string(i) + "}";
    if (base::sha256_hex(v.data(), v.size())[0] == fp1[0]) v2 = v;
  }
  store->finish_run(store->begin_run(sample_start("cpu", v1)), "pass");
  store->finish_run(store->begin_run(sample_start("cpu", v2)), "pass");
  try {
    store->resolve("stack:" + fp1.substr(0, 1));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("matches 2 stacks"), std::string::npos) << e.what();
  }
  EXPECT_EQ(store->resolve("stack:" + fp1.substr(0, 20)), 1);
}

TEST_F(SelectorTest, UnknownSelectorSaysWhatIsAccepted) {
  EXPECT_EQ(error_of("newest"),
            "selector 'newest': expected a run id, latest, latest~N, label:key=value, "
            "platform:<name> or stack:<fingerprint prefix>");
  EXPECT_EQ(error_of("-1"), error_of("-1"));
  EXPECT_NE(error_of("-1").find("expected a run id"), std::string::npos);
}

TEST_F(StoreTest, LatestOfAStoreWithoutCompleteRunsIsAnError) {
  const std::string path = store_path();
  auto store = SqliteStore::open(path);
  EXPECT_THROW(store->resolve("latest"), InputError);
  store->begin_run(sample_start());
  try {
    store->resolve("latest");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "selector 'latest'");
    EXPECT_EQ(e.message(), "no run matches (1 runs in " + path + ")");
  }
}

}  // namespace
}  // namespace h0::store
