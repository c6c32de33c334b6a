// Scaled dot-product attention over a contiguous KV (attention) or a paged KV cache
// (paged_attention, gathered into contiguous f32 keys and values first).
//   q[T,Hq,Dh], k[S,Hkv,Dh], v[S,Hkv,Dv] -> o[T,Hq,Dv]
// Query t sits at position p = q_offset + t and sees key j iff (!causal || j <= p) and
// (window == 0 || j > p − window); query head h reads kv head h / (Hq / Hkv). o is the softmax
// of scale·q·k over the visible keys applied to v; a query that sees no key gets zeros.
// paged_attention's optional sinks[Hq] add e^(sink − max) to head h's softmax denominator.
// One task per (t, h) row, f32 dot products and f32 accumulation of the weighted values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"

namespace h0::backends::cpu {
namespace {

// The shapes and attrs op_operands checked, and the sinks as f32.
struct AttentionShape : h0p::Attention {
  const float* sinks = nullptr;  // [hq] f32, or none
};

// The visible keys [lo, hi] of query t (empty when lo > hi).
std::pair<int64_t, int64_t> visible(const AttentionShape& a, int64_t t) {
  const int64_t p = a.q_offset + t;
  int64_t lo = 0, hi = a.s - 1;
  if (a.causal) hi = std::min(hi, p);
  if (a.window > 0) lo = std::max(lo, p - a.window + 1);
  return {lo, hi};
}

// Many queries (prefill): per query head, scores = Q·Kᵀ and O = P·V as two GEMMs, the masked
// softmax in between row by row. Same math as the row path; f32 GEMM accumulation order.
void attend_gemm(const AttentionShape& a, const float* q, const float* k, const float* v,
                 const hb_tensor& out) {
  const int64_t group = a.hq / a.hkv;
  std::vector<float> qh(size_t(a.t * a.dh)), kg(size_t(a.s * a.dh)), vg(size_t(a.s * a.dv));
  std::vector<float> scores(size_t(a.t * a.s)), oh(size_t(a.t * a.dv));
  for (int64_t g = 0; g < a.hkv; ++g) {
    for (int64_t j = 0; j < a.s; ++j) {
      std::copy_n(k + (j * a.hkv + g) * a.dh, a.dh, kg.data() + j * a.dh);
      std::copy_n(v + (j * a.hkv + g) * a.dv, a.dv, vg.data() + j * a.dv);
    }
    for (int64_t h = g * group; h < (g + 1) * group; ++h) {
      for (int64_t t = 0; t < a.t; ++t)
        std::copy_n(q + (t * a.hq + h) * a.dh, a.dh, qh.data() + t * a.dh);
      sgemm(a.t, a.s, a.dh, qh.data(), kg.data(), true, scores.data(), false);
      for (int64_t t = 0; t < a.t; ++t) {
        float* sr = scores.data() + t * a.s;
        const auto [lo, hi] = visible(a, t);
        float mx = a.sinks != nullptr ? a.sinks[h] : -std::numeric_limits<float>::infinity();
        for (int64_t j = lo; j <= hi; ++j) mx = std::max(mx, sr[j] * a.scale);
        float sum = 0;
        for (int64_t j = 0; j < a.s; ++j) {
          const float w = (j >= lo && j <= hi) ? std::exp(sr[j] * a.scale - mx) : 0.0f;
          sr[j] = w;
          sum += w;
        }
        if (a.sinks != nullptr && lo <= hi) sum += std::exp(a.sinks[h] - mx);
        const float inv = sum > 0 ? 1.0f / sum : 0.0f;
        for (int64_t j = 0; j < a.s; ++j) sr[j] *= inv;
      }
      sgemm(a.t, a.dv, a.s, scores.data(), vg.data(), false, oh.data(), false);
      for (int64_t t = 0; t < a.t; ++t) {
        store_f32(oh.data() + t * a.dv, out, size_t((t * a.hq + h) * a.dv), size_t(a.dv));
      }
    }
  }
}

// q, k, v as f32; writes o (the output tensor's dtype).
void attend(const AttentionShape& a, const float* q, const float* k, const float* v,
            const hb_tensor& out) {
  if (a.t >= 16 && a.s >= 16) return attend_gemm(a, q, k, v, out);
  const int64_t rows = a.t * a.hq, group = a.hq / a.hkv;
  const int64_t work = std::max<int64_t>(1, a.s) * (a.dh + a.dv);
  base::parallel_for(static_cast<size_t>(rows), row_grain(work), [&](size_t, size_t b, size_t e) {
    std::vector<float> scores(static_cast<size_t>(std::max<int64_t>(1, a.s)));
    std::vector<float> acc(static_cast<size_t>(a.dv));
    for (size_t r = b; r < e; ++r) {
      const int64_t t = static_cast<int64_t>(r) / a.hq, h = static_cast<int64_t>(r) % a.hq,
                    g = h / group;
      const auto [lo, hi] = visible(a, t);
      std::fill(acc.begin(), acc.end(), 0.0f);
      if (lo <= hi) {
        const float* qr = q + r * static_cast<size_t>(a.dh);
        float mx = a.sinks != nullptr ? a.sinks[h] : -std::numeric_limits<float>::infinity();
        for (int64_t j = lo; j <= hi; ++j) {
          const float* kr = k + (j * a.hkv + g) * a.dh;
          float dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int64_t i = 0; i < a.dh; ++i) dot += qr[i] * kr[i];
          const float sc = dot * a.scale;
          scores[static_cast<size_t>(j - lo)] = sc;
          mx = std::max(mx, sc);
        }
        float sum = 0;
        for (int64_t j = lo; j <= hi; ++j) {
          const float w = std::exp(scores[static_cast<size_t>(j - lo)] - mx);
          sum += w;
          const float* vr = v + (j * a.hkv + g) * a.dv;
          float* o = acc.data();
#pragma omp simd
          for (int64_t i = 0; i < a.dv; ++i) o[i] += w * vr[i];
        }
        if (a.sinks != nullptr) sum += std::exp(a.sinks[h] - mx);
        for (float& o : acc) o /= sum;
      }
      store_f32(acc.data(), out, r * static_cast<size_t>(a.dv), static_cast<size_t>(a.dv));
    }
  });
}

}  // namespace

void attention_kernel(const Operands& call) {
  const AttentionShape a{h0p::attention_operands(call)};
  const F32View qf(call.in[0]), kf(call.in[1]), vf(call.in[2]);
  attend(a, qf.data(), kf.data(), vf.data(), call.out[0]);
}

void paged_attention_kernel(const Operands& call) {
  const h0p::PagedAttention p = h0p::paged_attention_operands(call);
  AttentionShape a{p.a};
  std::vector<float> sinks;
  if (p.sinks != nullptr) {  // GPT-OSS's attention sinks
    sinks.resize(static_cast<size_t>(a.hq));
    load_f32(*p.sinks, 0, sinks.size(), sinks.data());
    a.sinks = sinks.data();
  }
  // Key j from block_table[j / B], slot j % B, gathered into contiguous [len, Hkv, D] f32.
  const hb_tensor &kc = call.in[1], &vc = call.in[2], &table = call.in[3];
  const std::vector<float> k = gather_paged(kc, table, a.s, a.hkv * a.dh),
                           v = gather_paged(vc, table, a.s, a.hkv * a.dv);
  const F32View qf(call.in[0]);
  attend(a, qf.data(), k.data(), v.data(), call.out[0]);
}

}  // namespace h0::backends::cpu
