// SqliteStore across processes: runs whose process died become incomplete, and several processes
// writing to one file at once lose nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <set>

#include "base/error.h"
#include "store/sqlite_store.h"
#include "store_test_util.h"

namespace h0::store {
namespace {

using test::sample_result;
using test::sample_start;
using test::StoreTest;

// Runs `body` in a forked child that exits without destructors (as a crash would); returns the
// child's pid once it has exited and been reaped, so that the pid is certainly not alive.
pid_t run_in_child(const std::function<void()>& body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  return pid;
}

TEST_F(StoreTest, RunOfADeadProcessBecomesIncomplete) {
  const std::string path = store_path();
  SqliteStore::open(path);
  run_in_child([&] {
    auto store = SqliteStore::open(path);
    const int64_t id = store->begin_run(sample_start());
    store->add_result(id, sample_result(1));
    store->add_result(id, sample_result(2));
  });
  auto store = SqliteStore::open(path);
  ASSERT_EQ(store->interrupted_runs().size(), 1u);
  const RunData& lost = store->interrupted_runs()[0];
  EXPECT_EQ(lost.status, "incomplete");
  EXPECT_EQ(lost.finished_at, "");
  const RunData loaded = *store->load_run(lost.id);
  EXPECT_EQ(loaded.status, "incomplete");
  EXPECT_EQ(loaded.results.size(), 2u);                // what was written before the crash is kept
  EXPECT_THROW(store->resolve("latest"), InputError);  // never reported as complete
  EXPECT_EQ(store->resolve(std::to_string(lost.id)), lost.id);
  // Found once: the next open has nothing new to report.
  EXPECT_TRUE(SqliteStore::open(path)->interrupted_runs().empty());
}

TEST_F(StoreTest, RunningRunsOfLiveProcessesAndOtherHostsAreLeftAlone) {
  const std::string path = store_path();
  auto mine = SqliteStore::open(path);
  const int64_t live = mine->begin_run(sample_start());  // this process: alive
  run_in_child([&] {
    RunStart start = sample_start();
    start.host = "another-host.example";
    auto store = SqliteStore::open(path);
    store->begin_run(start);
  });
  const int64_t remote = live + 1;
  auto again = SqliteStore::open(path);
  EXPECT_TRUE(again->interrupted_runs().empty());
  EXPECT_EQ(again->load_run(live)->status, "running");
  EXPECT_EQ(again->load_run(remote)->status, "running");
  EXPECT_EQ(again->load_run(remote)->host, "another-host.example");
  mine->finish_run(live, "pass");
  EXPECT_EQ(again->resolve("latest"), live);
}

TEST_F(StoreTest, ConcurrentWritersLoseNothing) {
  constexpr int kProcesses = 8, kResults = 200;
  const std::string path = store_path();  // not created yet: the children race to create it
  std::fflush(nullptr);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    if (pid == 0) {
      int code = 0;
      try {
        auto store = SqliteStore::open(path);
        const int64_t id =
            store->begin_run(sample_start("cpu", R"({"v":1})", {{"writer", std::to_string(p)}}));
        for (int i = 0; i < kResults; ++i) store->add_result(id, sample_result(i, 3, i % 10));
        store->finish_run(id, "pass");
      } catch (const std::exception& e) {
        std::fprintf(stderr, "writer %d: %s\n", p, e.what());
        code = 1;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
  }
  auto store = SqliteStore::open(path);
  const std::vector<RunData> runs = store->list_runs();
  ASSERT_EQ(runs.size(), size_t{kProcesses});
  std::set<std::string> writers, uuids;
  for (const RunData& summary : runs) {
    const RunData run = *store->load_run(summary.id);
    EXPECT_EQ(run.status, "pass");
    ASSERT_EQ(run.results.size(), size_t{kResults});
    for (int i = 0; i < kResults; ++i) {
      EXPECT_EQ(run.results[i].case_id, sample_result(i).case_id);
      EXPECT_EQ(run.results[i].metrics.size(), 3u);
      EXPECT_EQ(run.results[i].profiles.size(), 1u);
    }
    writers.insert(run.labels.at("writer"));
    uuids.insert(run.uuid);
    EXPECT_EQ(run.stack.id, runs[0].stack.id);
  }
  EXPECT_EQ(writers.size(), size_t{kProcesses});
  EXPECT_EQ(uuids.size(), size_t{kProcesses});
}

}  // namespace
}  // namespace h0::store
