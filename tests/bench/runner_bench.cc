// Per-case overhead of the harness itself: a suite of 1,000 tiny `add` cases on the reference
// backend, run in a worker process (the default) and in-process. Reported as ms per case; the
// work of each case is a few dozen floating point operations, so the time is the harness's.
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "run/runner.h"

namespace h0 {
namespace {

std::string write_files(int cases) {
  const std::string dir = (std::filesystem::temp_directory_path() / "h0bench-runner").string();
  std::filesystem::create_directories(dir);
  std::ofstream suite(dir + "/suite.yaml");
  suite
      << "suite: overhead\nchecks:\n  - id: add\n    kind: op\n    op: add\n    golden: reference\n"
         "    warmup: 1\n    repeats: 1\n    matrix:\n      shape: [";
  for (int i = 1; i <= cases; ++i) suite << (i > 1 ? ", " : "") << "[1, " << i << "]";
  suite << "]\n";
  std::ofstream(dir + "/platform.yaml") << "platform: reference\nbackend: reference\n";
  return dir;
}

void BM_CaseOverhead(benchmark::State& state, bool isolate) {
  constexpr int kCases = 1000;
  const std::string dir = write_files(kCases);
  checks::register_kinds_with_suite_parser();
  const suite::Suite s = suite::load_suite(dir + "/suite.yaml");
  const suite::Platform p = suite::load_platform(dir + "/platform.yaml");
  run::RunOptions o;
  o.isolate = isolate;
  size_t ran = 0;
  double total_ms = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    ran += run::run_suite(s, p, o, nullptr).cases.size();
    total_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["ms_per_case"] = total_ms / static_cast<double>(ran);
}

BENCHMARK_CAPTURE(BM_CaseOverhead, isolated_1000_cases, true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK_CAPTURE(BM_CaseOverhead, in_process_1000_cases, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

}  // namespace
}  // namespace h0
