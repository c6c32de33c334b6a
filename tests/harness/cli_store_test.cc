// `harness run` into the store, end to end: a run killed with SIGKILL stays incomplete with its
// finished cases intact; `harness diff` finds exactly the injected regressions (an accuracy
// fault and a 30% slowdown) and nothing between two runs of the same stack.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "base/error.h"
#include "harness/cli_util.h"
#include "store/sqlite_store.h"

namespace h0 {
namespace {

using test::run_harness;

std::string integrity(const std::string& db_path) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr);
  std::string out = sqlite3_step(st) == SQLITE_ROW
                        ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0))
                        : "no row";
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

int64_t count_results(const std::string& db_path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return 0;
  sqlite3_busy_timeout(db, 1000);
  sqlite3_stmt* st = nullptr;
  int64_t n = 0;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM results", -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    n = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

TEST(CliStore, KilledRunStaysIncompleteWithItsFinishedCases) {
  test::TempDir dir;
  {
    std::ofstream suite(dir.file("slow.yaml"));
    suite << "suite: slow\nchecks:\n  - id: linear\n    kind: op\n    op: linear\n    golden: "
             "reference\n"
             "    repeats: 2\n    matrix: {inputs: [";
    for (int i = 0; i < 40; ++i) suite << (i ? ", " : "") << "{seed: " << i << "}";
    suite << "], shape: [[64, 2048, 2048]]}\n";  // a case of ~0.3 s: killed mid-run
  }
  const std::string db = dir.file("results.db");
  const pid_t child = ::fork();
  if (child == 0) {
    const std::string platform = test::source_path("configs/platforms/reference.yaml");
    ::execl(H0_HARNESS_BIN, "harness", "run", dir.file("slow.yaml").c_str(), "--platform",
            platform.c_str(), "--db", db.c_str(), "-q", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (count_results(db) < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  const int64_t finished = count_results(db);
  ASSERT_GE(finished, 3);
  ASSERT_LT(finished, 40);
  EXPECT_EQ(integrity(db), "ok");

  auto store = store::SqliteStore::open(db);
  ASSERT_EQ(store->interrupted_runs().size(), 1u);
  const auto runs = store->list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "incomplete");
  const auto run = store->load_run(runs[0].id);
  EXPECT_EQ(static_cast<int64_t>(run->results.size()), finished);
  for (const auto& r : run->results) EXPECT_EQ(r.status, "pass") << r.case_id;
  EXPECT_THROW(store->resolve("latest"), InputError);  // an incomplete run is never "latest"
  // A second open reports nothing new: the run was marked once.
  EXPECT_TRUE(store::SqliteStore::open(db)->interrupted_runs().empty());
}

// Cases of about a millisecond. On a shared machine their times still move between processes
// (up to ~30% for the reference matmul and linear, whose eight side-by-side sums move with the
// neighbour's load on the core), more than one run per side can tell from a change; so the cases
// whose timing the test does not target carry a per-check threshold above that noise, and the
// slowed one (patch_embed, the steadiest: one dependent sum at a time) keeps 10%.
const char* kDiffSuite = R"(suite: timed
defaults: {golden: reference, warmup: 2, repeats: 12, inputs: {seed: 5}, perf_threshold: 0.6}
checks:
  - {id: linear, kind: op, op: linear, shape: [16, 512, 256]}
  - {id: matmul, kind: op, op: matmul, shape: [16, 512, 256]}
  - {id: patch_embed, kind: op, op: patch_embed, shape: [3, 56, 56, 64], attrs: {patch: 14}, perf_threshold: 0.10}
)";

std::string platform_file(const test::TempDir& dir, const std::string& name,
                          const std::string& options) {
  std::ofstream(dir.file(name)) << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
                                << ", options: " << options << "}\n";
  return dir.file(name);
}

// One run a side: a slowdown must stand above what one run's timings move by. A clean-clone CI
// run here once measured its first (base) run's patch_embed and linear 15-30% slower than the
// second run's throughout (steal time no calibration saw), which hid a 1.3x kernel. So this test
// runs a warm-up first, as the runs-a-side test does, and slows the kernel 2x; finding 1.3x
// despite such noise is the job of `ab` and `--runs` (the two tests after this one).
TEST(CliStore, DiffFindsExactlyTheInjectedRegressions) {
  test::TempDir dir;
  std::ofstream(dir.file("timed.yaml")) << kDiffSuite;
  const std::string db = " --db " + dir.file("results.db");
  const std::string good = platform_file(dir, "good.yaml", "{fault: none}");
  const std::string bad = platform_file(
      dir, "bad.yaml",
      R"({faults: [{op: matmul, fault: scale, magnitude: 0.01}, {op: patch_embed, fault: slow, factor: 2}]})");
  ASSERT_EQ(run_harness("run " + dir.file("timed.yaml") + " -q --no-db --platform " + good).code,
            0);
  ASSERT_EQ(
      run_harness("run " + dir.file("timed.yaml") + " -q --label stack=v1 --platform " + good + db)
          .code,
      0);
  EXPECT_EQ(
      run_harness("run " + dir.file("timed.yaml") + " -q --label stack=v2 --platform " + bad + db)
          .code,
      1);
  const auto r = run_harness("diff" + db + " --base label:stack=v1 --head label:stack=v2 --json");
  EXPECT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> flips, perf;
  for (const auto& f : j["statuses"]) {
    if (f["kind"] == "regression") flips.push_back(f["case_id"]);
  }
  for (const auto& p : j["performance"]) {
    if (p["verdict"] == "regression") {
      perf.push_back(p["case_id"]);
      EXPECT_LT(p["p_value"].get<double>(), 0.05);
      EXPECT_GT(p["change"].get<double>(), 0.10);  // the kernel is 2x; harness overhead dilutes it
    }
  }
  EXPECT_EQ(flips, std::vector<std::string>{"matmul"}) << r.out;
  EXPECT_EQ(perf, std::vector<std::string>{"patch_embed"}) << r.out;

  // --no-timing-exit (the nightly job's diff): a slowdown alone is listed, not failed on; a status
  // flip still fails.
  const std::string slow =
      platform_file(dir, "slow.yaml", "{op: patch_embed, fault: slow, factor: 2}");
  ASSERT_EQ(
      run_harness("run " + dir.file("timed.yaml") + " -q --label stack=v3 --platform " + slow + db)
          .code,
      0);
  const auto timing = run_harness("diff" + db + " --base label:stack=v1 --head label:stack=v3");
  const auto listed =
      run_harness("diff" + db + " --base label:stack=v1 --head label:stack=v3 --no-timing-exit");
  EXPECT_EQ(listed.code, 0) << listed.out;
  EXPECT_EQ(listed.out, timing.out);  // the same report, only the exit code differs
  EXPECT_EQ(timing.code, 1) << timing.out;
  EXPECT_NE(listed.out.find("patch_embed"), std::string::npos) << listed.out;
  EXPECT_EQ(
      run_harness("diff" + db + " --base label:stack=v1 --head label:stack=v2 --no-timing-exit")
          .code,
      1);
}

// harness ab: 4 rounds in ABBA order (the run ids show the order), every run in the store with
// its side and round; a 1.3x slower patch_embed is a paired-test regression, the other ops are
// not.
TEST(CliStore, AbInterleavesTheRoundsAndFindsTheSlowdown) {
  test::TempDir dir;
  std::ofstream(dir.file("timed.yaml")) << kDiffSuite;
  const std::string good = platform_file(dir, "good.yaml", "{fault: none}");
  const std::string slow =
      platform_file(dir, "slow.yaml", "{op: patch_embed, fault: slow, factor: 1.3}");
  const auto r = run_harness("ab --json --rounds 4 --db " + dir.file("r.db") + " --suite " +
                             dir.file("timed.yaml") + " --base " + good + " --head " + slow +
                             " --head-label stack=v2");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ab"]["order"], "ABBA");
  const auto base = j["ab"]["base_runs"].get<std::vector<int64_t>>();
  const auto head = j["ab"]["head_runs"].get<std::vector<int64_t>>();
  ASSERT_EQ(base.size(), 4u);
  ASSERT_EQ(head.size(), 4u);
  // A B | B A | A B | B A
  EXPECT_EQ(base, (std::vector<int64_t>{1, 4, 5, 8}));
  EXPECT_EQ(head, (std::vector<int64_t>{2, 3, 6, 7}));
  std::vector<std::string> slower;
  for (const auto& p : j["performance"]) {
    EXPECT_EQ(p["test"], "paired");
    EXPECT_EQ(p["base_runs"], 4);
    if (p["verdict"] == "regression") slower.push_back(p["case_id"]);
  }
  EXPECT_EQ(slower, std::vector<std::string>{"patch_embed"}) << r.out;
  const auto db = store::SqliteStore::open(dir.file("r.db"));
  const auto third = db->load_run(3);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->labels.at("ab_side"), "head");
  EXPECT_EQ(third->labels.at("ab_round"), "2");
  EXPECT_EQ(third->labels.at("stack"), "v2");
  EXPECT_EQ(third->labels.at("ab"), j["ab"]["tag"]);
  // Two stacks, base and head, not one per round; the dashboard groups them under the tag.
  EXPECT_EQ(test::run_shell("sqlite3 " + dir.file("r.db") +
                            " \"select count(distinct stack_id) from runs\"")
                .out,
            "2\n");
  ASSERT_EQ(run_harness("report --db " + dir.file("r.db") + " --out " + dir.file("site")).code, 0);
  const std::string index = test::read_file(dir.file("site/index.html"));
  const std::string tag = j["ab"]["tag"];
  const size_t group = index.find("<tr class=\"group\"><th colspan=\"11\">A/B comparison " + tag);
  ASSERT_NE(group, std::string::npos) << index;
  const std::string rows = index.substr(group, index.find("</table>", group) - group);
  EXPECT_NE(rows.find("v2 (head)"), std::string::npos) << rows;
  EXPECT_NE(rows.find(" (base)"), std::string::npos) << rows;
  size_t n = 0;
  for (size_t at = rows.find("<tr><td>"); at != std::string::npos;
       at = rows.find("<tr><td>", at + 1))
    ++n;
  EXPECT_EQ(n, 2u) << rows;
  // Bad input is exit 2 before anything runs.
  EXPECT_EQ(run_harness("ab --rounds 1 --suite " + dir.file("timed.yaml") + " --base " + good +
                        " --head " + slow)
                .code,
            2);
  EXPECT_EQ(
      run_harness("ab --suite " + dir.file("nope.yaml") + " --base " + good + " --head " + slow)
          .code,
      2);
}

// harness diff --runs 3: three runs a side, judged run by run; the JSON says how.
TEST(CliStore, DiffOverThreeRunsASideFindsTheSlowdownRunByRun) {
  test::TempDir dir;
  std::ofstream(dir.file("timed.yaml")) << kDiffSuite;
  const std::string db = " --db " + dir.file("r.db");
  const std::string good = platform_file(dir, "good.yaml", "{fault: none}");
  const std::string slow =
      platform_file(dir, "slow.yaml", "{op: patch_embed, fault: slow, factor: 1.3}");
  // A warm-up run first: a cold first run would widen the base side's noise.
  ASSERT_EQ(run_harness("run " + dir.file("timed.yaml") + " -q --no-db --platform " + good).code,
            0);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(run_harness("run " + dir.file("timed.yaml") + " -q --label stack=v1 --platform " +
                          good + db)
                  .code,
              0);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(run_harness("run " + dir.file("timed.yaml") + " -q --label stack=v2 --platform " +
                          slow + db)
                  .code,
              0);
  const auto r =
      run_harness("diff" + db + " --base label:stack=v1 --head label:stack=v2 --runs 3 --json");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["base"]["id"], 3);
  EXPECT_EQ(j["head"]["id"], 6);
  std::vector<std::string> slower;
  for (const auto& p : j["performance"]) {
    EXPECT_EQ(p["test"], "welch");
    EXPECT_EQ(p["base_runs"], 3);
    EXPECT_EQ(p["head_runs"], 3);
    if (p["verdict"] == "regression") slower.push_back(p["case_id"]);
  }
  EXPECT_EQ(slower, std::vector<std::string>{"patch_embed"}) << r.out;
  // Runs on both sides is an input error; too few runs a side is a warning.
  EXPECT_EQ(run_harness("diff" + db + " --base 3 --head 4 --runs 3").code, 2);
  const auto few = run_harness("diff" + db + " --base 2 --head 6 --runs 3");
  EXPECT_NE(few.err.find("only 2 complete runs of suite timed on faulty"), std::string::npos)
      << few.err;
}

