// DeepSeek sparse attention: lightning_indexer and sparse_attention (catalogue:
// src/ops/sparse_attention_ops.cc).
//   lightning_indexer(q[T,H,D], k_cache[NB,B,D], weights[T,H], block_table[n]) -> indices[T,topk]
//   sparse_attention(q[T,Hq,Dh], k_cache[NB,B,Hkv,Dh], v_cache, block_table, indices[T,K]) -> o
// The keys are gathered from their blocks into contiguous f32 first, as paged_attention does.
// The indexer scores in f32 (one task per query) and selects with a partial sort on (score
// descending, key id ascending): the catalogue's tie rule. Attention runs per (query, head)
// over the query's selected keys, deduplicated and in key order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"

namespace h0::backends::cpu {
namespace {

float dot(const float* a, const float* b, int64_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

void lightning_indexer_kernel(const Operands& call) {
  const h0p::LightningIndexer li = h0p::lightning_indexer_operands(call);
  const hb_tensor &q_t = call.in[0], &kc = call.in[1], &w_t = call.in[2], &table = call.in[3];
  const int64_t t = li.t, h = li.h, d = li.d, topk = li.topk;
  const h0p::PagedContext& p = li.ctx;
  const float scale = li.scale;
  const std::vector<float> k = gather_paged(kc, table, p.len, d);
  const F32View q(q_t), w(w_t);
  auto* out = static_cast<int32_t*>(call.out[0].data);
  base::parallel_for(size_t(t), row_grain(p.len * h * d), [&](size_t, size_t b, size_t e) {
    std::vector<float> score;
    std::vector<int32_t> keys;
    for (size_t r = b; r < e; ++r) {
      const int64_t visible =
          p.causal ? std::clamp<int64_t>(p.q_offset + int64_t(r) + 1, 0, p.len) : p.len;
      score.assign(size_t(visible), 0.0f);
      for (int64_t j = 0; j < visible; ++j) {
        float s = 0;
        for (int64_t head = 0; head < h; ++head) {
          const int64_t row = int64_t(r) * h + head;
          s += w.data()[row] * std::max(0.0f, scale * dot(q.data() + row * d, k.data() + j * d, d));
        }
        score[size_t(j)] = s;
      }
      keys.resize(size_t(visible));
      std::iota(keys.begin(), keys.end(), 0);
      const int64_t kept = std::min(topk, visible);
      std::partial_sort(keys.begin(), keys.begin() + kept, keys.end(), [&](int32_t x, int32_t y) {
        return score[size_t(x)] > score[size_t(y)] ||
               (score[size_t(x)] == score[size_t(y)] && x < y);
      });
      int32_t* row = out + r * size_t(topk);
      std::copy_n(keys.begin(), kept, row);
      std::fill(row + kept, row + topk, -1);
    }
  });
}

void sparse_attention_kernel(const Operands& call) {
  const h0p::SparseAttention sa = h0p::sparse_attention_operands(call);
  const hb_tensor &q_t = call.in[0], &kc = call.in[1], &vc = call.in[2], &table = call.in[3];
  const int64_t t = sa.t, hq = sa.hq, dh = sa.dh, hkv = sa.hkv, dv = sa.dv, n_idx = sa.n_idx;
  const h0p::PagedContext& p = sa.ctx;
  const float scale = sa.scale;
  const std::vector<float> k = gather_paged(kc, table, p.len, hkv * dh),
                           v = gather_paged(vc, table, p.len, hkv * dv);
  const std::vector<int64_t>& idx = sa.indices;
  const F32View q(q_t);
  const int64_t group = hq / hkv;
  std::vector<float> o(size_t(t * hq * dv), 0.0f);
  base::parallel_for(size_t(t), row_grain(n_idx * hq * (dh + dv)), [&](size_t, size_t b, size_t e) {
    std::vector<int32_t> keys;
    std::vector<float> score;
    for (size_t r = b; r < e; ++r) {
      const int64_t pos = p.q_offset + int64_t(r);
      keys.clear();
      for (int64_t i = 0; i < n_idx; ++i) {
        const auto j = static_cast<int32_t>(idx[r * size_t(n_idx) + size_t(i)]);
        if (j >= 0 && (!p.causal || j <= pos)) keys.push_back(j);
      }
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      if (keys.empty()) continue;
      score.resize(keys.size());
      for (int64_t head = 0; head < hq; ++head) {
        const int64_t g = head / group;
        const float* qr = q.data() + (int64_t(r) * hq + head) * dh;
        float mx = -std::numeric_limits<float>::infinity();
        for (size_t n = 0; n < keys.size(); ++n) {
          score[n] = scale * dot(qr, k.data() + (keys[n] * hkv + g) * dh, dh);
          mx = std::max(mx, score[n]);
        }
        float sum = 0;
        float* acc = o.data() + (int64_t(r) * hq + head) * dv;
        for (size_t n = 0; n < keys.size(); ++n) {
          const float wgt = std::exp(score[n] - mx);
          sum += wgt;
          const float* vr = v.data() + (keys[n] * hkv + g) * dv;
#pragma omp simd
          for (int64_t i = 0; i < dv; ++i) acc[i] += wgt * vr[i];
        }
        for (int64_t i = 0; i < dv; ++i) acc[i] /= sum;
      }
    }
  });
  store_all(o, call.out[0]);
}

}  // namespace h0::backends::cpu
