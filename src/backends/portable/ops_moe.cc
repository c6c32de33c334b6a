// moe_gate and moe_experts (kernels/moe.inc).
//   moe_gate(logits[T,E], bias[E]?) -> weights[T,k] f32, ids[T,k] i32
//   moe_experts(x[T,D], weights[T,k] f32, ids[T,k] i32, w_gate[E,F,D], w_up[E,F,D],
//               w_down[E,D,F], b_gate[E,F]?, b_up[E,F]?, b_down[E,D]?) -> y[T,D]; ids are validated
//               on the host (copied back). attr activation: silu or clamped_swiglu (GPT-OSS).
#include "op_call.h"

namespace h0p {

void moe_gate_op(const Call& call) {
  const MoeGate g = moe_gate_operands(call);
  if (g.t == 0) return;
  const hb_tensor& logits = call.in[0];
  const void* bias = g.bias != nullptr ? g.bias->data : nullptr;
  Scratch scratch(call.dev, static_cast<size_t>(g.t * (3 * g.e + g.n_group)) * sizeof(float));
  const int has_bias = bias != nullptr ? 1 : 0, sigmoid = g.sigmoid ? 1 : 0,
            normalize = g.normalize ? 1 : 0;
  const int ti = as_int(call, g.t), ei = as_int(call, g.e), ki = as_int(call, g.k),
            gi = as_int(call, g.n_group), tgi = as_int(call, g.topk_group);
  call.dev.launch("moe_gate", logits.dtype, grid_1d(g.t, 64),
                  {buffer(logits.data), buffer(bias), i32(has_bias), buffer(call.out[0].data),
                   buffer(call.out[1].data), buffer(scratch.handle()), i32(ti), i32(ei), i32(ki),
                   i32(sigmoid), i32(normalize), i32(gi), i32(tgi), f32(g.routed_scale)});
}

void moe_experts_op(const Call& call) {
  const MoeExperts m = moe_experts_operands(call);
  const hb_tensor &x = call.in[0], &wts = call.in[1], &ids = call.in[2];
  const hb_tensor &wg = call.in[3], &wu = call.in[4], &wd = call.in[5];
  const void* bg = m.biased ? call.in[6].data : nullptr;
  const void* bu = m.biased ? call.in[7].data : nullptr;
  const void* bd = m.biased ? call.in[8].data : nullptr;
  if (m.t * m.d == 0) return;
  const int tk = as_int(call, m.t * m.k), ki = as_int(call, m.k), di = as_int(call, m.d),
            fi = as_int(call, m.f), ti = as_int(call, m.t);
  as_int(call, m.t * m.k * m.f);
  const int biased = m.biased ? 1 : 0, clamped = m.clamped ? 1 : 0;
  Scratch h(call.dev, static_cast<size_t>(m.t * m.k * m.f) * sizeof(float));
  call.dev.launch("moe_up", x.dtype, grid_1d(m.t * m.k * m.f),
                  {buffer(x.data), buffer(ids.data), buffer(wg.data), buffer(wu.data),
                   buffer(h.handle()), i32(tk), i32(ki), i32(di), i32(fi), buffer(bg), buffer(bu),
                   i32(biased), i32(clamped), f32(m.alpha), f32(m.limit)});
  call.dev.launch(
      "moe_down", x.dtype, grid_1d(m.t * m.d),
      {buffer(h.handle()), buffer(ids.data), buffer(wts.data), buffer(wd.data),
       buffer(call.out[0].data), i32(ti), i32(ki), i32(di), i32(fi), buffer(bd), i32(biased)});
}

}  // namespace h0p
