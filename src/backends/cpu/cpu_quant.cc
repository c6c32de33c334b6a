// Symmetric quantization to i8, f8_e4m3 or f8_e5m2, and back.
//   quantize(x[..., N]) -> q (same shape, attr dtype), scale (f32)
//     groups: `tensor` (all of x; scale [1]), `channel` (each row of the last axis; scale
//     x.shape[:-1]), `block` (each `block` consecutive elements of a row; scale
//     x.shape[:-1] + [ceil(N / block)]). scale = f32(amax / qmax), 1 where amax == 0;
//     q = round-to-nearest-even(x / scale) with the quotient in f64, saturated to ±qmax
//     (qmax = 127, 448, 57344); f8 results are rounded through f32 like tensor::convert.
//   dequantize(q, scale) -> x = q · scale in f32, rounded once to attr out_dtype.
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
};

QuantLayout quant_layout(const OpCall& call, const hb_tensor& x, const hb_tensor& scale) {
  const std::string name = attr_s(call.attrs, "dtype", "i8");
  const QuantFormat* format = nullptr;
  for (const auto& f : kFormats) {
    if (name == f.name) format = &f;
  }
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
  } else {
    require(call, false, "attr granularity must be tensor, channel or block, got '" + gran + "'");
  }
  bool same = scale.dtype == HB_F32 && scale.ndim == want.ndim;
  for (int i = 0; same && i < want.ndim; ++i) same = scale.shape[i] == want.shape[i];
  require(
      call, same,
      "scale must be " + describe(want) + " for granularity " + gran + ", got " + describe(scale));
  return l;
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

void quantize_kernel(const OpCall& call) {
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

void dequantize_kernel(const OpCall& call) {
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
  base::parallel_for(total, grain, [&](size_t, size_t b, size_t e) {
    std::vector<float> v(e - b);
    load_f32(q, b, e - b, v.data());  // i8 and f8 widen exactly
    for (size_t i = b; i < e; ++i) {
      size_t g = 0;
      if (!l.whole_tensor) {
        const size_t row = i / static_cast<size_t>(l.n), col = i % static_cast<size_t>(l.n);
        g = row * static_cast<size_t>(l.blocks) + col / static_cast<size_t>(l.group);
      }
      v[i - b] *= scales[g];
    }
    store_f32(v.data(), out, b, e - b);
  });
}

}  // namespace h0::backends::cpu
