// The cpu backend's linear_widen (an f32 x against a bf16 weight as the checkpoint stores it,
// widened inside the kernel) against the two ways an f32 run could hold that weight, measured in
// the same run on the same operands:
//   ratio_vs_sgemm_f32  = cblas_sgemm on an f32 copy of the weight (what the executor ran before:
//                         every weight converted on load, twice the memory) / linear_widen
//   ratio_vs_linear_f32 = the backend's linear on that f32 copy / linear_widen
// Shapes are T x K x N of Qwen3-8B's projections: a decode step (T = 1) and a prefill chunk
// (T = 128) of its MLP's gate (4096 -> 12288) and down (12288 -> 4096); BM_LinearWidenSmall is
// the CI smoke shape.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "bench_util.h"
#include "tensor/float_bits.h"
#include "tensor/philox.h"

namespace h0 {
namespace {

using bench::device;
using bench::seconds_of;

void BM_LinearWiden(benchmark::State& state) {
  const int64_t t = state.range(0), k = state.range(1), n = state.range(2);
  const hb_backend* be = h0_cpu_backend_entry();
  if (be->init(be->self, nullptr, "{}") != HB_OK) {
    state.SkipWithError(be->last_error(be->self));
    return;
  }
  std::vector<float> x(size_t(t * k)), w(size_t(n * k));
  tensor::Philox(7, 0).fill_normal(x.data(), x.size());
  tensor::Philox(7, 1).fill_normal(w.data(), w.size());
  std::vector<uint16_t> w16(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w16[i] = tensor::f32_to_bf16_bits(w[i]);
    const uint32_t bits = uint32_t(w16[i]) << 16;
    std::memcpy(&w[i], &bits, sizeof bits);  // the f32 copy holds the same values
  }
  hb_tensor x_t = device(be, HB_F32, {t, k}, x);
  hb_tensor narrow[2] = {x_t, device(be, HB_BF16, {n, k}, w16)};
  hb_tensor wide[2] = {x_t, device(be, HB_F32, {n, k}, w)};
  hb_tensor y = device(be, HB_F32, {t, n}, std::vector<float>(size_t(t * n)));
  std::vector<float> c(size_t(t * n));
  double widen_total = 0, sgemm_total = 0, linear_total = 0;
  for (auto _ : state) {
    hb_status status = HB_OK;
    sgemm_total += seconds_of([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(t), blasint(n), blasint(k), 1.0f,
                  x.data(), blasint(k), static_cast<const float*>(wide[1].data), blasint(k), 0.0f,
                  c.data(), blasint(n));
    });
    linear_total +=
        seconds_of([&] { status = be->run_op(be->self, "linear", wide, 2, &y, 1, "{}"); });
    const double s = seconds_of([&] {
      if (status == HB_OK)
        status = be->run_op(be->self, "linear_widen", narrow, 2, &y, 1, R"({"dtype": "bf16"})");
    });
    if (status != HB_OK) {
      state.SkipWithError(be->last_error(be->self));
      break;
    }
    widen_total += s;
    state.SetIterationTime(s);
  }
  const double iters = double(state.iterations());
  state.counters["GFLOP/s"] = 2.0 * double(t * n * k) * iters / widen_total / 1e9;
  state.counters["weight_GB/s"] = 2.0 * double(n * k) * iters / widen_total / 1e9;
  state.counters["ratio_vs_sgemm_f32"] = sgemm_total / widen_total;
  state.counters["ratio_vs_linear_f32"] = linear_total / widen_total;
  for (void* p : {x_t.data, narrow[1].data, wide[1].data, y.data}) be->free(be->self, p);
}

BENCHMARK(BM_LinearWiden)
    ->Name("BM_LinearWiden")
    ->Args({1, 4096, 12288})
    ->Args({1, 12288, 4096})
    ->Args({128, 4096, 12288})
    ->Args({128, 12288, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LinearWiden)
    ->Name("BM_LinearWidenSmall")
    ->Args({1, 256, 512})
    ->Args({16, 256, 512})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace h0
