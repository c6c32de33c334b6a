// Symmetric quantization to i8, f8_e4m3 or f8_e5m2, and back.
//   quantize(x[..., N]) -> q (same shape, attr dtype), scale (f32)
//     groups: `tensor` (all of x; scale [1]), `channel` (each row of the last axis; scale
//     x.shape[:-1]), `block` (each `block` consecutive elements of a row; scale
//     x.shape[:-1] + [ceil(N / block)]). scale = f32(amax / qmax), 1 where amax == 0;
//     q = round-to-nearest-even(x / scale) with the quotient in f64, saturated to ±qmax
//     (qmax = 127, 448, 57344); f8 results are rounded through f32 like tensor::convert.
//     `block2d` (a block_rows × block tile of a 2-D x; scale [ceil(M / block_rows), ceil(N /
//     block)]).
//   dequantize(q, scale) -> x = q · scale in f32, rounded once to attr out_dtype.
//   scaled_linear(x[T,K], w[N,K], w_scale, bias[N]?) -> y = x'·(w ⊙ w_scale)ᵀ + bias: the weight
//     widened to f32 on the fly (a 256-entry table per byte, one scale per block run), never
//     whole. Up to kFusedTokens tokens: each w row widened into a K-float buffer and dotted with
//     every token (a decode step reads the weight once, 1 byte per element); more tokens: groups
//     of block rows (~16 MB of f32) widened and multiplied by OpenBLAS sgemm. With
//     act_quant dynamic, x is first quantized to f8_e4m3 per token in groups of block_k and
//     taken back (x' = q · s in f32), as quantize granularity block does.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"
#include "tensor/float_bits.h"

namespace h0::backends::cpu {
namespace {

struct QuantFormat {
  const char* name;
  hb_dtype dtype;
  double qmax;
};
constexpr QuantFormat kFormats[] = {
    {"i8", HB_I8, 127.0}, {"f8_e4m3", HB_F8_E4M3, 448.0}, {"f8_e5m2", HB_F8_E5M2, 57344.0}};

// How x[..., N] splits into scale groups: `rows` rows of `n`, each in `blocks` groups of
// `group` elements (the last one possibly shorter); `tensor` is one row-spanning group.
struct QuantLayout {
  QuantFormat format;
  int64_t rows, n, group, blocks;
  bool whole_tensor;
  int64_t block_rows = 1;  // rows sharing a scale (block2d), else 1