// Two runs of the same stack: the diff says so (exit 0) when the timings agree. Whether they
// agree is the machine's business (see tests/bench/false_alarms.sh for the rate over many pairs);
// this checks the plumbing with `--threshold 1` (100%), which only a broken diff could exceed.
// The suite's own perf_threshold (per case and in defaults) would take precedence over the flag
// (a 10% once failed a clean-clone CI run here on an 11% same-stack difference), so this
// suite has none.
TEST(CliStore, SameStackPairReportsNoRegression) {
  test::TempDir dir;
  const std::string suite =
      std::regex_replace(kDiffSuite, std::regex(", perf_threshold: [0-9.]+"), "");
  ASSERT_EQ(suite.find("perf_threshold"), std::string::npos);
  std::ofstream(dir.file("timed.yaml")) << suite;
  const std::string db = " --db " + dir.file("results.db");
  const std::string good = platform_file(dir, "good.yaml", "{fault: none}");
  ASSERT_EQ(run_harness("run " + dir.file("timed.yaml") + " -q --platform " + good + db).code, 0);
  ASSERT_EQ(run_harness("run " + dir.file("timed.yaml") + " -q --platform " + good + db).code, 0);
  const auto r = run_harness("diff" + db + " --base latest~1 --head latest --threshold 1 --json");
  EXPECT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["statuses"].empty());
  EXPECT_TRUE(j["metric_drift"].empty());
  EXPECT_EQ(j["performance"].size(), 3u);
  for (const auto& p : j["performance"]) {
    EXPECT_TRUE(p["normalized"].get<bool>()) << p;
    EXPECT_EQ(p["threshold"], 1.0) << p;
  }
}

}  // namespace
}  // namespace h0
