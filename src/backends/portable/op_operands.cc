#include "op_operands.h"

#include <string>

namespace h0p {

PagedContext paged_context(const Operands& call, const hb_tensor& cache, const hb_tensor& table,
                           int64_t t) {
  const int64_t nb = cache.shape[0], bsz = cache.shape[1];
  require(call, bsz > 0, "k_cache must have a positive block size, got " + describe(cache));
  require_tensor(call, table, "block_table", {-1}, HB_I32);
  const int64_t capacity = table.shape[0] * bsz;
  PagedContext p{};
  p.len = attr_null(call.attrs, "context_len") ? capacity : attr_i(call.attrs, "context_len", 0);
  require(call, p.len >= 0 && p.len <= capacity,
          "attr context_len must be in [0, " + std::to_string(capacity) +
              "] (block_table entries x block size), got " + std::to_string(p.len));
  p.q_offset = attr_null(call.attrs, "q_offset") ? p.len - t : attr_i(call.attrs, "q_offset", 0);
  p.causal = attr_b(call.attrs, "causal", true);
  p.bsz = bsz;
  std::vector<int64_t> blocks = read_indices(call, table);
  blocks.resize(static_cast<size_t>((p.len + bsz - 1) / bsz));  // the entries the context uses
  require_in_range(call, table, "block_table", blocks, 0, nb,
                   "the cache's " + std::to_string(nb) + " blocks");
  return p;
}

Gemm matmul_operands(const Operands& call) {
  const hb_tensor &a = call.in[0], &b = call.in[1];
  require_tensor(call, a, "a", {-1, -1}, a.dtype);
  Gemm g{a.shape[0], -1, a.shape[1], nullptr};
  require_tensor(call, b, "b", {g.k, -1}, a.dtype);
  g.n = b.shape[1];
  require_tensor(call, call.out[0], "c", {g.m, g.n}, a.dtype);
  return g;
}

namespace {

// linear's operands with w in `w_dtype` (x, bias and y in x's).
Gemm linear_with_weight(const Operands& call, hb_dtype w_dtype) {
  const hb_tensor &x = call.in[0], &w = call.in[1];
  require_tensor(call, x, "x", {-1, -1}, x.dtype);
  Gemm g{x.shape[0], -1, x.shape[1], nullptr};
  require_tensor(call, w, "w", {-1, g.k}, w_dtype);
  g.n = w.shape[0];
  if (call.n_in > 2) {
    require_tensor(call, call.in[2], "bias", {g.n}, x.dtype);
    g.bias = &call.in[2];
  }
  require_tensor(call, call.out[0], "y", {g.m, g.n}, x.dtype);
  return g;
}

}  // namespace

Gemm linear_operands(const Operands& call) { return linear_with_weight(call, call.in[0].dtype); }

Gemm linear_widen_operands(const Operands& call) {
  const std::string stored = attr_s(call.attrs, "dtype", "bf16");
  hb_dtype w_dtype = HB_BF16;
  if (stored == "f16") {
    w_dtype = HB_F16;
  } else if (stored == "f32") {
    w_dtype = HB_F32;
  } else {
    require(call, stored == "bf16", "attr dtype must be bf16, f16 or f32, got '" + stored + "'");
  }
  require(call, is_float(call.in[0].dtype),
          "x must be a float tensor, got " + describe(call.in[0]));
  return linear_with_weight(call, w_dtype);
}

PatchEmbed patch_embed_operands(const Operands& call) {
  const hb_tensor &px = call.in[0], &w = call.in[1];
  PatchEmbed pe{};
  pe.p = attr_i(call.attrs, "patch", 0);
  require(call, pe.p > 0, "attr patch must be positive, got " + std::to_string(pe.p));
  require_tensor(call, px, "pixels", {-1, -1, -1}, px.dtype);
  pe.c = px.shape[0];
  pe.hi = px.shape[1];
  pe.wi = px.shape[2];
  require_tensor(call, w, "w", {-1, pe.c, pe.p, pe.p}, px.dtype);
  pe.d = w.shape[0];
  if (call.n_in > 2) {
    require_tensor(call, call.in[2], "b", {pe.d}, px.dtype);
    pe.bias = &call.in[2];
  }
  require(call, pe.hi % pe.p == 0 && pe.wi % pe.p == 0,
          "pixels must be [C, Hi, Wi] with Hi and Wi multiples of patch " + std::to_string(pe.p) +
              ", got " + describe(px));
  pe.np = (pe.hi / pe.p) * (pe.wi / pe.p);
  require_tensor(call, call.out[0], "out", {pe.np, pe.d}, px.dtype);
  return pe;
}

Norm norm_operands(const Operands& call, bool center) {
  const hb_tensor& x = call.in[0];
  require_tensor(call, x, "x", {-1, -1}, x.dtype);
  Norm n{x.shape[0], x.shape[1], 0, 0};
  require_tensor(call, call.in[1], "w", {n.d}, x.dtype);
  if (center) require_tensor(call, call.in[2], "b", {n.d}, x.dtype);
  require_tensor(call, call.out[0], "y", {n.t, n.d}, x.dtype);
  n.eps = static_cast<float>(attr_f(call.attrs, "eps", center ? 1e-5 : 1e-6));
  n.offset = center ? 0.0f : static_cast<float>(attr_f(call.attrs, "offset", 0.0));
  return n;
}

Norm rmsnorm_gated_operands(const Operands& call) {
  const hb_tensor& x = call.in[0];
  require_tensor(call, x, "x", {-1, -1}, x.dtype);
  Norm n{x.shape[0], x.shape[1], 0, 0};
  require_tensor(call, call.in[1], "w", {n.d}, x.dtype);
  require_tensor(call, call.in[2], "z", {n.t, n.d}, x.dtype);
  require_tensor(call, call.out[0], "y", {n.t, n.d}, x.dtype);
  n.eps = static_cast<float>(attr_f(call.attrs, "eps", 1e-6));
  return n;
}

GdnGating gdn_gating_operands(const Operands& call) {
  const hb_tensor& a = call.in[0];
  require_tensor(call, a, "a", {-1, -1}, a.dtype);
  const GdnGating g{a.shape[0], a.shape[1]};
  require_tensor(call, call.in[1], "b", {g.t, g.hv}, a.dtype);
  require_tensor(call, call.in[2], "A_log", {g.hv}, a.dtype);
  require_tensor(call, call.in[3], "dt_bias", {g.hv}, a.dtype);
  require_tensor(call, call.out[0], "g", {g.t, g.hv}, HB_F32);
  require_tensor(call, call.out[1], "beta", {g.t, g.hv}, a.dtype);
  return g;
}

Embedding embedding_operands(const Operands& call) {
  const hb_tensor &ids = call.in[0], &table = call.in[1];
  require_index(call, ids, "ids", {-1});
  require_tensor(call, table, "table", {-1, -1}, table.dtype);
  const Embedding e{ids.shape[0], table.shape[0], table.shape[1]};
  require_tensor(call, call.out[0], "out", {e.t, e.d}, table.dtype);
  require_in_range(call, ids, "ids", read_indices(call, ids), 0, e.v,
                   "the table's " + std::to_string(e.v) + " rows");
  return e;
}

Rope rope_operands(const Operands& call) {
  const hb_tensor &x = call.in[0], &positions = call.in[1];
  require_tensor(call, x, "x", {-1, -1, -1}, x.dtype);
  Rope r{};
  r.t = x.shape[0];
  r.h = x.shape[1];
  r.dh = x.shape[2];
  require_like(call, call.out[0], "y", x);
  r.rd = attr_null(call.attrs, "rotary_dim") ? r.dh : attr_i(call.attrs, "rotary_dim", r.dh);
  require(call, r.rd > 0 && r.rd <= r.dh && r.rd % 2 == 0,
          "attr rotary_dim must be even and in (0, Dh = " + std::to_string(r.dh) + "], got " +
              std::to_string(r.rd));
  r.neox = attr_either(call, "style", "neox", "neox", "gptj") == "neox";
  const double theta = attr_f(call.attrs, "theta", 10000.0);
  require(call, theta > 0, "attr theta must be positive");
  const Json none;
  const Json& scaling = attr_null(call.attrs, "scaling") ? none : call.attrs["scaling"];
  if (const std::string e = rope_frequencies(theta, r.rd, scaling, &r.freqs); !e.empty()) {
    if (e.rfind("unsupported: ", 0) == 0) unsupported(call, e.substr(13));
    require(call, false, e);
  }
  r.axes = 1;
  const Json& mrope = attr_null(call.attrs, "mrope") ? none : call.attrs["mrope"];
  if (const std::string e =
          rope_mrope(mrope, theta, r.rd, !scaling.is_null(), &r.freqs, &r.axis, &r.axes);
      !e.empty()) {
    require(call, false, e);
  }
  if (r.axis.empty()) {
    require_index(call, positions, "positions", {r.t});
  } else {
    require_index(call, positions, "positions", {r.axes, r.t});
  }
  return r;
}

namespace {

void require_heads(const Operands& call, int64_t hq, int64_t hkv) {
  require(call, hkv > 0 && hq % hkv == 0,
          "q heads (" + std::to_string(hq) + ") must be a multiple of kv heads (" +
              std::to_string(hkv) + ")");
}

// Checks q (already checked as [T, Hq, Dh]) against the keys (s of them, hkv heads, dv values
// each) and o; reads the attrs.
Attention attention_query(const Operands& call, int64_t s, int64_t hkv, int64_t dv) {
  const hb_tensor& q = call.in[0];
  Attention a{};
  a.t = q.shape[0];
  a.hq = q.shape[1];
  a.dh = q.shape[2];
  a.s = s;
  a.hkv = hkv;
  a.dv = dv;
  require_heads(call, a.hq, a.hkv);
  require_tensor(call, call.out[0], "o", {a.t, a.hq, a.dv}, q.dtype);
  a.scale = scale_attr(call, a.dh);
  a.q_offset = attr_null(call.attrs, "q_offset") ? s - a.t : attr_i(call.attrs, "q_offset", 0);
  a.causal = attr_b(call.attrs, "causal", true);
  a.window = attr_i(call.attrs, "sliding_window", 0);
  require(call, a.window >= 0, "attr sliding_window must be >= 0, got " + std::to_string(a.window));
  return a;
}

}  // namespace

Attention attention_operands(const Operands& call) {
  const hb_tensor &q = call.in[0], &k = call.in[1], &v = call.in[2];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  require_tensor(call, k, "k", {-1, -1, q.shape[2]}, q.dtype);
  require_tensor(call, v, "v", {k.shape[0], k.shape[1], -1}, q.dtype);
  return attention_query(call, k.shape[0], k.shape[1], v.shape[2]);
}

PagedAttention paged_attention_operands(const Operands& call) {
  const hb_tensor &q = call.in[0], &kc = call.in[1], &vc = call.in[2], &table = call.in[3];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  require_tensor(call, kc, "k_cache", {-1, -1, -1, q.shape[2]}, q.dtype);
  const int64_t nb = kc.shape[0], bsz = kc.shape[1], hkv = kc.shape[2];
  require_tensor(call, vc, "v_cache", {nb, bsz, hkv, -1}, q.dtype);
  PagedAttention p{};
  p.ctx = paged_context(call, kc, table, q.shape[0]);
  p.a = attention_query(call, p.ctx.len, hkv, vc.shape[3]);
  if (call.n_in > 4) {
    require_tensor(call, call.in[4], "sinks", {p.a.hq}, q.dtype);
    p.sinks = &call.in[4];
  }
  return p;
}

LightningIndexer lightning_indexer_operands(const Operands& call) {
  const hb_tensor &q = call.in[0], &kc = call.in[1], &w = call.in[2], &table = call.in[3];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  LightningIndexer li{};
  li.t = q.shape[0];
  li.h = q.shape[1];
  li.d = q.shape[2];
  require_tensor(call, kc, "k_cache", {-1, -1, li.d}, q.dtype);
  require_tensor(call, w, "weights", {li.t, li.h}, q.dtype);
  li.topk = attr_i(call.attrs, "topk", 0);
  require(call, li.topk > 0, "attr topk must be positive, got " + std::to_string(li.topk));
  require_tensor(call, call.out[0], "indices", {li.t, li.topk}, HB_I32);
  li.ctx = paged_context(call, kc, table, li.t);
  li.scale = scale_attr(call, li.d);
  return li;
}

SparseAttention sparse_attention_operands(const Operands& call) {
  const hb_tensor &q = call.in[0], &kc = call.in[1], &vc = call.in[2], &table = call.in[3],
                  &idx = call.in[4];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  SparseAttention s{};
  s.t = q.shape[0];
  s.hq = q.shape[1];
  s.dh = q.shape[2];
  require_tensor(call, kc, "k_cache", {-1, -1, -1, s.dh}, q.dtype);
  const int64_t nb = kc.shape[0], bsz = kc.shape[1];
  s.hkv = kc.shape[2];
  require_tensor(call, vc, "v_cache", {nb, bsz, s.hkv, -1}, q.dtype);
  s.dv = vc.shape[3];
  require_heads(call, s.hq, s.hkv);
  require_tensor(call, idx, "indices", {s.t, -1}, HB_I32);
  s.n_idx = idx.shape[1];
  require_tensor(call, call.out[0], "o", {s.t, s.hq, s.dv}, q.dtype);
  s.ctx = paged_context(call, kc, table, s.t);
  s.indices = read_indices(call, idx);
  require_in_range(call, idx, "indices", s.indices, -1, s.ctx.len,
                   "[-1, context_len = " + std::to_string(s.ctx.len) + ")");
  s.scale = scale_attr(call, s.dh);
  return s;
}

CausalConv1d causal_conv1d_operands(const Operands& call) {
  const hb_tensor &x = call.in[0], &w = call.in[1];
  require_tensor(call, x, "x", {-1, -1}, x.dtype);
  CausalConv1d cv{};
  cv.t = x.shape[0];
  cv.c = x.shape[1];
  require(call, w.ndim == 2 && w.shape[0] == cv.c && w.shape[1] >= 2,
          "w must be [C, K >= 2], got " + describe(w));
  cv.k = w.shape[1];
  require_tensor(call, w, "w", {cv.c, cv.k}, x.dtype);
  require_tensor(call, call.in[2], "state", {cv.c, cv.k - 1}, x.dtype);
  cv.has_bias = call.n_in > 3;
  if (cv.has_bias) require_tensor(call, call.in[3], "bias", {cv.c}, x.dtype);
  require_tensor(call, call.out[0], "y", {cv.t, cv.c}, x.dtype);
  require_tensor(call, call.out[1], "state_out", {cv.c, cv.k - 1}, x.dtype);
  const std::string act = attr_s(call.attrs, "activation", "silu");
  if (act != "silu" && act != "none") unsupported(call, "activation '" + act + "' (silu or none)");
  cv.silu = act == "silu";
  return cv;
}

GatedDeltaRule gated_delta_rule_operands(const Operands& call) {
  const hb_tensor &q = call.in[0], &k = call.in[1], &v = call.in[2];
  const hb_dtype dt = q.dtype;
  require_tensor(call, q, "q", {-1, -1, -1}, dt);
  GatedDeltaRule r{};
  r.t = q.shape[0];
  r.hk = q.shape[1];
  r.dk = q.shape[2];
  require_tensor(call, k, "k", {r.t, r.hk, r.dk}, dt);
  require(call,
          v.ndim == 3 && v.shape[0] == r.t && r.hk > 0 && v.shape[1] > 0 && v.shape[1] % r.hk == 0,
          "v must be [T, Hv, Dv] with Hv a multiple of Hk = " + std::to_string(r.hk) + ", got " +
              describe(v));
  r.hv = v.shape[1];
  r.dv = v.shape[2];
  require_tensor(call, v, "v", {r.t, r.hv, r.dv}, dt);
  require_tensor(call, call.in[3], "g", {r.t, r.hv}, HB_F32);
  require_tensor(call, call.in[4], "beta", {r.t, r.hv}, dt);
  require_tensor(call, call.in[5], "state", {r.hv, r.dk, r.dv}, HB_F32);
  require_tensor(call, call.out[0], "o", {r.t, r.hv, r.dv}, dt);
  require_tensor(call, call.out[1], "state_out", {r.hv, r.dk, r.dv}, HB_F32);
  r.scale = scale_attr(call, r.dk);
  r.l2norm = attr_b(call.attrs, "l2norm_qk", true);
  r.eps = static_cast<float>(attr_f(call.attrs, "l2norm_eps", 1e-6));
  return r;
}

MoeGate moe_gate_operands(const Operands& call) {
  const hb_tensor& logits = call.in[0];
  require_tensor(call, logits, "logits", {-1, -1}, logits.dtype);
  MoeGate g{};
  g.t = logits.shape[0];
  g.e = logits.shape[1];
  if (call.n_in > 1) {
    require_tensor(call, call.in[1], "bias", {g.e}, logits.dtype);
    g.bias = &call.in[1];
  }
  g.k = attr_i(call.attrs, "top_k", 2);
  require_tensor(call, call.out[0], "weights", {g.t, g.k}, HB_F32);
  require_tensor(call, call.out[1], "ids", {g.t, g.k}, HB_I32);
  g.sigmoid = attr_either(call, "scoring", "softmax", "softmax", "sigmoid") == "sigmoid";
  g.normalize = attr_b(call.attrs, "normalize", false);
  g.routed_scale = static_cast<float>(attr_f(call.attrs, "routed_scaling_factor", 1.0));
  g.n_group = attr_i(call.attrs, "n_group", 1);
  g.topk_group = attr_i(call.attrs, "topk_group", 1);
  require(call, g.n_group >= 1 && g.e % g.n_group == 0,
          "attr n_group (" + std::to_string(g.n_group) + ") must divide the " +
              std::to_string(g.e) + " experts");
  const bool grouped = g.n_group > 1;
  require(call, !grouped || (g.topk_group >= 1 && g.topk_group <= g.n_group),
          "attr topk_group must be in [1, n_group = " + std::to_string(g.n_group) + "], got " +
              std::to_string(g.topk_group));
  const int64_t eligible = grouped ? g.topk_group * (g.e / g.n_group) : g.e;
  require(call, g.k >= 1 && g.k <= eligible,
          "attr top_k must be in [1, " + std::to_string(eligible) +
              "] (the experts eligible), got " + std::to_string(g.k));
  return g;
}

MoeExperts moe_experts_operands(const Operands& call) {
  const hb_tensor &x = call.in[0], &wts = call.in[1], &ids = call.in[2];
  const hb_tensor &wg = call.in[3], &wu = call.in[4], &wd = call.in[5];
  const hb_dtype dt = x.dtype;
  MoeExperts m{};
  require_tensor(call, x, "x", {-1, -1}, dt);
  m.t = x.shape[0];
  m.d = x.shape[1];
  require_tensor(call, wts, "weights", {m.t, -1}, HB_F32);
  m.k = wts.shape[1];
  require_tensor(call, ids, "ids", {m.t, m.k}, HB_I32);
  require_tensor(call, wg, "w_gate", {-1, -1, m.d}, dt);
  m.e = wg.shape[0];
  m.f = wg.shape[1];
  require_tensor(call, wu, "w_up", {m.e, m.f, m.d}, dt);
  require_tensor(call, wd, "w_down", {m.e, m.d, m.f}, dt);
  require_tensor(call, call.out[0], "y", {m.t, m.d}, dt);
  m.biased = call.n_in > 6;
  if (m.biased) {
    require(
        call, call.n_in == 9,
        "b_gate, b_up and b_down come together (got " + std::to_string(call.n_in - 6) + " of 3)");
    require_tensor(call, call.in[6], "b_gate", {m.e, m.f}, dt);
    require_tensor(call, call.in[7], "b_up", {m.e, m.f}, dt);
    require_tensor(call, call.in[8], "b_down", {m.e, m.d}, dt);
  }
  m.clamped = attr_either(call, "activation", "silu", "silu", "clamped_swiglu") == "clamped_swiglu";
  m.alpha = static_cast<float>(attr_f(call.attrs, "alpha", 1.702));
  m.limit = static_cast<float>(attr_f(call.attrs, "limit", 7.0));
  require_in_range(call, ids, "ids", read_indices(call, ids), 0, m.e,
                   "the " + std::to_string(m.e) + " experts");
  return m;
}

ScaledLinear scaled_linear_operands(const Operands& call, hb_dtype w_dtype) {
  const hb_tensor &x = call.in[0], &w = call.in[1], &w_scale = call.in[2];
  const hb_dtype dt = x.dtype;
  require_tensor(call, x, "x", {-1, -1}, dt);
  ScaledLinear s{x.shape[0], x.shape[1], 0, 0, 0, nullptr, false};
  require_tensor(call, w, "w", {-1, s.k}, w_dtype);
  s.n = w.shape[0];
  s.bn = attr_i(call.attrs, "block_n", 128);
  s.bk = attr_i(call.attrs, "block_k", 128);
  require(call, s.bn > 0 && s.bk > 0, "attrs block_n and block_k must be positive");
  require_tensor(call, w_scale, "w_scale", {(s.n + s.bn - 1) / s.bn, (s.k + s.bk - 1) / s.bk},
                 HB_F32);
  if (call.n_in > 3) {
    s.bias = &call.in[3];
    require_tensor(call, *s.bias, "bias", {s.n}, dt);
  }
  require_tensor(call, call.out[0], "y", {s.t, s.n}, dt);
  s.dynamic = attr_either(call, "act_quant", "none", "none", "dynamic") == "dynamic";
  return s;
}

int64_t dequantize_mxfp4_operands(const Operands& call) {
  const hb_tensor &blocks = call.in[0], &scales = call.in[1], &out = call.out[0];
  require(call, blocks.dtype == HB_U8 && scales.dtype == HB_U8,
          "blocks and scales must be u8, got " + describe(blocks) + " and " + describe(scales));
  require(call,
          scales.ndim >= 1 && blocks.ndim == scales.ndim + 1 && blocks.shape[blocks.ndim - 1] == 16,
          "blocks must be [..., G, 16] over scales [..., G], got " + describe(blocks) + " and " +
              describe(scales));
  for (int i = 0; i < scales.ndim; ++i) {
    require(call, blocks.shape[i] == scales.shape[i],
            "blocks " + describe(blocks) + " do not match scales " + describe(scales));
  }
  bool same = out.ndim == scales.ndim && is_float(out.dtype);
  for (int i = 0; same && i < scales.ndim; ++i)
    same = out.shape[i] == scales.shape[i] * (i == scales.ndim - 1 ? 32 : 1);
  require(call, same, "x must be f32, bf16 or f16 of [..., G·32], got " + describe(out));
  return numel(scales);
}

}  // namespace h0p
