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

struct AttentionShape {
  int64_t t, s, hq, hkv, dh, dv;
  float scale;
  int64_t q_offset;
  bool causal;
  int64_t window;
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

// Checks q, the head counts and the output; fills the shape fields of q and the attrs.
AttentionShape check_query(const OpCall& call, int64_t s, int64_t hkv, int64_t dv,
                           int64_t default_len) {
  const hb_tensor& q = call.in[0];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  AttentionShape a{};
  a.t = q.shape[0];
  a.hq = q.shape[1];
  a.dh = q.shape[2];
  a.s = s;
  a.hkv = hkv;
  a.dv = dv;
  require(call, a.hkv > 0 && a.hq % a.hkv == 0,
          "q heads (" + std::to_string(a.hq) + ") must be a multiple of kv heads (" +
              std::to_string(a.hkv) + ")");
  require_tensor(call, call.out[0], "o", {a.t, a.hq, a.dv}, q.dtype);
  a.scale =
      static_cast<float>(attr_null(call.attrs, "scale") ? 1.0 / std::sqrt(static_cast<double>(a.dh))
                                                        : attr_f(call.attrs, "scale", 0));
  a.q_offset =
      attr_null(call.attrs, "q_offset") ? default_len - a.t : attr_i(call.attrs, "q_offset", 0);
  a.causal = attr_b(call.attrs, "causal", true);
  a.window = attr_i(call.attrs, "sliding_window", 0);
  require(call, a.window >= 0, "attr sliding_window must be >= 0, got " + std::to_string(a.window));
  return a;
}

}  // namespace

void attention_kernel(const OpCall& call) {
  const hb_tensor &q = call.in[0], &k = call.in[1], &v = call.in[2];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  require_tensor(call, k, "k", {-1, -1, q.shape[2]}, q.dtype);
  require_tensor(call, v, "v", {k.shape[0], k.shape[1], -1}, q.dtype);
  const AttentionShape a = check_query(call, k.shape[0], k.shape[1], v.shape[2], k.shape[0]);
  const F32View qf(q), kf(k), vf(v);
  attend(a, qf.data(), kf.data(), vf.data(), call.out[0]);
}

void paged_attention_kernel(const OpCall& call) {
  const hb_tensor &q = call.in[0], &kc = call.in[1], &vc = call.in[2], &table = call.in[3];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  require_tensor(call, kc, "k_cache", {-1, -1, -1, q.shape[2]}, q.dtype);
  const int64_t nb = kc.shape[0], bsz = kc.shape[1], hkv = kc.shape[2], dh = q.shape[2];
  require_tensor(call, vc, "v_cache", {nb, bsz, hkv, -1}, q.dtype);
  const int64_t dv = vc.shape[3];
  require(call, bsz > 0, "k_cache must have a positive block size, got " + describe(kc));
  require_tensor(call, table, "block_table", {-1}, HB_I32);
  const int64_t capacity = table.shape[0] * bsz;
  const int64_t len =
      attr_null(call.attrs, "context_len") ? capacity : attr_i(call.attrs, "context_len", 0);
  require(call, len >= 0 && len <= capacity,
          "attr context_len must be in [0, " + std::to_string(capacity) +
              "] (block_table entries x block size), got " + std::to_string(len));
  AttentionShape a = check_query(call, len, hkv, dv, len);
  std::vector<float> sinks;
  if (call.n_in > 4) {  // GPT-OSS's attention sinks
    require_tensor(call, call.in[4], "sinks", {a.hq}, q.dtype);
    sinks.resize(static_cast<size_t>(a.hq));
    load_f32(call.in[4], 0, sinks.size(), sinks.data());
    a.sinks = sinks.data();
  }

  const auto* blocks = static_cast<const int32_t*>(table.data);
  for (int64_t i = 0; i * bsz < len; ++i) {
    if (blocks[i] < 0 || blocks[i] >= nb)
      require(call, false,
              "block_table[" + std::to_string(i) + "] = " + std::to_string(blocks[i]) +
                  " is outside the cache's " + std::to_string(nb) + " blocks");
  }
  // Key j from block_table[j / B], slot j % B, gathered into contiguous [len, Hkv, D] f32.
  const std::vector<float> k = gather_paged(kc, table, len, hkv * dh),
                           v = gather_paged(vc, table, len, hkv * dv);
  const F32View qf(q);
  attend(a, qf.data(), k.data(), v.data(), call.out[0]);
}

}  // namespace h0::backends::cpu
