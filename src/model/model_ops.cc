#include "model/model_ops.h"

#include <cmath>

#include "base/error.h"

namespace h0::model {

ModelOps model_ops(const Architecture& arch, bool act_quant) {
  const TextModel& t = arch.text;
  ModelOps o;
  o.rmsnorm = bind_op("rmsnorm", {{"eps", t.rms_norm_eps}});
  o.linear = bind_op("linear");
  if (arch.quantization.method == "fp8") {
    const Quantization& q = arch.quantization;
    o.scaled_linear = bind_op("scaled_linear", {{"block_n", q.block_rows},  // > 0 for fp8 (architecture.cc)
                                                {"block_k", q.block_cols},
                                                {"act_quant", act_quant ? "dynamic" : "none"}});
  }
  o.add = bind_op("add");
  bool dense_mlp = arch.text.moe.num_shared_experts > 0;  // shared experts are a dense MLP
  for (int64_t l = 0; l < t.num_layers && !dense_mlp; ++l) dense_mlp = !t.is_moe_layer(l);
  if (dense_mlp) o.swiglu = bind_op("swiglu");
  o.embedding = bind_op("embedding");
  ops::Json rope = {{"theta", t.rope_theta}, {"style", t.attn.mla ? "gptj" : "neox"}, {"scaling", t.rope_scaling_json}};
  if (t.attn.rotary_dim > 0 && !t.attn.mla) {
    // An odd partial rotary dim (transformers' default Glm4MoeConfig: int(42 · 0.5)): HF's
    // frequencies over the odd dim are not rope's (even rotary_dim), so no run can match it.
    if (t.attn.rotary_dim % 2 != 0) {
      throw InputError("config.json: partial_rotary_factor",
                       "the rotary dim " + std::to_string(t.attn.rotary_dim) + " of head_dim " + std::to_string(t.attn.head_dim) +
                           " is odd: the rope op turns an even number of dims");
    }
    rope["rotary_dim"] = t.attn.rotary_dim;
  }
  o.rope = bind_op("rope", rope);
  if (arch.is_moe()) {
    const Moe& m = t.moe;
    o.moe_gate = bind_op("moe_gate", {{"top_k", m.experts_per_token}, {"scoring", m.scoring},
                                      {"normalize", m.norm_topk_prob}, {"n_group", m.n_group},
                                      {"topk_group", m.topk_group}, {"routed_scaling_factor", m.routed_scaling_factor}});
    o.moe_experts = bind_op("moe_experts");
    if (m.shared_expert_gate) {
      o.sigmoid = bind_op("sigmoid");
      o.mul = bind_op("mul");
    }
  }
  o.argmax = bind_op("argmax");
  if (arch.vision) {
    const Vision& v = *arch.vision;
    o.layernorm = bind_op("layernorm", {{"eps", v.layer_norm_eps}});
    o.mul = bind_op("mul");
    o.silu = bind_op("silu");
    o.gelu = bind_op("gelu", {{"approximate", "none"}});
    o.patch_embed = bind_op("patch_embed", {{"patch", v.patch_size}});
    o.vision_attention =
        bind_op("attention", {{"causal", false}, {"scale", 1.0 / std::sqrt(double(v.hidden_size / v.num_heads))}});
  }
  return o;
}

std::set<std::string> ModelOps::names() const {
  std::set<std::string> out = {"paged_attention", "sample"};
  for (const BoundOp* op : {&rmsnorm, &linear, &add, &swiglu, &embedding, &rope, &argmax, &scaled_linear, &moe_gate,
                            &moe_experts, &sigmoid, &layernorm, &mul, &silu, &gelu, &patch_embed, &vision_attention}) {
    if (op->def != nullptr) out.insert(op->def->name);
  }
  return out;
}

}  // namespace h0::model
