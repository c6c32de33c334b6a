// The cpu backend's matmul and linear (f32) against cblas_sgemm called directly on the same
// operands, measured in the same run: each iteration times one backend run_op and one bare
// sgemm, so both see the same machine state.
//   ratio_vs_sgemm = sgemm time / backend time (target >= 0.9: the backend adds only dispatch
//   and checks around the same OpenBLAS call)
// Shapes are M x K x N: a prefill projection, an MLP up-projection, a decode step.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <functional>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "tensor/philox.h"

namespace h0 {
namespace {

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A backend-allocated f32 tensor filled with normal draws.
hb_tensor device_f32(const hb_backend* be, std::initializer_list<int64_t> shape, uint64_t stream) {
  hb_tensor t{};
  t.dtype = HB_F32;
  int64_t n = 1;
  for (int64_t d : shape) n *= (t.shape[t.ndim++] = d);
  std::vector<float> host(static_cast<size_t>(n));
  tensor::Philox(3, stream).fill_normal(host.data(), host.size());
  be->alloc(be->self, host.size() * sizeof(float), &t.data);
  be->copy_to_device(be->self, t.data, host.data(), host.size() * sizeof(float));
  return t;
}

// `linear`: w is [N, K] and the product is x·wᵀ; else `matmul` with b [K, N].
void BM_GemmVsSgemm(benchmark::State& state, bool linear) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const hb_backend* be = h0_cpu_backend_entry();
  if (be->init(be->self, nullptr, "{}") != HB_OK) {
    state.SkipWithError(be->last_error(be->self));
    return;
  }
  hb_tensor in[2] = {device_f32(be, {m, k}, 0),
                     linear ? device_f32(be, {n, k}, 1) : device_f32(be, {k, n}, 1)};
  hb_tensor out = device_f32(be, {m, n}, 2);
  std::vector<float> c(static_cast<size_t>(m * n));
  const auto* a = static_cast<const float*>(in[0].data);
  const auto* b = static_cast<const float*>(in[1].data);
  const char* op = linear ? "linear" : "matmul";
  double backend_total = 0, sgemm_total = 0;
  for (auto _ : state) {
    sgemm_total += seconds_of([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, linear ? CblasTrans : CblasNoTrans,
                  static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f,
                  a, static_cast<blasint>(k), b, static_cast<blasint>(linear ? k : n), 0.0f,
                  c.data(), static_cast<blasint>(n));
    });
    hb_status status = HB_OK;
    const double t = seconds_of([&] { status = be->run_op(be->self, op, in, 2, &out, 1, "{}"); });
    if (status != HB_OK) {
      state.SkipWithError(be->last_error(be->self));
      break;
    }
    backend_total += t;
    state.SetIterationTime(t);
  }
  const double flops =
      2.0 * static_cast<double>(m * n * k) * static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = flops / backend_total / 1e9;
  state.counters["sgemm_GFLOP/s"] = flops / sgemm_total / 1e9;
  state.counters["ratio_vs_sgemm"] = sgemm_total / backend_total;
  for (auto& t : in) be->free(be->self, t.data);
  be->free(be->self, out.data);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "K", "N"});
  b->Args({512, 4096, 4096});
  b->Args({128, 4096, 11008});
  b->Args({1, 4096, 4096});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_GemmVsSgemm, matmul, false)->Apply(shapes);
BENCHMARK_CAPTURE(BM_GemmVsSgemm, linear, true)->Apply(shapes);

// A small shape for the smoke run (bench_smoke's --benchmark_filter=Small).
BENCHMARK_CAPTURE(BM_GemmVsSgemm, Small_linear, true)->Args({16, 256, 256})->UseManualTime();

}  // namespace
}  // namespace h0
