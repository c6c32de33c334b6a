// rope, attention and paged_attention (kernels/attention.inc).
//   rope(x[T,H,Dh], positions[T]) -> y[T,H,Dh]: cos/sin tables [T, rd/2] are computed on the
//     host in f64 from the positions (copied back: T values) and uploaded; the rotation is f32.
//   attention(q[T,Hq,Dh], k[S,Hkv,Dh], v[S,Hkv,Dv]) -> o[T,Hq,Dv]
//   paged_attention(q, k_cache[NB,B,Hkv,Dh], v_cache[NB,B,Hkv,Dv], block_table[n] i32) -> o;
//     the block table is validated on the host (copied back: n values).
#include <cmath>

#include "op_call.h"

namespace h0p {
namespace {

struct AttentionArgs {
  int s, hq, hkv, dh, dv, q_offset, causal, window, bsz;
  float scale;
};

// The kernel's arguments for a query side checked by op_operands.
AttentionArgs attention_args(const Call& call, const Attention& at, int64_t bsz) {
  AttentionArgs a{};
  a.s = as_int(call, at.s);
  a.hq = as_int(call, at.hq);
  a.hkv = as_int(call, at.hkv);
  a.dh = as_int(call, at.dh);
  a.dv = as_int(call, at.dv);
  a.scale = at.scale;
  a.q_offset = static_cast<int>(at.q_offset);
  a.causal = at.causal ? 1 : 0;
  a.window = as_int(call, at.window);
  a.bsz = as_int(call, bsz);
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
  const Rope r = rope_operands(call);
  const hb_tensor &x = call.in[0], &positions = call.in[1];
  const int64_t t = r.t, h = r.h, dh = r.dh, rd = r.rd;
  if (t * h * dh == 0) return;

  const std::vector<int64_t> pos = read_indices(call, positions);
  const size_t half = static_cast<size_t>(rd / 2), tokens = static_cast<size_t>(t);
  std::vector<float> cs(tokens * half), sn(tokens * half);
  for (size_t tok = 0; tok < tokens; ++tok) {
    for (size_t i = 0; i < half; ++i) {
      const size_t row = r.axis.empty() ? 0 : static_cast<size_t>(r.axis[i]);
      const double angle = static_cast<double>(pos[row * tokens + tok]) * r.freqs.inv_freq[i];
      cs[tok * half + i] = static_cast<float>(std::cos(angle) * r.freqs.attention_factor);
      sn[tok * half + i] = static_cast<float>(std::sin(angle) * r.freqs.attention_factor);
    }
  }
  Scratch cs_dev(call.dev, cs.size() * sizeof(float)), sn_dev(call.dev, sn.size() * sizeof(float));
  call.dev.write(cs_dev.handle(), cs.data(), cs.size() * sizeof(float));
  call.dev.write(sn_dev.handle(), sn.data(), sn.size() * sizeof(float));
  const int ti = as_int(call, t), hi = as_int(call, h), dhi = as_int(call, dh),
            rdi = as_int(call, rd);
  const int neox = r.neox ? 1 : 0;
  call.dev.launch("rope", x.dtype, grid_1d(t * h * dh),
                  {buffer(x.data), buffer(cs_dev.handle()), buffer(sn_dev.handle()),
                   buffer(call.out[0].data), i32(ti), i32(hi), i32(dhi), i32(rdi), i32(neox)});
}

void attention_op(const Call& call) {
  const Attention a = attention_operands(call);
  attend(call, call.in[1].data, call.in[2].data, nullptr, attention_args(call, a, 1));
}

void paged_attention_op(const Call& call) {
  const PagedAttention p = paged_attention_operands(call);
  attend(call, call.in[1].data, call.in[2].data, call.in[3].data,
         attention_args(call, p.a, p.ctx.bsz), p.sinks != nullptr ? p.sinks->data : nullptr);
}

}  // namespace h0p
