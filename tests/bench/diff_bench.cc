// Diff of two 100k-case runs: the comparison itself on runs in memory, and end to end through
// the store (two load_run calls + the diff). Target: <= 1 s.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "diff/diff.h"
#include "store/sqlite_store.h"

namespace h0 {
namespace {

store::RunData synthetic_run(int cases, double scale) {
  store::RunData run;
  run.suite = "big";
  run.platform = "cpu";
  run.status = "pass";
  run.results.reserve(static_cast<size_t>(cases));
  for (int i = 0; i < cases; ++i) {
    store::ResultData r;
    r.case_id = "op[case=" + std::to_string(i) + "]";
    r.check_id = "op";
    r.kind = "op";
    r.status = "pass";
    for (const char* m :
         {"max_abs_err", "max_rel_err", "mean_abs_err", "rmse", "cosine", "ratio_rel_lt_1e-3",
          "ratio_rel_lt_5e-3", "max_ulp", "nan_mismatch", "mismatch_count"}) {
      r.metrics.emplace_back(m, 1e-6 * scale);
    }
    store::ProfileData p;
    p.phase = "steady";
    p.name = r.case_id;
    for (int k = 0; k < 5; ++k) p.samples_ns.push_back((1000.0 + k) * scale);
    p.count = 5;
    r.profiles.push_back(p);
    run.results.push_back(std::move(r));
  }
  return run;
}

void BM_DiffInMemory(benchmark::State& state) {
  const int cases = static_cast<int>(state.range(0));
  const store::RunData base = synthetic_run(cases, 1.0), head = synthetic_run(cases, 1.01);
  for (auto _ : state) benchmark::DoNotOptimize(diff::diff_runs(base, head, diff::DiffOptions{}));
}
BENCHMARK(BM_DiffInMemory)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DiffInMemory)->Name("BM_DiffInMemory/Small")->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_DiffThroughStore(benchmark::State& state) {
  const int cases = static_cast<int>(state.range(0));
  const std::string path = (std::filesystem::temp_directory_path() / "h0bench-diff.db").string();
  std::filesystem::remove(path);
  int64_t ids[2];
  {
    auto db = store::SqliteStore::open(path);
    for (int k = 0; k < 2; ++k) {
      store::RunStart start;
      start.suite = "big";
      start.platform = "cpu";
      ids[k] = db->begin_run(start);
      for (const auto& r : synthetic_run(cases, 1.0 + 0.01 * k).results) db->add_result(ids[k], r);
      db->finish_run(ids[k], "pass");
    }
  }
  auto db = store::SqliteStore::open(path);
  for (auto _ : state) {
    const auto base = db->load_run(ids[0]), head = db->load_run(ids[1]);
    benchmark::DoNotOptimize(diff::diff_runs(*base, *head, diff::DiffOptions{}));
  }
}
BENCHMARK(BM_DiffThroughStore)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace h0
