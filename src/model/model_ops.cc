#include "model/model_ops.h"

#include <cmath>

#include "base/error.h"
#include "tensor/convert.h"

namespace h0::model {

namespace {

// v as a value of `dtype` (PyTorch's tensor.to(dtype) of a scalar).
double rounded_to(double v, tensor::DType dtype) {
  const float f = float(v);
  std::byte narrow[8];
  float back = 0;
  tensor::convert(&f, tensor::DType::kF32, narrow, dtype, 1);
  tensor::convert(narrow, dtype, &back, tensor::DType::kF32, 1);
  return back;
}

}  // namespace

std::optional<tensor::DType> widened_weight_dtype(const Architecture& arch, tensor::DType dtype,
                                                  std::optional<tensor::DType> checkpoint) {
  const std::optional<tensor::DType> stored = arch.text.dtype ? arch.text.dtype : checkpoint;
  if (dtype != tensor::DType::kF32 || !stored) return std::nullopt;
  if (*stored != tensor::DType::kBF16 && *stored != tensor::DType::kF16) return std::nullopt;
  return stored;
}

ModelOps model_ops(const Architecture& arch, tensor::DType dtype, bool act_quant,
                   std::optional<tensor::DType> checkpoint) {
  const TextModel& t = arch.text;
  ModelOps o;
  if (const auto stored = widened_weight_dtype(arch, dtype, checkpoint))
    o.linear_widen = bind_op("linear_widen", {{"dtype", tensor::dtype_name(*stored)}});
  ops::Json norm = {{"eps", t.rms_norm_eps}};
  if (t.norm_offset != 0) norm["offset"] = t.norm_offset;
  o.rmsnorm = bind_op("rmsnorm", norm);
  o.linear = bind_op("linear");
  if (arch.quantization.method == "fp8") {
    const Quantization& q = arch.quantization;
    o.scaled_linear =
        bind_op("scaled_linear", {{"block_n", q.block_rows},  // > 0 for fp8 (architecture.cc)
                                  {"block_k", q.block_cols},
                                  {"act_quant", act_quant ? "dynamic" : "none"}});
  }
  o.add = bind_op("add");
  bool dense_mlp = arch.text.moe.num_shared_experts > 0;  // shared experts are a dense MLP
  for (int64_t l = 0; l < t.num_layers && !dense_mlp; ++l) dense_mlp = !t.is_moe_layer(l);
  if (dense_mlp && t.hidden_act == "silu") {
    o.swiglu = bind_op("swiglu");
  } else if (dense_mlp) {  // families/common.cc read_activation: gelu (erf) or its tanh
                           // approximation
    o.mlp_act = bind_op("gelu", {{"approximate", t.hidden_act == "gelu" ? "none" : "tanh"}});
    o.mul = bind_op("mul");
  }
  // Gemma 3: rows · √D, the scale rounded to the run dtype (HF: embed_scale.to(weight.dtype)).
  o.embedding =
      t.embed_scaled
          ? bind_op("embedding", {{"scale", rounded_to(std::sqrt(double(t.hidden_size)), dtype)}})
          : bind_op("embedding");
  ops::Json rope = {{"theta", t.rope_theta},
                    {"style", t.attn.mla ? "gptj" : "neox"},
                    {"scaling", t.rope_scaling_json}};
  if (t.attn.rotary_dim > 0 && !t.attn.mla) {
    // An odd partial rotary dim (transformers' default Glm4MoeConfig: int(42 · 0.5)): HF's
    // frequencies over the odd dim are not rope's (even rotary_dim), so no run can match it.
    if (t.attn.rotary_dim % 2 != 0) {
      throw InputError("config.json: partial_rotary_factor",
                       "the rotary dim " + std::to_string(t.attn.rotary_dim) + " of head_dim " +
                           std::to_string(t.attn.head_dim) +
                           " is odd: the rope op turns an even number of dims");
    }
    rope["rotary_dim"] = t.attn.rotary_dim;
  }
  if (!t.mrope_section.empty())
    rope["mrope"] = {{"section", t.mrope_section}, {"layout", "chunked"}};  // Qwen2-VL
  o.rope = bind_op("rope", rope);
  if (t.local_rope_theta > 0) {
    rope["theta"] = t.local_rope_theta;
    rope["scaling"] = t.local_rope_scaling_json;
    o.local_rope = bind_op("rope", rope);
  }
  if (arch.is_moe()) {
    const Moe& m = t.moe;
    if (t.hidden_act != "silu" &&
        m.swiglu_limit <= 0) {  // GPT-OSS's clamped SwiGLU ignores hidden_act, as transformers does
      throw InputError(
          "config.json: hidden_act",
          "'" + t.hidden_act + "' with routed experts: moe_experts gates them by silu");
    }
    ops::Json experts = ops::Json::object();
    if (m.swiglu_limit > 0)
      experts = {
          {"activation", "clamped_swiglu"}, {"alpha", m.swiglu_alpha}, {"limit", m.swiglu_limit}};
    o.moe_gate = bind_op("moe_gate", {{"top_k", m.experts_per_token},
                                      {"scoring", m.scoring},
                                      {"normalize", m.norm_topk_prob},
                                      {"n_group", m.n_group},
                                      {"topk_group", m.topk_group},
                                      {"routed_scaling_factor", m.routed_scaling_factor}});
    o.moe_experts = bind_op("moe_experts", experts);
    if (m.shared_expert_gate) {
      o.sigmoid = bind_op("sigmoid");
      o.mul = bind_op("mul");
    }
  }
  if (t.attn.output_gate) {  // Qwen3-Next: attention output · sigmoid(gate)
    o.sigmoid = bind_op("sigmoid");
    o.mul = bind_op("mul");
  }
  if (t.linear.num_v_heads > 0) {  // transformers' Qwen3NextGatedDeltaNet
    if (t.hidden_act != "silu") {
      throw InputError(
          "config.json: hidden_act",
          "'" + t.hidden_act + "' in Gated DeltaNet layers: causal_conv1d runs silu or none");
    }
    o.conv1d = bind_op("causal_conv1d", {{"activation", "silu"}});
    o.gdn_gating = bind_op("gdn_gating");
    o.delta_rule = bind_op("gated_delta_rule",
                           {{"l2norm_qk", true}, {"l2norm_eps", 1e-6}});  // its l2norm's eps
    o.norm_gated = bind_op("rmsnorm_gated", {{"eps", t.rms_norm_eps}});
  }
  if (t.indexer.n_heads > 0) {  // transformers' DeepseekV32Indexer
    const Indexer& x = t.indexer;
    o.index_norm = bind_op("layernorm", {{"eps", 1e-6}});  // its k_norm's
    o.index_rope = bind_op("rope", {{"theta", t.rope_theta},
                                    {"style", "neox"},
                                    {"scaling", t.rope_scaling_json},
                                    {"rotary_dim", t.attn.qk_rope_head_dim}});
    // HF scores Σ_h (w_h · H^-0.5) · ReLU(D^-0.5 · q_h·k): ReLU(c·y) = c·ReLU(y) for c > 0, so the
    // weights' H^-0.5 goes into the op's scale.
    o.index_select = bind_op(
        "lightning_indexer",
        {{"topk", x.topk}, {"scale", 1.0 / std::sqrt(double(x.head_dim) * double(x.n_heads))}});
  }
  o.argmax = bind_op("argmax");
  if (arch.vision && arch.vision->tower == "qwen2_5_vl") {
    const Vision& v = *arch.vision;
    const int64_t hd = v.hidden_size / v.num_heads;
    if (v.hidden_act != "silu") {
      throw InputError("config.json: vision_config.hidden_act",
                       "'" + v.hidden_act + "': the tower's MLP runs swiglu (silu)");
    }
    o.vision_norm = bind_op("rmsnorm", {{"eps", v.layer_norm_eps}});
    o.vision_rope =
        bind_op("rope", {{"theta", v.rope_theta},
                         {"style", "neox"},
                         {"mrope", {{"section", {hd / 4, hd / 4}}, {"layout", "per_axis"}}}});
    o.vision_attention =
        bind_op("attention", {{"causal", false}, {"scale", 1.0 / std::sqrt(double(hd))}});
    o.swiglu = bind_op("swiglu");
    o.gelu = bind_op("gelu", {{"approximate", "none"}});
  } else if (arch.vision) {
    const Vision& v = *arch.vision;
    o.layernorm = bind_op("layernorm", {{"eps", v.layer_norm_eps}});
    o.mul = bind_op("mul");
    o.silu = bind_op("silu");
    o.gelu = bind_op("gelu", {{"approximate", "none"}});
    o.patch_embed = bind_op("patch_embed", {{"patch", v.patch_size}});
    o.vision_attention = bind_op(
        "attention",
        {{"causal", false}, {"scale", 1.0 / std::sqrt(double(v.hidden_size / v.num_heads))}});
  }
  return o;
}

std::set<std::string> ModelOps::names() const {
  std::set<std::string> out = {"sample"};
  if (index_select.def != nullptr) {
    out.insert("sparse_attention");
  } else {
    out.insert("paged_attention");
  }
  // With linear_widen every projection runs by it (ModelWeights keeps them all as stored); a
  // tensor a checkpoint stores otherwise (an f32 router in a bf16 checkpoint) still runs by linear.
  if (linear_widen.def != nullptr) out.insert("linear_widen");
  for (const BoundOp* op : {&rmsnorm,     linear_widen.def != nullptr ? &linear_widen : &linear,
                            &add,         &swiglu,
                            &mlp_act,     &embedding,
                            &rope,        &local_rope,
                            &argmax,      &scaled_linear,
                            &moe_gate,    &moe_experts,
                            &sigmoid,     &conv1d,
                            &gdn_gating,  &delta_rule,
                            &norm_gated,  &index_norm,
                            &index_rope,  &index_select,
                            &layernorm,   &mul,
                            &silu,        &gelu,
                            &patch_embed, &vision_attention,
                            &vision_norm, &vision_rope}) {
    if (op->def != nullptr) out.insert(op->def->name);
  }
  return out;
}

}  // namespace h0::model
