// The cpu backend's gated_delta_rule prefill (one call over T tokens: the chunked form) against
// the same work done as the token-by-token recurrence (T calls of one token, the state carried:
// what a decode loop does), measured in the same run on the same operands.
//   tokens/s             = T / prefill time
//   ratio_vs_recurrence  = (T one-token calls) / (one T-token call)
// Qwen3-Next-80B's linear layer: 16 key heads of 128, 32 value heads of 128 (GVA); the issue's
// target shape is 4096 tokens with 16 value heads of 128 (Hk = Hv = 16). BM_DeltaRuleSmall is
// the CI smoke shape.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
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

hb_tensor device(const hb_backend* be, std::initializer_list<int64_t> shape, const float* host) {
  hb_tensor t{};
  t.dtype = HB_F32;
  size_t n = 1;
  for (int64_t d : shape) t.shape[t.ndim++] = d, n *= size_t(d);
  be->alloc(be->self, n * sizeof(float), &t.data);
  if (host != nullptr) be->copy_to_device(be->self, t.data, host, n * sizeof(float));
  return t;
}

// Rows [r, r + 1) of a [T, ...] device tensor (a view: no copy).
hb_tensor row(const hb_tensor& t, int64_t r) {
  hb_tensor v = t;
  size_t inner = 1;
  for (int i = 1; i < t.ndim; ++i) inner *= size_t(t.shape[i]);
  v.shape[0] = 1;
  v.data = static_cast<float*>(t.data) + size_t(r) * inner;
  return v;
}

void BM_DeltaRule(benchmark::State& state) {
  const int64_t t = state.range(0), hk = state.range(1), hv = state.range(2), d = state.range(3);
  const hb_backend* be = h0_cpu_backend_entry();
  if (be->init(be->self, nullptr, "{}") != HB_OK) {
    state.SkipWithError(be->last_error(be->self));
    return;
  }
  auto draw = [](size_t n, uint64_t stream, float lo, float hi) {
    std::vector<float> v(n);
    tensor::Philox(11, stream).fill_normal(v.data(), n);
    if (lo != hi) {
      for (auto& x : v) x = lo + (hi - lo) / (1.0f + std::exp(-x));  // squashed into (lo, hi)
    }
    return v;
  };
  const auto q = draw(size_t(t * hk * d), 0, 0, 0), k = draw(size_t(t * hk * d), 1, 0, 0),
             v = draw(size_t(t * hv * d), 2, 0, 0), g = draw(size_t(t * hv), 3, -3, 0),
             beta = draw(size_t(t * hv), 4, 0, 1);
  const std::vector<float> zeros(size_t(hv * d * d), 0.0f);
  hb_tensor in[6] = {device(be, {t, hk, d}, q.data()), device(be, {t, hk, d}, k.data()),
                     device(be, {t, hv, d}, v.data()), device(be, {t, hv}, g.data()),
                     device(be, {t, hv}, beta.data()), device(be, {hv, d, d}, zeros.data())};
  hb_tensor out[2] = {device(be, {t, hv, d}, nullptr), device(be, {hv, d, d}, nullptr)};
  hb_tensor states[2] = {device(be, {hv, d, d}, nullptr), device(be, {hv, d, d}, nullptr)};
  const char* attrs = "{}";
  double prefill_total = 0, recurrent_total = 0;
  for (auto _ : state) {
    hb_status status = HB_OK;
    recurrent_total += seconds_of([&] {
      be->copy_to_device(be->self, states[0].data, zeros.data(), zeros.size() * sizeof(float));
      for (int64_t r = 0; r < t && status == HB_OK; ++r) {
        hb_tensor step_in[6] = {row(in[0], r), row(in[1], r), row(in[2], r),
                                row(in[3], r), row(in[4], r), states[r % 2]};
        hb_tensor step_out[2] = {row(out[0], r), states[(r + 1) % 2]};
        status = be->run_op(be->self, "gated_delta_rule", step_in, 6, step_out, 2, attrs);
      }
    });
    const double s = seconds_of([&] {
      status =
          status == HB_OK ? be->run_op(be->self, "gated_delta_rule", in, 6, out, 2, attrs) : status;
    });
    if (status != HB_OK) {
      state.SkipWithError(be->last_error(be->self));
      break;
    }
    prefill_total += s;
    state.SetIterationTime(s);
  }
  const double iters = double(state.iterations());
  state.counters["tokens/s"] = double(t) * iters / prefill_total;
  state.counters["recurrence_tokens/s"] = double(t) * iters / recurrent_total;
  state.counters["ratio_vs_recurrence"] = recurrent_total / prefill_total;
  for (auto& x : in) be->free(be->self, x.data);
  for (auto& x : out) be->free(be->self, x.data);
  for (auto& x : states) be->free(be->self, x.data);
}

BENCHMARK(BM_DeltaRule)
    ->Name("BM_DeltaRule")
    ->Args({4096, 16, 16, 128})
    ->Args({4096, 16, 32, 128})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DeltaRule)
    ->Name("BM_DeltaRuleSmall")
    ->Args({130, 2, 4, 32})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace h0
