// GEMM-shaped ops on OpenBLAS sgemm: matmul, linear, linear_widen and patch_embed (im2col +
// sgemm).
//   matmul(a[M,K], b[K,N])            = a·b
//   linear(x[T,K], w[N,K], bias[N]?)   = x·wᵀ + bias   (sgemm with CblasTrans on w, no copy)
//   linear_widen(x, w in its stored dtype, bias?) = the same, w never widened whole: for a few
//     rows of x (decode) each row of w is widened into a buffer in cache and dotted with them;
//     for more, w is widened a tile of rows at a time (16 MB of f32 at most), each tile an sgemm
//     into its columns.
//   patch_embed(pixels[C,Hi,Wi], w[D,C,P,P], b[D]?) = patches[Np, C·P·P]·w[D, C·P·P]ᵀ + b
// f32 operands go to sgemm in place; bf16/f16 operands are widened to f32 buffers first, the
// product lands in an f32 buffer and is rounded once into the output.
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"

namespace h0::backends::cpu {
namespace {

// Broadcasts bias[n] (f32) into every row of c[m, n].
void fill_rows(float* c, const float* bias, int64_t m, int64_t n) {
  base::parallel_for(static_cast<size_t>(m), row_grain(n), [&](size_t, size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) std::copy(bias, bias + n, c + r * static_cast<size_t>(n));
  });
}

// out[m, n] = a[m, k] · op(b) (+ bias[n]), a and b in the output's float dtype.
void gemm_into(const hb_tensor& a_t, const hb_tensor& b_t, const hb_tensor* bias_t,
               bool b_transposed, int64_t m, int64_t n, int64_t k, const hb_tensor& out) {
  const F32View a(a_t), b(b_t);
  std::vector<float> owned;
  float* c = static_cast<float*>(out.data);
  if (out.dtype != HB_F32) {
    owned.resize(static_cast<size_t>(m * n));
    c = owned.data();
  }
  if (bias_t != nullptr) {
    const F32View bias(*bias_t);
    fill_rows(c, bias.data(), m, n);
  }
  sgemm(m, n, k, a.data(), b.data(), b_transposed, c, bias_t != nullptr);
  if (out.dtype != HB_F32) store_all(owned, out);
}

// Rows of x up to which linear_widen dots each widened row of w (no sgemm).
constexpr int64_t kDotRows = 4;
// The most elements of w linear_widen widens at once (16 MB of f32): a prefill's sgemm gets
// tiles wide enough to run at its full speed; a weight larger than that (an LM head) goes in
// several.
constexpr int64_t kTileElements = int64_t{1} << 22;
// Lanes of the dot products' partial sums (one vector register of f32 on AVX-512).
constexpr int kLanes = 16;

// dst[i] = the f32 value of bf16 src[i]: its 16 bits on top of a zero mantissa tail (exact).
[[gnu::always_inline]] inline void widen_bf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = uint32_t(src[i]) << 16;
    std::memcpy(dst + i, &bits, sizeof bits);
  }
}

// Σ a[i]·b[i] over n, in kLanes partial sums added pairwise at the end.
[[gnu::always_inline]] inline float dot(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  for (int l = 0; i + l < n; ++l) acc[l] += a[i + l] * b[i + l];
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) acc[l] += acc[l + width];
  }
  return acc[0];
}

// Σ_i x[r, i]·bf16(w[i]) for the M rows of x at once (each chunk of w widened once, in
// registers), in kLanes partial sums per row added pairwise at the end.
template <int M>
[[gnu::always_inline]] inline void dot_bf16(const float* x, const uint16_t* w, int64_t k,
                                            float* sums) {
  float acc[M][kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= k; i += kLanes) {
    float wv[kLanes];
    widen_bf16(w + i, wv, kLanes);
    for (int r = 0; r < M; ++r) {
      for (int l = 0; l < kLanes; ++l) acc[r][l] += x[r * k + i + l] * wv[l];
    }
  }
  for (; i < k; ++i) {
    float wv;
    widen_bf16(w + i, &wv, 1);
    for (int r = 0; r < M; ++r) acc[r][0] += x[r * k + i] * wv;
  }
  for (int r = 0; r < M; ++r) {
    for (int width = kLanes / 2; width > 0; width /= 2) {
      for (int l = 0; l < width; ++l) acc[r][l] += acc[r][l + width];
    }
    sums[r] = acc[r][0];
  }
}

