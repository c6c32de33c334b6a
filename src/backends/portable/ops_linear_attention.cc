// Hybrid and sparse attention (kernels/linear_attention.inc, sparse_attention.inc). Shapes and
// attrs as in the catalogue (docs/operators.md), checks as the cpu backend makes them:
//   rmsnorm_gated(x[T,D], w[D], z[T,D]) -> y
//   gdn_gating(a, b[T,Hv], A_log, dt_bias[Hv]) -> g f32, beta
//   causal_conv1d(x[T,C], w[C,K], state[C,K-1], bias[C]?) -> y[T,C], state_out[C,K-1]
//   gated_delta_rule(q, k[T,Hk,Dk], v[T,Hv,Dv], g[T,Hv] f32, beta[T,Hv], state[Hv,Dk,Dv] f32)
//     -> o, state_out
//   lightning_indexer(q[T,H,D], k_cache[NB,B,D], weights[T,H], block_table[n]) -> indices[T,topk]
//   sparse_attention(q[T,Hq,Dh], k_cache, v_cache[NB,B,Hkv,D], block_table, indices[T,K])
//     -> o[T,Hq,Dv]
// The indexer scores on the device; its top-k selection (score descending, lower key id first on
// equal scores) runs on the host over the scores read back, as does sparse_attention's cleaning
// of the selection (repeats, the causal mask) before the device attends.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "op_call.h"

