// GEMM-shaped ops on OpenBLAS sgemm: matmul, linear and patch_embed (im2col + sgemm).
//   matmul(a[M,K], b[K,N])            = a·b
//   linear(x[T,K], w[N,K], bias[N]?)   = x·wᵀ + bias   (sgemm with CblasTrans on w, no copy)
//   patch_embed(pixels[C,Hi,Wi], w[D,C,P,P], b[D]?) = patches[Np, C·P·P]·w[D, C·P·P]ᵀ + b
// f32 operands go to sgemm in place; bf16/f16 operands are widened to f32 buffers first, the
// product lands in an f32 buffer and is rounded once into the output.
#include <algorithm>
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

}  // namespace

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