// c[r, j] (+)= x[r]·w[j] for rows r < m of x and rows [begin, end) of w; `row` holds K floats
// (f16 and f32 weights are widened into it a row at a time).
[[gnu::always_inline]] inline void dot_rows_body(const hb_tensor& w, const float* x, int64_t m,
                                                 int64_t k, int64_t n, size_t begin, size_t end,
                                                 float* row, float* c, bool accumulate) {
  for (size_t j = begin; j < end; ++j) {
    float sums[kDotRows];
    if (w.dtype == HB_BF16) {
      const uint16_t* wj = static_cast<const uint16_t*>(w.data) + j * size_t(k);
      switch (m) {
        case 1:
          dot_bf16<1>(x, wj, k, sums);
          break;
        case 2:
          dot_bf16<2>(x, wj, k, sums);
          break;
        case 3:
          dot_bf16<3>(x, wj, k, sums);
          break;
        default:
          dot_bf16<4>(x, wj, k, sums);
          break;
      }
    } else {
      load_f32(w, j * size_t(k), size_t(k), row);
      for (int64_t r = 0; r < m; ++r) sums[r] = dot(x + r * k, row, k);
    }
    for (int64_t r = 0; r < m; ++r) {
      float& out = c[r * n + int64_t(j)];
      out = accumulate ? out + sums[r] : sums[r];
    }
  }
}

// One instantiation per ISA, picked once (as compare/metrics_kernel.cc does).
using DotRowsFn = void (*)(const hb_tensor&, const float*, int64_t, int64_t, int64_t, size_t,
                           size_t, float*, float*, bool);
[[gnu::target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]] void dot_rows_avx512(
    const hb_tensor& w, const float* x, int64_t m, int64_t k, int64_t n, size_t b, size_t e,
    float* row, float* c, bool acc) {
  dot_rows_body(w, x, m, k, n, b, e, row, c, acc);
}
[[gnu::target("avx2,fma")]] void dot_rows_avx2(const hb_tensor& w, const float* x, int64_t m,
                                               int64_t k, int64_t n, size_t b, size_t e, float* row,
                                               float* c, bool acc) {
  dot_rows_body(w, x, m, k, n, b, e, row, c, acc);
}
void dot_rows_baseline(const hb_tensor& w, const float* x, int64_t m, int64_t k, int64_t n,
                       size_t b, size_t e, float* row, float* c, bool acc) {
  dot_rows_body(w, x, m, k, n, b, e, row, c, acc);
}

DotRowsFn pick_dot_rows() {
  __builtin_cpu_init();
  const char* isa = std::getenv("HARNESS_ISA");
  const bool baseline = isa != nullptr && std::strcmp(isa, "baseline") == 0;
  const bool avx2 = !baseline && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2 && !(isa != nullptr && std::strcmp(isa, "avx2") == 0) &&
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return &dot_rows_avx512;
  }
  return avx2 ? &dot_rows_avx2 : &dot_rows_baseline;
}

// c[m, ldc] columns [0, n) (+)= a[m, k] · b[n, k]ᵀ, a's rows lda apart: cblas_sgemm with
// leading dimensions, small products on this thread (see sgemm in cpu_common.cc).
void sgemm_bt(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
              float* c, int64_t ldc, bool accumulate) {
  const bool small = double(m) * double(n) * double(k) < 1e6;
  const int threads = small ? openblas_get_num_threads() : 1;
  if (small && threads > 1) openblas_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(m), blasint(n), blasint(k), 1.0f, a,
              blasint(lda), b, blasint(k), accumulate ? 1.0f : 0.0f, c, blasint(ldc));
  if (small && threads > 1) openblas_set_num_threads(threads);
}

}  // namespace

