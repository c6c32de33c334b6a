// rope, attention and paged_attention (kernels/attention.inc).
//   rope(x[T,H,Dh], positions[T]) -> y[T,H,Dh]: cos/sin tables [T, rd/2] are computed on the
//     host in f64 from the positions (copied back: T values) and uploaded; the rotation is f32.
//   attention(q[T,Hq,Dh], k[S,Hkv,Dh], v[S,Hkv,Dv]) -> o[T,Hq,Dv]
//   paged_attention(q, k_cache[NB,B,Hkv,Dh], v_cache[NB,B,Hkv,Dv], block_table[n] i32) -> o;
//     the block table is validated on the host (copied back: n values).
#include <cmath>
#include <string>

#include "op_call.h"
#include "rope_frequencies.h"

namespace h0p {
namespace {

struct AttentionArgs {
  int s, hq, hkv, dh, dv, q_offset, causal, window, bsz;
  float scale;
};

// Checks q, the head counts and o; reads the attrs. s: the key length (the q_offset default is
// s - T).
AttentionArgs check_query(const Call& call, int64_t s, int64_t hkv, int64_t dv) {
  const hb_tensor& q = call.in[0];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  const int64_t t = q.shape[0], hq = q.shape[1], dh = q.shape[2];
  require(call, hkv > 0 && hq % hkv == 0,
          "q heads (" + std::to_string(hq) + ") must be a multiple of kv heads (" +
              std::to_string(hkv) + ")");
  require_tensor(call, call.out[0], "o", {t, hq, dv}, q.dtype);
  AttentionArgs a{};
  a.s = as_int(call, s);
  a.hq = as_int(call, hq);
  a.hkv = as_int(call, hkv);
  a.dh = as_int(call, dh);
  a.dv = as_int(call, dv);
  a.scale =
      static_cast<float>(attr_null(call.attrs, "scale") ? 1.0 / std::sqrt(static_cast<double>(dh))
                                                        : attr_f(call.attrs, "scale", 0));
  a.q_offset = static_cast<int>(
      attr_null(call.attrs, "q_offset") ? s - t : attr_i(call.attrs, "q_offset", 0));
  a.causal = attr_b(call.attrs, "causal", true) ? 1 : 0;
  const int64_t window = attr_i(call.attrs, "sliding_window", 0);
  require(call, window >= 0, "attr sliding_window must be >= 0, got " + std::to_string(window));
  a.window = as_int(call, window);
  a.bsz = 1;
  return a;
}

// Launches the attention kernel: one work-group per (token, q head).
// sinks: [hq] of q's dtype, or null.
void attend(const Call& call, const void* k, const void* v, const void* table,
            const AttentionArgs& a, const void* sinks = nullptr) {
  const hb_tensor& q = call.in[0];
  const int64_t rows = q.shape[0] * q.shape[1];
  if (rows == 0 || a.dv == 0) return;
  Scratch scores(
      call.dev, static_cast<size_t>(rows) * static_cast<size_t>(a.s > 0 ? a.s : 1) * sizeof(float));
  call.dev.launch("attention", q.dtype, per_row(rows),
                  {buffer(q.data), buffer(k), buffer(v), buffer(table), buffer(call.out[0].data),
                   buffer(scores.handle()), i32(a.s), i32(a.hq), i32(a.hkv), i32(a.dh), i32(a.dv),
                   f32(a.scale), i32(a.q_offset), i32(a.causal), i32(a.window), i32(a.bsz),
                   buffer(sinks), i32(sinks != nullptr ? 1 : 0)});
}

}  // namespace

void rope_op(const Call& call) {
  const hb_tensor &x = call.in[0], &positions = call.in[1];
  require_tensor(call, x, "x", {-1, -1, -1}, x.dtype);
  const int64_t t = x.shape[0], h = x.shape[1], dh = x.shape[2];
  require_like(call, call.out[0], "y", x);
  const int64_t rd =
      attr_null(call.attrs, "rotary_dim") ? dh : attr_i(call.attrs, "rotary_dim", dh);
  require(call, rd > 0 && rd <= dh && rd % 2 == 0,
          "attr rotary_dim must be even and in (0, Dh = " + std::to_string(dh) + "], got " +
              std::to_string(rd));
  const std::string style = attr_s(call.attrs, "style", "neox");
  require(call, style == "neox" || style == "gptj",
          "attr style must be neox or gptj, got '" + style + "'");
  const double theta = attr_f(call.attrs, "theta", 10000.0);
  require(call, theta > 0, "attr theta must be positive");
  const Json scaling = call.attrs.contains("scaling") ? call.attrs["scaling"] : Json();
  RopeFrequencies freqs;
  if (const std::string e = rope_frequencies(theta, rd, scaling, &freqs); !e.empty()) {
    if (e.rfind("unsupported: ", 0) == 0)
      throw OpError(HB_UNSUPPORTED, std::string(call.op) + ": " + e.substr(13));
    require(call, false, e);
  }
  std::vector<int64_t> axis;  // per pair, its row of positions (mrope); empty: positions [T]
  int64_t axes = 1;
  if (const std::string e = rope_mrope(call.attrs.contains("mrope") ? call.attrs["mrope"] : Json(),
                                       theta, rd, !scaling.is_null(), &freqs, &axis, &axes);
      !e.empty()) {
    require(call, false, e);
  }
  if (axis.empty()) {
    require_index(call, positions, "positions", {t});
  } else {
    require_index(call, positions, "positions", {axes, t});
  }
  if (t * h * dh == 0) return;

  const std::vector<int64_t> pos = read_indices(call, positions);
  const size_t half = static_cast<size_t>(rd / 2), tokens = static_cast<size_t>(t);
  std::vector<float> cs(tokens * half), sn(tokens * half);
  for (size_t tok = 0; tok < tokens; ++tok) {
    for (size_t i = 0; i < half; ++i) {
      const size_t row = axis.empty() ? 0 : static_cast<size_t>(axis[i]);
      const double angle = static_cast<double>(pos[row * tokens + tok]) * freqs.inv_freq[i];
      cs[tok * half + i] = static_cast<float>(std::cos(angle) * freqs.attention_factor);
      sn[tok * half + i] = static_cast<float>(std::sin(angle) * freqs.attention_factor);
    }
  }
  Scratch cs_dev(call.dev, cs.size() * sizeof(float)), sn_dev(call.dev, sn.size() * sizeof(float));
  call.dev.write(cs_dev.handle(), cs.data(), cs.size() * sizeof(float));
  call.dev.write(sn_dev.handle(), sn.data(), sn.size() * sizeof(float));
  const int ti = as_int(call, t), hi = as_int(call, h), dhi = as_int(call, dh),
            rdi = as_int(call, rd);
  const int neox = style == "neox" ? 1 : 0;
  call.dev.launch("rope", x.dtype, grid_1d(t * h * dh),
                  {buffer(x.data), buffer(cs_dev.handle()), buffer(sn_dev.handle()),
                   buffer(call.out[0].data), i32(ti), i32(hi), i32(dhi), i32(rdi), i32(neox)});
}

void attention_op(const Call& call) {
  const hb_tensor &q = call.in[0], &k = call.in[1], &v = call.in[2];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  require_tensor(call, k, "k", {-1, -1, q.shape[2]}, q.dtype);
  require_tensor(call, v, "v", {k.shape[0], k.shape[1], -1}, q.dtype);
  const AttentionArgs a = check_query(call, k.shape[0], k.shape[1], v.shape[2]);
  attend(call, k.data, v.data, nullptr, a);
}

void paged_attention_op(const Call& call) {
  const hb_tensor &q = call.in[0], &kc = call.in[1], &vc = call.in[2], &table = call.in[3];
  require_tensor(call, q, "q", {-1, -1, -1}, q.dtype);
  require_tensor(call, kc, "k_cache", {-1, -1, -1, q.shape[2]}, q.dtype);
  const int64_t nb = kc.shape[0], bsz = kc.shape[1], hkv = kc.shape[2];
  require_tensor(call, vc, "v_cache", {nb, bsz, hkv, -1}, q.dtype);
  const PagedContext p = paged_context(call, kc, table, q.shape[0]);
  AttentionArgs a = check_query(call, p.len, hkv, vc.shape[3]);
  a.bsz = p.bsz;
  const void* sinks = nullptr;
  if (call.n_in > 4) {  // GPT-OSS's attention sinks
    require_tensor(call, call.in[4], "sinks", {q.shape[1]}, q.dtype);
    sinks = call.in[4].data;
  }
  attend(call, kc.data, vc.data, table.data, a, sinks);
}

}  // namespace h0p