namespace h0p {

void rmsnorm_gated_op(const Call& call) {
  const hb_tensor& x = call.in[0];
  const Norm nm = rmsnorm_gated_operands(call);
  const int64_t t = nm.t, d = nm.d;
  if (t == 0 || d == 0) return;
  const int dd = as_int(call, d);
  call.dev.launch("norm_gated_rows", x.dtype, per_row(t),
                  {buffer(x.data), buffer(call.in[1].data), buffer(call.in[2].data),
                   buffer(call.out[0].data), i32(dd), f32(nm.eps)});
}

void gdn_gating_op(const Call& call) {
  const hb_tensor& a = call.in[0];
  const GdnGating gg = gdn_gating_operands(call);
  const int64_t t = gg.t, hv = gg.hv;
  const int n = as_int(call, t * hv), h = as_int(call, hv);
  if (n == 0) return;
  call.dev.launch(
      "gdn_gating", a.dtype, grid_1d(n),
      {buffer(a.data), buffer(call.in[1].data), buffer(call.in[2].data), buffer(call.in[3].data),
       buffer(call.out[0].data), buffer(call.out[1].data), i32(n), i32(h)});
}

void causal_conv1d_op(const Call& call) {
  const CausalConv1d cv = causal_conv1d_operands(call);
  const hb_tensor &x = call.in[0], &w = call.in[1];
  const int64_t t = cv.t, c = cv.c, k = cv.k;
  const bool has_bias = cv.has_bias;
  const int ti = as_int(call, t), ci = as_int(call, c), ki = as_int(call, k);
  const int bias_flag = has_bias ? 1 : 0, silu = cv.silu ? 1 : 0;
  const void* bias = has_bias ? call.in[3].data : nullptr;
  if (c == 0) return;
  // y first: it reads the state that state_out (possibly the same buffer) then replaces.
  if (t > 0) {
    call.dev.launch(
        "causal_conv1d", x.dtype, grid_1d(t * c),
        {buffer(x.data), buffer(w.data), buffer(call.in[2].data), buffer(bias),
         buffer(call.out[0].data), i32(ti), i32(ci), i32(ki), i32(bias_flag), i32(silu)});
  }
  call.dev.launch("causal_conv1d_state", x.dtype, grid_1d(c),
                  {buffer(x.data), buffer(call.in[2].data), buffer(call.out[1].data), i32(ti),
                   i32(ci), i32(ki)});
}

void gated_delta_rule_op(const Call& call) {
  const GatedDeltaRule r = gated_delta_rule_operands(call);
  const hb_tensor &q = call.in[0], &k = call.in[1], &v = call.in[2];
  const hb_dtype dt = q.dtype;
  const int64_t t = r.t, hk = r.hk, dk = r.dk, hv = r.hv, dv = r.dv;
  const float scale = r.scale, eps = r.eps;
  const int l2 = r.l2norm ? 1 : 0;
  if (hv * dk * dv == 0) return;
  const int ti = as_int(call, t), hki = as_int(call, hk), dki = as_int(call, dk),
            hvi = as_int(call, hv), dvi = as_int(call, dv);
  const size_t qk_bytes = static_cast<size_t>(t * hk * dk) * sizeof(float);
  Scratch qn(call.dev, qk_bytes), kn(call.dev, qk_bytes);
  if (t > 0) {
    call.dev.launch("l2norm_rows", dt, per_row(t * hk),
                    {buffer(q.data), buffer(qn.handle()), i32(dki), f32(scale), f32(eps), i32(l2)});
    const float one = 1.0f;
    call.dev.launch("l2norm_rows", dt, per_row(t * hk),
                    {buffer(k.data), buffer(kn.handle()), i32(dki), f32(one), f32(eps), i32(l2)});
  }
  call.dev.launch(
      "delta_rule", dt, grid_1d(hv * dv),
      {buffer(qn.handle()), buffer(kn.handle()), buffer(v.data), buffer(call.in[3].data),
       buffer(call.in[4].data), buffer(call.in[5].data), buffer(call.out[1].data),
       buffer(call.out[0].data), i32(ti), i32(hki), i32(dki), i32(hvi), i32(dvi)});
}

void lightning_indexer_op(const Call& call) {
  const LightningIndexer li = lightning_indexer_operands(call);
  const hb_tensor &q = call.in[0], &kc = call.in[1], &w = call.in[2], &table = call.in[3];
  const int64_t t = li.t, h = li.h, d = li.d, topk = li.topk;
  const PagedContext& p = li.ctx;
  const float scale = li.scale;
  if (t == 0) return;
  const int64_t s = p.len;
  std::vector<float> scores(static_cast<size_t>(t * std::max<int64_t>(s, 1)), 0.0f);
  if (s > 0) {
    Scratch dev_scores(call.dev, scores.size() * sizeof(float));
    const int ti = as_int(call, t), hi = as_int(call, h), di = as_int(call, d),
              si = as_int(call, s), qo = as_int(call, p.q_offset), causal = p.causal ? 1 : 0,
              bsz = as_int(call, p.bsz);
    (void)as_int(call, t * s);
    call.dev.launch("indexer_scores", q.dtype, grid_1d(t * s),
                    {buffer(q.data), buffer(kc.data), buffer(w.data), buffer(table.data),
                     buffer(dev_scores.handle()), i32(ti), i32(hi), i32(di), i32(si), i32(bsz),
                     f32(scale), i32(qo), i32(causal)});
    call.dev.read(scores.data(), dev_scores.handle(), scores.size() * sizeof(float));
  }
  std::vector<int32_t> out(static_cast<size_t>(t * topk), -1), keys;
  for (int64_t r = 0; r < t; ++r) {
    const int64_t visible = p.causal ? std::clamp<int64_t>(p.q_offset + r + 1, 0, s) : s;
    const float* score = scores.data() + r * s;
    keys.resize(static_cast<size_t>(visible));
    std::iota(keys.begin(), keys.end(), 0);
    const int64_t kept = std::min(topk, visible);
    std::partial_sort(keys.begin(), keys.begin() + kept, keys.end(), [&](int32_t x, int32_t y) {
      return score[x] > score[y] || (score[x] == score[y] && x < y);
    });
    std::copy_n(keys.begin(), kept, out.begin() + r * topk);
  }
  call.dev.write(call.out[0].data, out.data(), out.size() * sizeof(int32_t));
}

void sparse_attention_op(const Call& call) {
  const SparseAttention sa = sparse_attention_operands(call);
  const hb_tensor &q = call.in[0], &kc = call.in[1], &vc = call.in[2], &table = call.in[3];
  const int64_t t = sa.t, hq = sa.hq, dh = sa.dh, hkv = sa.hkv, dv = sa.dv, n_idx = sa.n_idx;
  const PagedContext& p = sa.ctx;
  const std::vector<int64_t>& ids = sa.indices;
  if (t * hq == 0 || dv == 0) return;
  // Per query: its visible selected keys, once each, ascending (the cpu backend's order).
  const int64_t kmax = std::max<int64_t>(n_idx, 1);
  std::vector<int32_t> keys(static_cast<size_t>(t * kmax), 0), count(static_cast<size_t>(t), 0);
  std::vector<int32_t> row;
  for (int64_t r = 0; r < t; ++r) {
    row.clear();
    for (int64_t i = 0; i < n_idx; ++i) {
      const int64_t j = ids[static_cast<size_t>(r * n_idx + i)];
      if (j >= 0 && (!p.causal || j <= p.q_offset + r)) row.push_back(static_cast<int32_t>(j));
    }
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    std::copy(row.begin(), row.end(), keys.begin() + r * kmax);
    count[static_cast<size_t>(r)] = static_cast<int32_t>(row.size());
  }
  Scratch keys_dev(call.dev, keys.size() * sizeof(int32_t)),
      count_dev(call.dev, count.size() * sizeof(int32_t));
  call.dev.write(keys_dev.handle(), keys.data(), keys.size() * sizeof(int32_t));
  call.dev.write(count_dev.handle(), count.data(), count.size() * sizeof(int32_t));
  Scratch scores(call.dev, static_cast<size_t>(t * hq * kmax) * sizeof(float));
  const int kmi = as_int(call, kmax), hqi = as_int(call, hq), hkvi = as_int(call, hkv),
            dhi = as_int(call, dh), dvi = as_int(call, dv), bsz = as_int(call, p.bsz);
  (void)as_int(call, t * hq * kmax);
  call.dev.launch("sparse_attention", q.dtype, per_row(t * hq),
                  {buffer(q.data), buffer(kc.data), buffer(vc.data), buffer(table.data),
                   buffer(keys_dev.handle()), buffer(count_dev.handle()), buffer(call.out[0].data),
                   buffer(scores.handle()), i32(kmi), i32(hqi), i32(hkvi), i32(dhi), i32(dvi),
                   f32(sa.scale), i32(bsz)});
}

}  // namespace h0p
