// Row reductions: rmsnorm, layernorm and softmax, one row per task, f32 accumulation.
//   rmsnorm(x[T,D], w[D])         = x / sqrt(mean(x²) + eps) · (offset + w)
//   layernorm(x[T,D], w[D], b[D]) = (x − mean) / sqrt(var + eps) · w + b   (biased variance)
//   softmax(x[..., N])            = exp(x − max) / Σ exp(x − max), over the last axis
// Sums use `omp simd` reductions: a fixed, vectorized order, identical on every run.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"

namespace h0::backends::cpu {
namespace {

// Runs fn(row_in, row_out) for each of `rows` rows of `d` elements of x, with f32 buffers;
// the output row is rounded into `out` afterwards.
template <typename Fn>
void for_rows(const hb_tensor& x, const hb_tensor& out, int64_t rows, int64_t d, Fn fn) {
  base::parallel_for(static_cast<size_t>(rows), row_grain(d), [&](size_t, size_t b, size_t e) {
    std::vector<float> in(static_cast<size_t>(d)), res(static_cast<size_t>(d));
    for (size_t r = b; r < e; ++r) {
      const size_t first = r * static_cast<size_t>(d);
      const float* src = in.data();
      if (x.dtype == HB_F32) {
        src = static_cast<const float*>(x.data) + first;
      } else {
        load_f32(x, first, static_cast<size_t>(d), in.data());
      }
      float* dst = out.dtype == HB_F32 ? static_cast<float*>(out.data) + first : res.data();
      fn(src, dst);
      if (out.dtype != HB_F32) store_f32(res.data(), out, first, static_cast<size_t>(d));
    }
  });
}

void norm(const Operands& call, bool center) {
  const hb_tensor &x = call.in[0], &w_t = call.in[1];
  const h0p::Norm nm = h0p::norm_operands(call, center);
  const int64_t t = nm.t, d = nm.d;
  const float eps = nm.eps;
  const F32View w(w_t);
  const float* bias = nullptr;
  std::optional<F32View> b;
  if (center) {
    b.emplace(call.in[2]);
    bias = b->data();
  }
  const float* wp = w.data();
  std::vector<float> shifted;  // offset + w (Gemma's 1 + w), in f32
  if (const float offset = nm.offset; offset != 0) {
    shifted.resize(static_cast<size_t>(d));
    for (int64_t j = 0; j < d; ++j) shifted[static_cast<size_t>(j)] = offset + wp[j];
    wp = shifted.data();
  }
  const float inv_d = 1.0f / static_cast<float>(d);
  for_rows(x, call.out[0], t, d, [&](const float* row, float* y) {
    float mean = 0;
    if (center) {
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < d; ++j) s += row[j];
      mean = s * inv_d;
    }
    float sq = 0;
#pragma omp simd reduction(+ : sq)
    for (int64_t j = 0; j < d; ++j) sq += (row[j] - mean) * (row[j] - mean);
    const float inv = 1.0f / std::sqrt(sq * inv_d + eps);
    if (center) {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) y[j] = (row[j] - mean) * inv * wp[j] + bias[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) y[j] = row[j] * inv * wp[j];
    }
  });
}

}  // namespace

void rmsnorm_kernel(const Operands& call) { norm(call, false); }
void layernorm_kernel(const Operands& call) { norm(call, true); }

// rmsnorm_gated(x[T,D], w[D], z[T,D]) = x / sqrt(mean(x²) + eps) · w · silu(z).
void rmsnorm_gated_kernel(const Operands& call) {
  const hb_tensor &x = call.in[0], &w_t = call.in[1], &z_t = call.in[2];
  const h0p::Norm nm = h0p::rmsnorm_gated_operands(call);
  const int64_t t = nm.t, d = nm.d;
  const float eps = nm.eps;
  const F32View xv(x), wv(w_t), zv(z_t);
  std::vector<float> y(static_cast<size_t>(t * d));
  const float inv_d = 1.0f / static_cast<float>(d);
  base::parallel_for(static_cast<size_t>(t), row_grain(d), [&](size_t, size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      const float* row = xv.data() + r * static_cast<size_t>(d);
      const float* z = zv.data() + r * static_cast<size_t>(d);
      const float* w = wv.data();
      float* out = y.data() + r * static_cast<size_t>(d);
      float sq = 0;
#pragma omp simd reduction(+ : sq)
      for (int64_t j = 0; j < d; ++j) sq += row[j] * row[j];
      const float inv = 1.0f / std::sqrt(sq * inv_d + eps);
      for (int64_t j = 0; j < d; ++j)
        out[j] = row[j] * inv * w[j] * (z[j] / (1.0f + std::exp(-z[j])));
    }
  });
  store_all(y, call.out[0]);
}

void softmax_kernel(const Operands& call) {
  const hb_tensor& x = call.in[0];
  require(call, x.ndim >= 1 && is_float(x.dtype),
          "x must be [..., N] f32, bf16 or f16, got " + describe(x));
  require_like(call, call.out[0], "y", x);
  const int64_t n = x.shape[x.ndim - 1];
  if (n == 0) return;
  const int64_t rows = numel(x) / n;
  for_rows(x, call.out[0], rows, n, [n](const float* row, float* y) {
    float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, row[j]);
    float sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      y[j] = std::exp(row[j] - mx);
    }
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) sum += y[j];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] /= sum;
  });
}

}  // namespace h0::backends::cpu