void linear_widen_kernel(const Operands& call) {
  const hb_tensor &x_t = call.in[0], &w = call.in[1];
  const h0p::Gemm g = h0p::linear_widen_operands(call);
  const int64_t m = g.m, n = g.n, k = g.k;
  const hb_tensor& out = call.out[0];
  if (m == 0 || n == 0) return;
  const F32View x(x_t);
  std::vector<float> owned;
  float* c = static_cast<float*>(out.data);
  if (out.dtype != HB_F32) {
    owned.resize(size_t(m * n));
    c = owned.data();
  }
  const bool accumulate = g.bias != nullptr;
  if (accumulate) {
    const F32View bias(*g.bias);
    fill_rows(c, bias.data(), m, n);
  }
  if (w.dtype == HB_F32) {
    sgemm(m, n, k, x.data(), static_cast<const float*>(w.data), true, c, accumulate);
  } else if (m <= kDotRows) {  // decode: every weight read once, from its stored bytes
    static const DotRowsFn dot_rows = pick_dot_rows();
    base::parallel_for(size_t(n), row_grain(k), [&](size_t, size_t b, size_t e) {
      std::vector<float> row(static_cast<size_t>(k));
      dot_rows(w, x.data(), m, k, n, b, e, row.data(), c, accumulate);
    });
  } else {  // a tile of w's rows (at most kTileElements) widened, then one sgemm into its columns
    const int64_t tile = std::min<int64_t>(n, std::max<int64_t>(64, kTileElements / k));
    // Kept between calls: a fresh buffer would be zeroed and page-faulted on every call.
    static thread_local std::vector<float> scratch;
    if (scratch.size() < size_t(tile * k)) scratch.resize(size_t(tile * k));
    float* widened = scratch.data();  // the workers below see this thread's buffer by pointer
    for (int64_t j0 = 0; j0 < n; j0 += tile) {
      const int64_t rows = std::min(tile, n - j0);
      base::parallel_for(size_t(rows * k), size_t{1} << 16, [&](size_t, size_t b, size_t e) {
        if (w.dtype == HB_BF16) {
          widen_bf16(static_cast<const uint16_t*>(w.data) + size_t(j0 * k) + b, widened + b,
                     int64_t(e - b));
        } else {
          load_f32(w, size_t(j0 * k) + b, e - b, widened + b);
        }
      });
      sgemm_bt(m, rows, k, x.data(), k, widened, c + j0, n, accumulate);
    }
  }
  if (out.dtype != HB_F32) store_all(owned, out);
}

void matmul_kernel(const Operands& call) {
  const hb_tensor &a = call.in[0], &b = call.in[1];
  const h0p::Gemm g = h0p::matmul_operands(call);
  const int64_t m = g.m, n = g.n, k = g.k;
  gemm_into(a, b, nullptr, false, m, n, k, call.out[0]);
}

void linear_kernel(const Operands& call) {
  const hb_tensor &x = call.in[0], &w = call.in[1];
  const h0p::Gemm g = h0p::linear_operands(call);
  const int64_t t = g.m, n = g.n, k = g.k;
  const hb_tensor* bias = g.bias;
  gemm_into(x, w, bias, true, t, n, k, call.out[0]);
}

void patch_embed_kernel(const Operands& call) {
  const hb_tensor &pixels = call.in[0], &w = call.in[1];
  const h0p::PatchEmbed pe = h0p::patch_embed_operands(call);
  const int64_t c = pe.c, hi = pe.hi, wi = pe.wi, p = pe.p, d = pe.d;
  const hb_tensor* bias = pe.bias;
  const int64_t cols = wi / p, np = pe.np, cpp = c * p * p;

  // im2col: patch (r, q) becomes row r*cols + q, laid out (channel, dy, dx) like w's last dims.
  const F32View px(pixels);
  std::vector<float> patches(static_cast<size_t>(np * cpp));
  base::parallel_for(static_cast<size_t>(np), row_grain(cpp), [&](size_t, size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const int64_t r = static_cast<int64_t>(i) / cols, q = static_cast<int64_t>(i) % cols;
      float* dst = patches.data() + i * static_cast<size_t>(cpp);
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t dy = 0; dy < p; ++dy) {
          const float* src = px.data() + (ch * hi + r * p + dy) * wi + q * p;
          std::copy(src, src + p, dst + (ch * p + dy) * p);
        }
      }
    }
  });
  hb_tensor patch_t{patches.data(), HB_F32, 2, {np, cpp}};
  hb_tensor w_t = w;  // w[D, C, P, P] seen as [D, C·P·P]
  w_t.ndim = 2;
  w_t.shape[0] = d;
  w_t.shape[1] = cpp;
  gemm_into(patch_t, w_t, bias, true, np, d, cpp, call.out[0]);
}

}  // namespace h0::backends::cpu
