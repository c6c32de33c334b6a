// Weights as checkpoints store them, widened on the device (kernels/quant.inc):
//   scaled_linear(x[T,K] f32, w[N,K] f8_e4m3, w_scale[ceil(N/bn), ceil(K/bk)] f32, bias[N]?)
//     -> y[T,N]: the weight dequantized on the device (the product f8 · scale rounded once to f32,
//     as the cpu kernel and the host decomposition do), in stripes of whole block rows of at most
//     stripe_bytes() of f32 scratch, each stripe one GEMM (the vendor's where the plugin has
//     one); a weight of one stripe is one GEMM straight into y with the bias, else each stripe's
//     [T, rows] result is placed into y's columns. act_quant dynamic quantizes x per token and
//     group of block_k first. f32 calls only (device_supports): bf16 and f16 calls are
//     decomposed by the harness (the weight dequantized on the host).
//   dequantize_mxfp4(blocks[..., G, 16] u8, scales[..., G] u8) -> x[..., G·32] f32/bf16/f16.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "op_call.h"

namespace h0p {

// 256 MiB (a DeepSeek-V3 projection of up to 64M weights in one GEMM); H0_STRIPE_BYTES overrides
// it (the tests make it small to run the striped path on small weights).
int64_t stripe_bytes() {
  static const int64_t bytes = [] {
    const char* env = std::getenv("H0_STRIPE_BYTES");
    const long long v = env != nullptr ? std::atoll(env) : 0;
    return v > 0 ? static_cast<int64_t>(v) : int64_t{256} << 20;
  }();
  return bytes;
}

void scaled_linear_op(const Call& call) {
  const hb_tensor &x = call.in[0], &w = call.in[1], &w_scale = call.in[2];
  const std::string wdtype = attr_s(call.attrs, "dtype", "f8_e4m3");
  if (wdtype != "f8_e4m3") unsupported(call, "no kernels for " + wdtype + " weights");
  const ScaledLinear s = scaled_linear_operands(call, HB_F8_E4M3);  // x is f32 (f32_only)
  const int64_t t = s.t, k = s.k, n = s.n, bn = s.bn, kb = (k + s.bk - 1) / s.bk;
  hb_tensor& y = call.out[0];
  if (t == 0 || n == 0) return;
  const int ti = as_int(call, t), ki = as_int(call, k), ni = as_int(call, n),
            bni = as_int(call, bn), bki = as_int(call, s.bk);
  as_int(call, t * n);
  as_int(call, n * k);

  const void* xs = x.data;
  Scratch quantized(call.dev, s.dynamic ? static_cast<size_t>(t * k) * sizeof(float) : 0);
  if (s.dynamic) {
    call.dev.launch("act_quant_fp8", HB_F32, grid_1d(t * kb, 64),
                    {buffer(x.data), buffer(quantized.handle()), i32(ti), i32(ki), i32(bki)});
    xs = quantized.handle();
  }
  const void* bias_data = s.bias != nullptr ? s.bias->data : nullptr;
  const int has_bias = bias_data != nullptr ? 1 : 0;
  // Whole block rows per stripe, at least one block row.
  const int64_t rows =
      std::min(n, std::max<int64_t>(1, stripe_bytes() / std::max<int64_t>(1, 4 * k * bn)) * bn);
  Scratch dense(call.dev, static_cast<size_t>(rows * k) * sizeof(float));
  Scratch part(call.dev, rows < n ? static_cast<size_t>(t * rows) * sizeof(float) : 0);
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    const int64_t m = std::min(rows, n - r0);
    const int r0i = as_int(call, r0), mi = as_int(call, m);
    call.dev.launch("dequant_fp8_blocks", HB_F32, grid_1d(m * k),
                    {buffer(w.data), buffer(w_scale.data), buffer(dense.handle()), i32(r0i),
                     i32(mi), i32(ki), i32(bni), i32(bki)});
    if (m == n) {
      call.dev.gemm(HB_F32, xs, dense.handle(), bias_data, y.data, ti, ni, ki, true);
      return;
    }
    call.dev.gemm(HB_F32, xs, dense.handle(), nullptr, part.handle(), ti, mi, ki, true);
    call.dev.launch("place_columns", HB_F32, grid_1d(t * m),
                    {buffer(part.handle()), buffer(bias_data), i32(has_bias), buffer(y.data),
                     i32(ti), i32(mi), i32(ni), i32(r0i)});
  }
}

void dequantize_mxfp4_op(const Call& call) {
  const hb_tensor &blocks = call.in[0], &scales = call.in[1], &out = call.out[0];
  const int64_t groups = dequantize_mxfp4_operands(call);
  if (groups == 0) return;
  const int gi = as_int(call, groups);
  as_int(call, groups * 32);
  call.dev.launch("dequant_mxfp4", out.dtype, grid_1d(groups * 32),
                  {buffer(blocks.data), buffer(scales.data), buffer(out.data), i32(gi)});
}

}  // namespace h0p