  size_t scale_index(size_t row, size_t col) const {
    if (whole_tensor) return 0;
    return (row / static_cast<size_t>(block_rows)) * static_cast<size_t>(blocks) +
           col / static_cast<size_t>(group);
  }
};

const QuantFormat* find_format(const std::string& name) {
  for (const auto& f : kFormats) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

QuantLayout quant_layout(const Operands& call, const hb_tensor& x, const hb_tensor& scale) {
  const std::string name = attr_s(call.attrs, "dtype", "i8");
  const QuantFormat* format = find_format(name);
  require(call, format != nullptr, "attr dtype must be i8, f8_e4m3 or f8_e5m2, got '" + name + "'");
  require(call, x.ndim >= 1, "the tensor must be [..., N], got " + describe(x));
  const std::string gran = attr_s(call.attrs, "granularity", "tensor");
  QuantLayout l{*format, 0, x.shape[x.ndim - 1], 0, 1, gran == "tensor"};
  l.rows = l.n == 0 ? 0 : numel(x) / l.n;
  hb_tensor want{nullptr, HB_F32, x.ndim - 1, {}};
  std::copy(x.shape, x.shape + x.ndim - 1, want.shape);
  if (gran == "tensor") {
    want.ndim = 1;
    want.shape[0] = 1;
  } else if (gran == "channel") {
    l.group = l.n;
  } else if (gran == "block") {
    l.group = attr_i(call.attrs, "block", 128);
    require(call, l.group > 0, "attr block must be positive, got " + std::to_string(l.group));
    l.blocks = (l.n + l.group - 1) / l.group;
    want.shape[want.ndim++] = l.blocks;
  } else if (gran == "block2d") {
    require(call, x.ndim == 2, "granularity block2d needs a 2-D tensor, got " + describe(x));
    l.group = attr_i(call.attrs, "block", 128);
    l.block_rows = attr_i(call.attrs, "block_rows", 128);
    require(call, l.group > 0 && l.block_rows > 0, "attrs block and block_rows must be positive");
    l.blocks = (l.n + l.group - 1) / l.group;
    want.shape[0] = (l.rows + l.block_rows - 1) / l.block_rows;
    want.shape[want.ndim++] = l.blocks;
  } else {
    require(call, false,
            "attr granularity must be tensor, channel, block or block2d, got '" + gran + "'");
  }
  bool same = scale.dtype == HB_F32 && scale.ndim == want.ndim;
  for (int i = 0; same && i < want.ndim; ++i) same = scale.shape[i] == want.shape[i];
  require(
      call, same,
      "scale must be " + describe(want) + " for granularity " + gran + ", got " + describe(scale));
  return l;
}

// The 256 values of a one-byte quantized dtype as f32 (i8, f8_e4m3, f8_e5m2): exact.
struct ByteTable {
  float value[256];
  explicit ByteTable(hb_dtype dtype) {
    for (int b = 0; b < 256; ++b) {
      const auto bits = static_cast<uint8_t>(b);
      value[b] = dtype == HB_I8        ? static_cast<float>(static_cast<int8_t>(bits))
                 : dtype == HB_F8_E4M3 ? tensor::f8e4m3_bits_to_f32(bits)
                                       : tensor::f8e5m2_bits_to_f32(bits);
    }
  }
};

const ByteTable& table_of(hb_dtype dtype) {
  static const ByteTable i8(HB_I8), e4m3(HB_F8_E4M3), e5m2(HB_F8_E5M2);
  return dtype == HB_I8 ? i8 : dtype == HB_F8_E4M3 ? e4m3 : e5m2;
}

float amax_of(const float* v, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
  return m;
}

float scale_for(float amax, double qmax) {
  return amax == 0 ? 1.0f : static_cast<float>(static_cast<double>(amax) / qmax);
}

// Quantizes v[0, n) with `scale` into elements [first, first + n) of q.
void quantize_run(const float* v, int64_t n, float scale, const QuantFormat& f, const hb_tensor& q,
                  size_t first) {
  for (int64_t i = 0; i < n; ++i) {
    const double r =
        std::clamp(static_cast<double>(v[i]) / static_cast<double>(scale), -f.qmax, f.qmax);
    const size_t at = first + static_cast<size_t>(i);
    if (f.dtype == HB_I8) {
      static_cast<int8_t*>(q.data)[at] = static_cast<int8_t>(std::nearbyint(r));
    } else if (f.dtype == HB_F8_E4M3) {
      static_cast<uint8_t*>(q.data)[at] = tensor::f32_to_f8e4m3_bits(static_cast<float>(r));
    } else {
      static_cast<uint8_t*>(q.data)[at] = tensor::f32_to_f8e5m2_bits(static_cast<float>(r));
    }
  }
}

}  // namespace

void quantize_kernel(const Operands& call) {
  const hb_tensor &x = call.in[0], &q = call.out[0], &scale_t = call.out[1];
  const QuantLayout l = quant_layout(call, x, scale_t);
  require(call, q.dtype == l.format.dtype,
          "q must be " + std::string(l.format.name) + ", got " + describe(q));
  bool same = q.ndim == x.ndim;
  for (int i = 0; same && i < x.ndim; ++i) same = q.shape[i] == x.shape[i];
  require(call, same, "q must have the shape of x " + describe(x) + ", got " + describe(q));
  auto* scales = static_cast<float*>(scale_t.data);
  const F32View xf(x);
  if (l.whole_tensor) {
    const size_t total = static_cast<size_t>(numel(x)), grain = size_t{1} << 16;
    std::vector<float> partial((total + grain - 1) / grain, 0.0f);
    base::parallel_for(total, grain, [&](size_t c, size_t b, size_t e) {
      partial[c] = amax_of(xf.data() + b, static_cast<int64_t>(e - b));
    });
    const float s =
        scale_for(amax_of(partial.data(), static_cast<int64_t>(partial.size())), l.format.qmax);
    scales[0] = s;
    base::parallel_for(total, grain, [&](size_t, size_t b, size_t e) {
      quantize_run(xf.data() + b, static_cast<int64_t>(e - b), s, l.format, q, b);
    });
    return;
  }
  if (l.block_rows > 1) {  // block2d: a scale per tile, over block_rows rows
    const size_t tiles_down = static_cast<size_t>((l.rows + l.block_rows - 1) / l.block_rows);
    base::parallel_for(tiles_down, 1, [&](size_t, size_t b, size_t e) {
      for (size_t tr = b; tr < e; ++tr) {
        const int64_t r0 = static_cast<int64_t>(tr) * l.block_rows,
                      r1 = std::min(l.rows, r0 + l.block_rows);
        for (int64_t blk = 0; blk < l.blocks; ++blk) {
          const int64_t start = blk * l.group, len = std::min(l.group, l.n - start);
          float amax = 0;
          for (int64_t r = r0; r < r1; ++r)
            amax = std::max(amax, amax_of(xf.data() + r * l.n + start, len));
          const float s = scale_for(amax, l.format.qmax);
          scales[tr * static_cast<size_t>(l.blocks) + static_cast<size_t>(blk)] = s;
          for (int64_t r = r0; r < r1; ++r) {
            const size_t first = static_cast<size_t>(r * l.n + start);
            quantize_run(xf.data() + first, len, s, l.format, q, first);
          }
        }
      }
    });
    return;
  }
  base::parallel_for(static_cast<size_t>(l.rows), row_grain(l.n), [&](size_t, size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      for (int64_t blk = 0; blk < l.blocks; ++blk) {
        const int64_t start = blk * l.group, len = std::min(l.group, l.n - start);
        const size_t first = r * static_cast<size_t>(l.n) + static_cast<size_t>(start);
        const float s = scale_for(amax_of(xf.data() + first, len), l.format.qmax);
        scales[r * static_cast<size_t>(l.blocks) + static_cast<size_t>(blk)] = s;
        quantize_run(xf.data() + first, len, s, l.format, q, first);
      }
    }
  });
}

void dequantize_kernel(const Operands& call) {
  const hb_tensor &q = call.in[0], &scale_t = call.in[1], &out = call.out[0];
  const QuantLayout l = quant_layout(call, q, scale_t);
  require(call, q.dtype == l.format.dtype,
          "q must be " + std::string(l.format.name) + ", got " + describe(q));
  bool same = out.ndim == q.ndim;
  for (int i = 0; same && i < q.ndim; ++i) same = out.shape[i] == q.shape[i];
  require(call, same && is_float(out.dtype),
          "x must be f32, bf16 or f16 with the shape of q, got " + describe(out));
  const auto* scales = static_cast<const float*>(scale_t.data);
  const size_t total = static_cast<size_t>(numel(q));
  const size_t grain = static_cast<size_t>(std::max<int64_t>(1, l.n)) * row_grain(l.n);
  const float* table = table_of(q.dtype).value;  // i8 and f8 widen exactly
  const auto* bytes = static_cast<const uint8_t*>(q.data);
  const size_t n = static_cast<size_t>(l.n),
               group = l.whole_tensor ? n : static_cast<size_t>(l.group);
  base::parallel_for(total, grain, [&](size_t, size_t b, size_t e) {  // whole rows
    std::vector<float> v(e - b);
    for (size_t row = b / std::max<size_t>(n, 1); row * n < e; ++row) {
      for (size_t col = 0; col < n; col += group) {
        const float scale = scales[l.scale_index(row, col)];
        for (size_t i = row * n + col, end = row * n + std::min(n, col + group); i < end; ++i) {
          v[i - b] = table[bytes[i]] * scale;
        }
      }
    }
    store_f32(v.data(), out, b, e - b);
  });
}

namespace {

constexpr int64_t kFusedTokens = 8;

// x[T,K] as f32, quantized per token in groups of `block` to f8_e4m3 and taken back (act_quant
// dynamic), in place.
void fake_quantize_activations(std::vector<float>* x, int64_t t, int64_t k, int64_t block) {
  const QuantFormat& f8 = kFormats[1];
  base::parallel_for(static_cast<size_t>(t), row_grain(k), [&](size_t, size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      float* row = x->data() + r * static_cast<size_t>(k);
      for (int64_t start = 0; start < k; start += block) {
        const int64_t len = std::min(block, k - start);
        const float s = scale_for(amax_of(row + start, len), f8.qmax);
        for (int64_t j = start; j < start + len; ++j) {
          const double v =
              std::clamp(static_cast<double>(row[j]) / static_cast<double>(s), -f8.qmax, f8.qmax);
          row[j] =
              tensor::f8e4m3_bits_to_f32(tensor::f32_to_f8e4m3_bits(static_cast<float>(v))) * s;
        }
      }
    }
  });
}

// Rows [r0, r1) of w[N,K] as f32 into dst (row-major, K wide): w · w_scale, a block of bk
// columns at a time under one scale. The product is f32, as dequantize's.
void widen_rows(const hb_tensor& w, const float* scales, int64_t k, int64_t bn, int64_t bk,
                int64_t r0, int64_t r1, float* dst) {
  const int64_t kb = (k + bk - 1) / bk;
  const float* table = table_of(w.dtype).value;
  const auto* q = static_cast<const uint8_t*>(w.data);
  for (int64_t r = r0; r < r1; ++r) {
    float* row = dst + (r - r0) * k;
    const uint8_t* src = q + r * k;
    const float* s = scales + (r / bn) * kb;
    for (int64_t c = 0; c < kb; ++c) {
      const float scale = s[c];
      for (int64_t j = c * bk, end = std::min(k, j + bk); j < end; ++j)
        row[j] = table[src[j]] * scale;
    }
  }
}

// Σ a[j]·b[j] in f32 with eight partial sums (a fixed order: the same bits on every run).
float dot(const float* a, const float* b, int64_t k) {
  float acc[8] = {};
  int64_t j = 0;
  for (; j + 8 <= k; j += 8) {
    for (int i = 0; i < 8; ++i) acc[i] += a[j + i] * b[j + i];
  }
  for (; j < k; ++j) acc[0] += a[j] * b[j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

void scaled_linear_kernel(const Operands& call) {
  const hb_tensor &x = call.in[0], &w = call.in[1], &w_scale = call.in[2];
  const std::string wname = attr_s(call.attrs, "dtype", "f8_e4m3");
  const QuantFormat* format = find_format(wname);
  require(call, format != nullptr,
          "attr dtype must be f8_e4m3, f8_e5m2 or i8, got '" + wname + "'");
  const h0p::ScaledLinear s = scaled_linear_operands(call, format->dtype);
  const int64_t t = s.t, k = s.k, n = s.n, bn = s.bn, bk = s.bk;
  const hb_tensor* bias = s.bias;
  const hb_tensor& out = call.out[0];

  std::vector<float> xs(static_cast<size_t>(t * k));
  load_f32(x, 0, xs.size(), xs.data());
  if (s.dynamic) fake_quantize_activations(&xs, t, k, bk);
  std::vector<float> owned;
  float* y = static_cast<float*>(out.data);
  if (out.dtype != HB_F32) {
    owned.resize(static_cast<size_t>(t * n));
    y = owned.data();
  }
  std::vector<float> bias_f(bias != nullptr ? static_cast<size_t>(n) : 0);
  if (bias != nullptr) load_f32(*bias, 0, bias_f.size(), bias_f.data());
  const auto* scales = static_cast<const float*>(w_scale.data);

  if (t <= kFusedTokens) {
    base::parallel_for(static_cast<size_t>(n), row_grain(k * t), [&](size_t, size_t b, size_t e) {
      std::vector<float> row(static_cast<size_t>(k));
      for (size_t r = b; r < e; ++r) {
        widen_rows(w, scales, k, bn, bk, static_cast<int64_t>(r), static_cast<int64_t>(r) + 1,
                   row.data());
        for (int64_t i = 0; i < t; ++i) {
          y[i * n + static_cast<int64_t>(r)] =
              dot(xs.data() + i * k, row.data(), k) + (bias ? bias_f[r] : 0.0f);
        }
      }
    });
  } else {
    // Block rows in groups of about 4M widened elements (16 MB), each group one sgemm into a
    // [T, rows] buffer that is then placed into y's columns.
    const int64_t group =
        std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(1, k * bn)) * bn;
    std::vector<float> wide, part;
    for (int64_t r0 = 0; r0 < n; r0 += group) {
      const int64_t rows = std::min(group, n - r0);
      wide.resize(static_cast<size_t>(rows * k));
      base::parallel_for(static_cast<size_t>(rows), row_grain(k), [&](size_t, size_t b, size_t e) {
        widen_rows(w, scales, k, bn, bk, r0 + static_cast<int64_t>(b), r0 + static_cast<int64_t>(e),
                   wide.data() + b * static_cast<size_t>(k));
      });
      part.resize(static_cast<size_t>(t * rows));
      sgemm(t, rows, k, xs.data(), wide.data(), true, part.data(), false);
      for (int64_t i = 0; i < t; ++i) {
        for (int64_t c = 0; c < rows; ++c) {
          y[i * n + r0 + c] = part[static_cast<size_t>(i * rows + c)] +
                              (bias ? bias_f[static_cast<size_t>(r0 + c)] : 0.0f);
        }
      }
    }
  }
  if (out.dtype != HB_F32) store_all(owned, out);
}

}  // namespace h0::backends::cpu

namespace h0::backends::cpu {

// dequantize_mxfp4(blocks[..., G, 16] u8, scales[..., G] u8) -> x[..., G·32]: two E2M1 values per
// byte (low nibble first), times 2^(scale − 127) per 32; exact in f32 before the one store.
void dequantize_mxfp4_kernel(const Operands& call) {
  static constexpr float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  const hb_tensor &blocks = call.in[0], &scales = call.in[1], &out = call.out[0];
  const size_t groups = static_cast<size_t>(dequantize_mxfp4_operands(call));
  const auto* b = static_cast<const uint8_t*>(blocks.data);
  const auto* s = static_cast<const uint8_t*>(scales.data);
  base::parallel_for(groups, 4096, [&](size_t, size_t first, size_t end) {
    std::vector<float> v((end - first) * 32);
    for (size_t g = first; g < end; ++g) {
      const float scale = std::ldexp(1.0f, int(s[g]) - 127);
      for (size_t i = 0; i < 16; ++i) {
        const uint8_t byte = b[g * 16 + i];
        v[(g - first) * 32 + 2 * i] = kE2M1[byte & 0xF] * scale;
        v[(g - first) * 32 + 2 * i + 1] = kE2M1[byte >> 4] * scale;
      }
    }
    store_f32(v.data(), out, first * 32, v.size());
  });
}

}  // namespace h0::backends::cpu
