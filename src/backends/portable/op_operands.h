// The operand checks of the ops that both the cpu backend and the device plugins implement with
// more than elementwise shapes: each reads the call's shapes and attrs, checks them (and the
// values of its index operands, read to the host), and returns what the kernels need. Operand
// order and attrs are the catalogue's (DESIGN.md); messages as operands.h says.
#pragma once

#include <cstdint>
#include <vector>

#include "operands.h"
#include "rope_frequencies.h"

namespace h0p {

// A paged cache's context: block_table (i32, n entries) checked against the cache's NB blocks
// of B up to len = attr context_len (null: n·B), and the attrs q_offset (null: len − t) and
// causal (true).
struct PagedContext {
  int64_t len, q_offset;
  bool causal;
  int64_t bsz;  // B
};
PagedContext paged_context(const Operands& call, const hb_tensor& cache, const hb_tensor& table,
                           int64_t t);

// matmul(a[M,K], b[K,N]) -> c[M,N], and linear(x[T=M,K], w[N,K], bias[N]?) -> y[T,N].
struct Gemm {
  int64_t m, n, k;
  const hb_tensor* bias;  // linear's; null when absent
};
Gemm matmul_operands(const Operands& call);
Gemm linear_operands(const Operands& call);
// linear_widen: linear's shapes, w in attr dtype (bf16, f16 or f32; default bf16), x, bias and
// y in x's float dtype.
Gemm linear_widen_operands(const Operands& call);

// scaled_linear(x[T,K], w[N,K] of `w_dtype` (the attr dtype's), w_scale[ceil(N/bn),
// ceil(K/bk)] f32, bias[N]?) -> y[T,N], x, bias and y in x's dtype; attrs block_n, block_k (> 0)
// and act_quant (none or dynamic).
struct ScaledLinear {
  int64_t t, k, n, bn, bk;
  const hb_tensor* bias;  // null when absent
  bool dynamic;           // act_quant dynamic
};
ScaledLinear scaled_linear_operands(const Operands& call, hb_dtype w_dtype);

// dequantize_mxfp4(blocks[..., G, 16] u8, scales[..., G] u8) -> x[..., G·32] f32, bf16 or f16:
// the number of 32-value groups.
int64_t dequantize_mxfp4_operands(const Operands& call);

// patch_embed(pixels[C,Hi,Wi], w[D,C,P,P], b[D]?) -> out[(Hi/P)·(Wi/P), D]; attr patch (P).
struct PatchEmbed {
  int64_t c, hi, wi, p, d, np;
  const hb_tensor* bias;  // null when absent
};
PatchEmbed patch_embed_operands(const Operands& call);

// rmsnorm(x[T,D], w[D]) and layernorm(x[T,D], w[D], b[D]) -> y[T,D] (`center`: layernorm);
// attrs eps (rmsnorm 1e-6, layernorm 1e-5) and rmsnorm's offset (Gemma's 1 + w).
// rmsnorm_gated(x[T,D], w[D], z[T,D]) -> y[T,D]; attr eps.
struct Norm {
  int64_t t, d;
  float eps, offset;
};
Norm norm_operands(const Operands& call, bool center);
Norm rmsnorm_gated_operands(const Operands& call);

// gdn_gating(a[T,Hv], b[T,Hv], A_log[Hv], dt_bias[Hv]) -> g[T,Hv] f32, beta[T,Hv].
struct GdnGating {
  int64_t t, hv;
};
GdnGating gdn_gating_operands(const Operands& call);

// embedding(ids[T] i32|i64, table[V,D]) -> out[T,D]; every id in [0, V).
struct Embedding {
  int64_t t, v, d;
};
Embedding embedding_operands(const Operands& call);

// rope(x[T,H,Dh], positions[T] or [axes,T] with attr mrope) -> y[T,H,Dh]; attrs rotary_dim,
// style, theta, scaling, mrope.
struct Rope {
  int64_t t, h, dh, rd;
  bool neox;
  RopeFrequencies freqs;
  std::vector<int64_t> axis;  // per rotated pair its row of positions (mrope); empty: [T]
  int64_t axes;
};
Rope rope_operands(const Operands& call);

// attention(q[T,Hq,Dh], k[S,Hkv,Dh], v[S,Hkv,Dv]) -> o[T,Hq,Dv], and the query side of
// paged_attention (s = its context length).
struct Attention {
  int64_t t, s, hq, hkv, dh, dv;
  float scale;
  int64_t q_offset;  // attr; null: s − T
  bool causal;
  int64_t window;  // attr sliding_window; 0: none
};
Attention attention_operands(const Operands& call);

// paged_attention(q[T,Hq,Dh], k_cache[NB,B,Hkv,Dh], v_cache[NB,B,Hkv,Dv], block_table[n] i32,
// sinks[Hq]?) -> o[T,Hq,Dv].
struct PagedAttention {
  Attention a;
  PagedContext ctx;
  const hb_tensor* sinks;  // GPT-OSS's attention sinks, [Hq] of q's dtype; null when absent
};
PagedAttention paged_attention_operands(const Operands& call);

// lightning_indexer(q[T,H,D], k_cache[NB,B,D], weights[T,H], block_table[n]) -> indices[T,topk].
struct LightningIndexer {
  int64_t t, h, d, topk;
  float scale;
  PagedContext ctx;
};
LightningIndexer lightning_indexer_operands(const Operands& call);

// sparse_attention(q[T,Hq,Dh], k_cache[NB,B,Hkv,Dh], v_cache[NB,B,Hkv,Dv], block_table[n],
// indices[T,K] i32) -> o[T,Hq,Dv]; every index in [-1, context length).
struct SparseAttention {
  int64_t t, hq, dh, hkv, dv, n_idx;
  float scale;
  PagedContext ctx;
  std::vector<int64_t> indices;  // [T, K], read to the host
};
SparseAttention sparse_attention_operands(const Operands& call);

// causal_conv1d(x[T,C], w[C,K >= 2], state[C,K-1], bias[C]?) -> y[T,C], state_out[C,K-1];
// attr activation silu or none.
struct CausalConv1d {
  int64_t t, c, k;
  bool has_bias, silu;
};
CausalConv1d causal_conv1d_operands(const Operands& call);

// gated_delta_rule(q[T,Hk,Dk], k[T,Hk,Dk], v[T,Hv,Dv], g[T,Hv] f32, beta[T,Hv],
// state[Hv,Dk,Dv] f32) -> o[T,Hv,Dv], state_out[Hv,Dk,Dv] f32; Hv a multiple of Hk; attrs
// scale, l2norm_qk, l2norm_eps.
struct GatedDeltaRule {
  int64_t t, hk, dk, hv, dv;
  float scale;
  bool l2norm;
  float eps;
};
GatedDeltaRule gated_delta_rule_operands(const Operands& call);

// moe_gate(logits[T,E], bias[E]?) -> weights[T,k] f32, ids[T,k] i32; attrs top_k, scoring,
// normalize, n_group, topk_group, routed_scaling_factor.
struct MoeGate {
  int64_t t, e, k, n_group, topk_group;
  const hb_tensor* bias;  // null when absent
  bool sigmoid, normalize;
  float routed_scale;
};
MoeGate moe_gate_operands(const Operands& call);

// moe_experts(x[T,D], weights[T,k] f32, ids[T,k] i32, w_gate[E,F,D], w_up[E,F,D],
// w_down[E,D,F], b_gate[E,F]?, b_up[E,F]?, b_down[E,D]?) -> y[T,D]; every id in [0, E); attr
// activation silu or clamped_swiglu (GPT-OSS: alpha, limit).
struct MoeExperts {
  int64_t t, d, k, e, f;
  bool biased, clamped;
  float alpha, limit;
};
MoeExperts moe_experts_operands(const Operands& call);

}  // namespace h0p
