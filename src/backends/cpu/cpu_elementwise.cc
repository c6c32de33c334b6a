// Element-wise ops and the embedding lookup.
//   add(a, b) = a + b          mul(a, b) = a · b          (same shapes, any rank)
//   silu(x) = x · sigmoid(x)    sigmoid(x) = 1 / (1 + e^−x)    gelu(x) = 0.5x(1 + erf(x/√2)), or
//   with approximate = "tanh" 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))    swiglu(gate[T,F], up[T,F])
//   = silu(gate) · up embedding(ids[T], table[V,D]) = table[ids[t]] (a row copy: exact in every
//   dtype), times the f32 value of attr scale when it is not 1 (rounded once into the table's
//   dtype)
// Elements are processed in blocks: narrow inputs are widened into a stack buffer, the block
// is computed in f32 and rounded into the output.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"

namespace h0::backends::cpu {
namespace {

constexpr size_t kBlock = 2048;             // elements widened at a time
constexpr size_t kGrain = size_t{1} << 16;  // elements per parallel_for chunk

// out[i] = fn(in[0][i], ..., in[N-1][i]) over all elements, in f32. `fn` takes (float* out,
// const float* const* in, size_t n) for a block.
template <size_t N, typename Fn>
void map_blocks(const std::array<const hb_tensor*, N>& in, const hb_tensor& out, Fn fn) {
  const size_t n = static_cast<size_t>(numel(out));
  base::parallel_for(n, kGrain, [&](size_t, size_t begin, size_t end) {
    std::array<std::array<float, kBlock>, N> wide;
    std::array<float, kBlock> result;
    std::array<const float*, N> src;
    for (size_t b = begin; b < end; b += kBlock) {
      const size_t len = std::min(kBlock, end - b);
      for (size_t i = 0; i < N; ++i) {
        if (in[i]->dtype == HB_F32) {
          src[i] = static_cast<const float*>(in[i]->data) + b;
        } else {
          load_f32(*in[i], b, len, wide[i].data());
          src[i] = wide[i].data();
        }
      }
      float* dst = out.dtype == HB_F32 ? static_cast<float*>(out.data) + b : result.data();
      fn(dst, src.data(), len);
      if (out.dtype != HB_F32) store_f32(result.data(), out, b, len);
    }
  });
}

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// y = fn(x) element by element (silu, sigmoid).
template <float (*kFn)(float)>
void unary(const Operands& call) {
  const hb_tensor& x = call.in[0];
  require(call, is_float(x.dtype), "x must be f32, bf16 or f16, got " + describe(x));
  require_like(call, call.out[0], "y", x);
  map_blocks<1>({&x}, call.out[0], [](float* y, const float* const* in, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = kFn(in[0][i]);
  });
}

void binary(const Operands& call, bool multiply) {
  const hb_tensor &a = call.in[0], &b = call.in[1];
  require(call, is_float(a.dtype), "a must be f32, bf16 or f16, got " + describe(a));
  require_like(call, b, "b", a);
  require_like(call, call.out[0], "c", a);
  map_blocks<2>({&a, &b}, call.out[0], [multiply](float* y, const float* const* x, size_t n) {
    const float *p = x[0], *q = x[1];
    if (multiply) {
#pragma omp simd
      for (size_t i = 0; i < n; ++i) y[i] = p[i] * q[i];
    } else {
#pragma omp simd
      for (size_t i = 0; i < n; ++i) y[i] = p[i] + q[i];
    }
  });
}

}  // namespace

void add_kernel(const Operands& call) { binary(call, false); }
void mul_kernel(const Operands& call) { binary(call, true); }

void silu_kernel(const Operands& call) { unary<&silu>(call); }
void sigmoid_kernel(const Operands& call) { unary<&sigmoid>(call); }

void gelu_kernel(const Operands& call) {
  const hb_tensor& x = call.in[0];
  require(call, is_float(x.dtype), "x must be f32, bf16 or f16, got " + describe(x));
  require_like(call, call.out[0], "y", x);
  if (h0p::attr_either(call, "approximate", "none", "none", "tanh") == "none") {
    map_blocks<1>({&x}, call.out[0], [](float* y, const float* const* in, size_t n) {
      constexpr float kInvSqrt2 = 0.70710678118654752f;
      for (size_t i = 0; i < n; ++i)
        y[i] = 0.5f * in[0][i] * (1.0f + std::erf(in[0][i] * kInvSqrt2));
    });
  } else {  // tanh
    map_blocks<1>({&x}, call.out[0], [](float* y, const float* const* in, size_t n) {
      constexpr float kSqrt2OverPi = 0.79788456080286536f;
      for (size_t i = 0; i < n; ++i) {
        const float v = in[0][i];
        y[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
      }
    });
  }
}

void swiglu_kernel(const Operands& call) {
  const hb_tensor &gate = call.in[0], &up = call.in[1];
  require_tensor(call, gate, "gate", {-1, -1}, gate.dtype);
  require(call, is_float(gate.dtype), "gate must be f32, bf16 or f16, got " + describe(gate));
  require_like(call, up, "up", gate);
  require_like(call, call.out[0], "y", gate);
  map_blocks<2>({&gate, &up}, call.out[0], [](float* y, const float* const* in, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = silu(in[0][i]) * in[1][i];
  });
}

void embedding_kernel(const Operands& call) {
  const hb_tensor &ids = call.in[0], &table = call.in[1];
  const h0p::Embedding emb = h0p::embedding_operands(call);
  const int64_t t = emb.t, d = emb.d;
  const size_t row_bytes = static_cast<size_t>(d) * elem_size(table.dtype);
  const auto* src = static_cast<const std::byte*>(table.data);
  auto* dst = static_cast<std::byte*>(call.out[0].data);
  const float scale = static_cast<float>(attr_f(call.attrs, "scale", 1.0));
  if (scale != 1.0f)
    require(call, is_float(table.dtype),
            "a scaled table must be f32, bf16 or f16, got " + describe(table));
  base::parallel_for(static_cast<size_t>(t), row_grain(d), [&](size_t, size_t b, size_t e) {
    std::vector<float> row(scale != 1.0f ? static_cast<size_t>(d) : 0);
    for (size_t i = b; i < e; ++i) {
      const size_t id = static_cast<size_t>(index_at(ids, static_cast<int64_t>(i)));
      if (scale == 1.0f) {
        std::memcpy(dst + i * row_bytes, src + id * row_bytes, row_bytes);
        continue;
      }
      load_f32(table, id * static_cast<size_t>(d), static_cast<size_t>(d), row.data());
      for (float& v : row) v *= scale;
      store_f32(row.data(), call.out[0], i * static_cast<size_t>(d), static_cast<size_t>(d));
    }
  });
}

}  // namespace h0::backends::cpu
