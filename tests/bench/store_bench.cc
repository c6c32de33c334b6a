// The results store's write and read paths on a file under /tmp.
//   BM_StoreIngest: one run of N results x 10 metrics through add_result (one transaction per
//   result, as the runner writes them); metric_rows_per_s = metric rows / wall time
//   (target >= 200k/s for N = 100k).
//   BM_StoreLoadRun: load_run of an N-result run with 10 metrics each (wall time).
// The Small_ variants are the CI smoke run.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "store/sqlite_store.h"

namespace h0 {
namespace {

using store::ResultData;
using store::RunStart;
using store::SqliteStore;

constexpr int kMetrics = 10;

// A fresh directory under /tmp, removed on destruction.
class TmpDir {
 public:
  TmpDir() {
    std::string tmpl = "/tmp/h0-store-bench-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TmpDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

RunStart bench_start() {
  RunStart s;
  s.suite = "ops-core";
  s.suite_file = "suites/ops.yaml";
  s.platform = "cpu";
  s.backend = "cpu";
  s.versions_json = R"({"backend":"cpu","version":"bench"})";
  return s;
}

ResultData bench_result(int i) {
  ResultData r;
  r.case_id = "rmsnorm[dtype=f32,shape=7x4096,i=" + std::to_string(i) + "]";
  r.check_id = "rmsnorm";
  r.kind = "op";
  r.params_json = R"({"dtype":"f32","shape":[7,4096]})";
  r.status = "pass";
  r.duration_s = 1e-3;
  static const char* kNames[kMetrics] = {"max_abs",   "max_rel",  "mean_abs", "rmse",
                                         "cosine",    "ulp_p50",  "ulp_p99",  "ulp_max",
                                         "nan_count", "inf_count"};
  for (int m = 0; m < kMetrics; ++m) r.metrics.emplace_back(kNames[m], 1e-6 * (i + m));
  return r;
}

// Writes a run of `n` results to `store`; returns its id.
int64_t write_run(SqliteStore& store, int n) {
  const int64_t run = store.begin_run(bench_start());
  for (int i = 0; i < n; ++i) store.add_result(run, bench_result(i));
  store.finish_run(run, "pass");
  return run;
}

void BM_StoreIngest(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    TmpDir dir;
    auto store = SqliteStore::open(dir.file("store.db"));
    state.ResumeTiming();
    const auto t0 = std::chrono::steady_clock::now();
    write_run(*store, n);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.PauseTiming();
    store.reset();
    state.ResumeTiming();
  }
  const double rows = double(n) * kMetrics * double(state.iterations());
  state.counters["metric_rows_per_s"] = rows / seconds;
  state.counters["results_per_s"] = double(n) * double(state.iterations()) / seconds;
}

void BM_StoreLoadRun(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  TmpDir dir;
  auto store = SqliteStore::open(dir.file("store.db"));
  const int64_t run = write_run(*store, n);
  for (auto _ : state) {
    const auto loaded = store->load_run(run);
    benchmark::DoNotOptimize(loaded->results.data());
  }
  state.counters["results_per_s"] =
      benchmark::Counter(double(n) * double(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_StoreIngest)->Arg(100000)->Iterations(1)->UseRealTime()->Unit(benchmark::kSecond);
BENCHMARK(BM_StoreLoadRun)->Arg(100000)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreIngest)->Name("Small_StoreIngest")->Arg(1000)->UseRealTime();
BENCHMARK(BM_StoreLoadRun)->Name("Small_StoreLoadRun")->Arg(1000)->UseRealTime();

}  // namespace
}  // namespace h0
