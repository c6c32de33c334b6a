// Compare throughput against a STREAM-style copy of the same bytes, measured in the same run:
// each iteration times one copy and one compare, so both see the same machine state.
//   ratio_vs_copy = copy time / compare time for equal byte counts (target >= 0.7)
// Bytes counted: compare reads actual + expected; the copy reads one buffer of that total
// size's half and writes the other half (STREAM counts copy as 2 x array bytes).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <functional>

#include "base/parallel.h"
#include "compare/metrics.h"
#include "compare/model_compare.h"
#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace h0 {
namespace {

using tensor::DType;
using tensor::Tensor;

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// STREAM copy on the same worker threads the compare uses.
void stream_copy(const std::byte* src, std::byte* dst, size_t bytes) {
  base::parallel_for(bytes, size_t{1} << 22,
                     [&](size_t, size_t b, size_t e) { std::memcpy(dst + b, src + b, e - b); });
}

// Each iteration: one STREAM copy of `bytes_per_input` and one `compare` (timed, the manual time);
// the counters: GB/s of both over two inputs' bytes, and their ratio.
void measure_vs_copy(benchmark::State& state, size_t bytes_per_input,
                     const std::function<void()>& compare) {
  Tensor copy_src = Tensor::zeros(DType::kU8, {int64_t(bytes_per_input)});
  Tensor copy_dst = Tensor::zeros(DType::kU8, {int64_t(bytes_per_input)});
  double copy_total = 0, compare_total = 0;
  for (auto _ : state) {
    copy_total += seconds_of([&] {
      stream_copy(static_cast<const std::byte*>(copy_src.data()),
                  static_cast<std::byte*>(copy_dst.mutable_data()), bytes_per_input);
    });
    const double t = seconds_of(compare);
    compare_total += t;
    state.SetIterationTime(t);
  }
  const double bytes =
      2.0 * static_cast<double>(bytes_per_input) * static_cast<double>(state.iterations());
  state.counters["GB/s"] = bytes / compare_total / 1e9;
  state.counters["copy_GB/s"] = bytes / copy_total / 1e9;
  state.counters["ratio_vs_copy"] = copy_total / compare_total;
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

void BM_CompareVsCopy(benchmark::State& state, DType dtype, size_t bytes_per_input,
                      bool with_bias = false) {
  const int64_t n = static_cast<int64_t>(bytes_per_input / tensor::dtype_size(dtype));
  Tensor e32 = Tensor::zeros(DType::kF32, {n}), noise = Tensor::zeros(DType::kF32, {n});
  tensor::Philox(1, 0).fill_normal(e32.mutable_data_as<float>(), static_cast<size_t>(n));
  tensor::Philox(1, 1).fill_normal(noise.mutable_data_as<float>(), static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    noise.mutable_data_as<float>()[i] =
        e32.data_as<float>()[i] * (1 + 1e-3f * noise.data_as<float>()[i]);
  const Tensor expected = e32.to(dtype), actual = noise.to(dtype);
  const compare::ElementTolerance tol{1.6e-2, 1e-5, true};
  measure_vs_copy(state, bytes_per_input, [&] {
    benchmark::DoNotOptimize(compare::compute_metrics(actual, expected, tol, with_bias));
  });
}

constexpr size_t kMiB = size_t{1} << 20;
BENCHMARK_CAPTURE(BM_CompareVsCopy, f32_64MiB, DType::kF32, 64 * kMiB)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompareVsCopy, bf16_64MiB, DType::kBF16, 64 * kMiB)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompareVsCopy, f16_64MiB, DType::kF16, 64 * kMiB)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
// The same with the rounding bias (what an op case of a 16-bit output pays).
BENCHMARK_CAPTURE(BM_CompareVsCopy, bf16_64MiB_bias, DType::kBF16, 64 * kMiB, true)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompareVsCopy, Small_f32_1MiB, DType::kF32, 1 * kMiB)->UseManualTime();

// A long-context model case's logits compare (compare::compare_logits: cosine, errors, KL of the
// softmaxes, top-1 and top-5 per position) over [positions, vocab] f32, against the STREAM copy of
// the same bytes: at 32,768 positions x 1,024 (the tiny vocabulary) 128 MiB per side.
void BM_CompareLogitsVsCopy(benchmark::State& state) {
  const int64_t positions = state.range(0), vocab = state.range(1), n = positions * vocab;
  Tensor golden = Tensor::zeros(DType::kF32, {positions, vocab});
  Tensor ours = Tensor::zeros(DType::kF32, {positions, vocab});
  tensor::Philox(2, 0).fill_normal(golden.mutable_data_as<float>(), static_cast<size_t>(n));
  tensor::Philox(2, 1).fill_normal(ours.mutable_data_as<float>(), static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ours.mutable_data_as<float>()[i] =
        golden.data_as<float>()[i] + 1e-4f * ours.data_as<float>()[i];
  measure_vs_copy(state, size_t(n) * sizeof(float),
                  [&] { benchmark::DoNotOptimize(compare::compare_logits(ours, golden)); });
}
BENCHMARK(BM_CompareLogitsVsCopy)
    ->Args({32768, 1024})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CompareLogitsVsCopy)
    ->Name("Small_CompareLogitsVsCopy")
    ->Args({64, 1024})
    ->UseManualTime();

}  // namespace
}  // namespace h0
