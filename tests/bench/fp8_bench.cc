// The cpu backend's scaled_linear (an fp8 weight with 128 x 128 block scales, widened a block row
// at a time) against the plain way, measured in the same run: dequantize the whole weight to f32
// (the backend's dequantize, granularity block2d) then cblas_sgemm. Each iteration times both on
// the same operands, so both see the same machine state.
//   ratio_vs_dequant_sgemm = (dequantize + sgemm time) / scaled_linear time
// Shapes are T x K x N: a decode step (T = 1) and a prefill chunk (T = 128) of a 4096 x 4096
// projection; BM_Fp8LinearSmall is the CI smoke shape.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <cmath>
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

void BM_Fp8Linear(benchmark::State& state) {
  const int64_t t = state.range(0), k = state.range(1), n = state.range(2), block = 128;
  const hb_backend* be = h0_cpu_backend_entry();
  if (be->init(be->self, nullptr, "{}") != HB_OK) {
    state.SkipWithError(be->last_error(be->self));
    return;
  }
  std::vector<float> x(static_cast<size_t>(t * k)), w(static_cast<size_t>(n * k));
  tensor::Philox(5, 0).fill_normal(x.data(), x.size());
  tensor::Philox(5, 1).fill_normal(w.data(), w.size());
  std::vector<uint8_t> q(w.size());
  for (size_t i = 0; i < w.size(); ++i)
    q[i] = tensor::f32_to_f8e4m3_bits(w[i] * 100.0f);  // |q| < 448 mostly
  const int64_t nb = (n + block - 1) / block, kb = (k + block - 1) / block;
  std::vector<float> scale(static_cast<size_t>(nb * kb), 0.01f / std::sqrt(float(k)));
  hb_tensor in[3] = {device(be, HB_F32, {t, k}, x), device(be, HB_F8_E4M3, {n, k}, q),
                     device(be, HB_F32, {nb, kb}, scale)};
  hb_tensor y = device(be, HB_F32, {t, n}, std::vector<float>(static_cast<size_t>(t * n)));
  hb_tensor dense = device(be, HB_F32, {n, k}, std::vector<float>(w.size()));
  std::vector<float> c(static_cast<size_t>(t * n));
  const char* linear_attrs =
      R"({"dtype": "f8_e4m3", "block_n": 128, "block_k": 128, "act_quant": "none"})";
  const char* dequant_attrs =
      R"({"dtype": "f8_e4m3", "granularity": "block2d", "block": 128, "block_rows": 128, "out_dtype": "f32"})";
  double fp8_total = 0, baseline_total = 0;
  for (auto _ : state) {
    hb_status status = HB_OK;
    baseline_total += seconds_of([&] {
      status = be->run_op(be->self, "dequantize", &in[1], 2, &dense, 1, dequant_attrs);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(t),
                  static_cast<blasint>(n), static_cast<blasint>(k), 1.0f,
                  static_cast<const float*>(in[0].data), static_cast<blasint>(k),
                  static_cast<const float*>(dense.data), static_cast<blasint>(k), 0.0f, c.data(),
                  static_cast<blasint>(n));
    });
    const double s = seconds_of([&] {
      status = status == HB_OK ? be->run_op(be->self, "scaled_linear", in, 3, &y, 1, linear_attrs)
                               : status;
    });
    if (status != HB_OK) {
      state.SkipWithError(be->last_error(be->self));
      break;
    }
    fp8_total += s;
    state.SetIterationTime(s);
  }
  const double flops = 2.0 * double(t) * double(n) * double(k) * double(state.iterations());
  state.counters["GFLOP/s"] = flops / fp8_total / 1e9;
  state.counters["weight_GB/s"] = double(n * k) * double(state.iterations()) / fp8_total / 1e9;
  state.counters["ratio_vs_dequant_sgemm"] = baseline_total / fp8_total;
  for (auto& tensor : in) be->free(be->self, tensor.data);
  be->free(be->self, y.data);
  be->free(be->self, dense.data);
}

BENCHMARK(BM_Fp8Linear)
    ->Name("BM_Fp8Linear")
    ->Args({1, 4096, 4096})
    ->Args({128, 4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fp8Linear)
    ->Name("BM_Fp8LinearSmall")
    ->Args({4, 256, 384})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace h0
