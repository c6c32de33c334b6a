// moe_gate and moe_experts (kernels/moe.inc).
//   moe_gate(logits[T,E], bias[E]?) -> weights[T,k] f32, ids[T,k] i32
//   moe_experts(x[T,D], weights[T,k] f32, ids[T,k] i32, w_gate[E,F,D], w_up[E,F,D],
//               w_down[E,D,F], b_gate[E,F]?, b_up[E,F]?, b_down[E,D]?) -> y[T,D]; ids are validated
//               on the host (copied back). attr activation: silu or clamped_swiglu (GPT-OSS).
#include <string>

#include "op_call.h"

namespace h0p {

void moe_gate_op(const Call& call) {
  const hb_tensor& logits = call.in[0];
  require_tensor(call, logits, "logits", {-1, -1}, logits.dtype);
  const int64_t t = logits.shape[0], e = logits.shape[1];
  const void* bias = nullptr;
  if (call.n_in > 1) {
    require_tensor(call, call.in[1], "bias", {e}, logits.dtype);
    bias = call.in[1].data;
  }
  const int64_t k = attr_i(call.attrs, "top_k", 2);
  require_tensor(call, call.out[0], "weights", {t, k}, HB_F32);
  require_tensor(call, call.out[1], "ids", {t, k}, HB_I32);
  const std::string scoring = attr_s(call.attrs, "scoring", "softmax");
  require(call, scoring == "softmax" || scoring == "sigmoid",
          "attr scoring must be softmax or sigmoid, got '" + scoring + "'");
  const int64_t n_group = attr_i(call.attrs, "n_group", 1),
                topk_group = attr_i(call.attrs, "topk_group", 1);
  require(call, n_group >= 1 && e % n_group == 0,
          "attr n_group (" + std::to_string(n_group) + ") must divide the " + std::to_string(e) +
              " experts");
  const bool grouped = n_group > 1;
  require(call, !grouped || (topk_group >= 1 && topk_group <= n_group),
          "attr topk_group must be in [1, n_group = " + std::to_string(n_group) + "], got " +
              std::to_string(topk_group));
  const int64_t eligible = grouped ? topk_group * (e / n_group) : e;
  require(call, k >= 1 && k <= eligible,
          "attr top_k must be in [1, " + std::to_string(eligible) +
              "] (the experts eligible), got " + std::to_string(k));
  if (t == 0) return;
  Scratch scratch(call.dev, static_cast<size_t>(t * (3 * e + n_group)) * sizeof(float));
  const int has_bias = bias != nullptr ? 1 : 0, sigmoid = scoring == "sigmoid" ? 1 : 0;
  const int normalize = attr_b(call.attrs, "normalize", false) ? 1 : 0;
  const int ti = as_int(call, t), ei = as_int(call, e), ki = as_int(call, k),
            gi = as_int(call, n_group), tgi = as_int(call, topk_group);
  const float scale = static_cast<float>(attr_f(call.attrs, "routed_scaling_factor", 1.0));
  call.dev.launch("moe_gate", logits.dtype, grid_1d(t, 64),
                  {buffer(logits.data), buffer(bias), i32(has_bias), buffer(call.out[0].data),
                   buffer(call.out[1].data), buffer(scratch.handle()), i32(ti), i32(ei), i32(ki),
                   i32(sigmoid), i32(normalize), i32(gi), i32(tgi), f32(scale)});
}

void moe_experts_op(const Call& call) {
  const hb_tensor &x = call.in[0], &wts = call.in[1], &ids = call.in[2];
  const hb_tensor &wg = call.in[3], &wu = call.in[4], &wd = call.in[5];
  const hb_dtype dt = x.dtype;
  require_tensor(call, x, "x", {-1, -1}, dt);
  const int64_t t = x.shape[0], d = x.shape[1];
  require_tensor(call, wts, "weights", {t, -1}, HB_F32);
  const int64_t k = wts.shape[1];
  require_tensor(call, ids, "ids", {t, k}, HB_I32);
  require_tensor(call, wg, "w_gate", {-1, -1, d}, dt);
  const int64_t e = wg.shape[0], f = wg.shape[1];
  require_tensor(call, wu, "w_up", {e, f, d}, dt);
  require_tensor(call, wd, "w_down", {e, d, f}, dt);
  require_tensor(call, call.out[0], "y", {t, d}, dt);
  const bool biased = call.n_in > 6;
  if (biased) {
    require(
        call, call.n_in == 9,
        "b_gate, b_up and b_down come together (got " + std::to_string(call.n_in - 6) + " of 3)");
    require_tensor(call, call.in[6], "b_gate", {e, f}, dt);
    require_tensor(call, call.in[7], "b_up", {e, f}, dt);
    require_tensor(call, call.in[8], "b_down", {e, d}, dt);
  }
  const std::string activation = attr_s(call.attrs, "activation", "silu");
  require(call, activation == "silu" || activation == "clamped_swiglu",
          "attr activation must be silu or clamped_swiglu, got '" + activation + "'");
  const int clamped = activation == "clamped_swiglu" ? 1 : 0;
  const float alpha = static_cast<float>(attr_f(call.attrs, "alpha", 1.702)),
              limit = static_cast<float>(attr_f(call.attrs, "limit", 7.0));
  const void* bg = biased ? call.in[6].data : nullptr;
  const void* bu = biased ? call.in[7].data : nullptr;
  const void* bd = biased ? call.in[8].data : nullptr;
  const std::vector<int64_t> host_ids = read_indices(call, ids);
  for (size_t i = 0; i < host_ids.size(); ++i) {
    if (host_ids[i] < 0 || host_ids[i] >= e)
      require(call, false,
              "ids[" + std::to_string(i / k) + ", " + std::to_string(i % k) +
                  "] = " + std::to_string(host_ids[i]) + " is outside the " + std::to_string(e) +
                  " experts");
  }
  if (t * d == 0) return;
  const int tk = as_int(call, t * k), ki = as_int(call, k), di = as_int(call, d),
            fi = as_int(call, f), ti = as_int(call, t);
  as_int(call, t * k * f);
  Scratch h(call.dev, static_cast<size_t>(t * k * f) * sizeof(float));
  call.dev.launch("moe_up", dt, grid_1d(t * k * f),
                  {buffer(x.data), buffer(ids.data), buffer(wg.data), buffer(wu.data),
                   buffer(h.handle()), i32(tk), i32(ki), i32(di), i32(fi), buffer(bg), buffer(bu),
                   i32(biased ? 1 : 0), i32(clamped), f32(alpha), f32(limit)});
  call.dev.launch("moe_down", dt, grid_1d(t * d),
                  {buffer(h.handle()), buffer(ids.data), buffer(wts.data), buffer(wd.data),
                   buffer(call.out[0].data), i32(ti), i32(ki), i32(di), i32(fi), buffer(bd),
                   i32(biased ? 1 : 0)});
}

}  // namespace h0p
