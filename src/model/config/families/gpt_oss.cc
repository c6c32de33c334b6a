// GPT-OSS (GptOssForCausalLM; gpt-oss-20b, gpt-oss-120b): attention with biases and a learned
// sink logit per head, layer_types alternating a sliding window (128) and full attention, YaRN
// RoPE (truncate: false); every layer's MLP is routed experts: a router with a bias, softmax over
// the top-k logits, experts stored fused (gate_up interleaved, down) with biases and gated by the
// clamped SwiGLU (swiglu_alpha, swiglu_limit).
#include "base/error.h"
#include "model/config/families/families.h"

namespace h0::model {
namespace {

const TensorNames& gpt_oss_names() {
  static const TensorNames names = llama_tensor_names().with({
      {TensorRole::kAttnSinks, "self_attn.sinks"},
      {TensorRole::kRouter, "mlp.router"},
      {TensorRole::kExpertsGateUp, "mlp.experts.gate_up_proj"},
      {TensorRole::kExpertsDown, "mlp.experts.down_proj"},
  });
  return names;
}

}  // namespace

Architecture arch_gpt_oss(const ConfigFields& f) {
  Architecture a;
  TextModel& t = a.text;
  read_decoder(f, &t, false, 150000);
  if (!f.json().contains("rope_parameters") &&
      !f.json().contains("rope_scaling")) {  // GptOssConfig's default
    const nlohmann::json yarn = {{"rope_type", "yarn"}, {"factor", 32.0},
                                 {"beta_fast", 32.0},   {"beta_slow", 1.0},
                                 {"truncate", false},   {"original_max_position_embeddings", 4096}};
    read_rope_object(ConfigFields(yarn, f.where("rope_parameters")), t.max_position_embeddings,
                     &t.rope_theta, &t.rope_scaling, &t.rope_scaling_json);
  }
  t.names = &gpt_oss_names();
  t.attn.qkv_bias = t.attn.o_bias = f.opt_bool("attention_bias", true);
  t.attn.sinks = true;
  t.attn.sliding_window = f.opt_int("sliding_window", 128);
  // layer_types, else GptOssConfig's default: sliding, full, sliding, ...
  t.layer_kinds = read_layer_kinds(f, t.num_layers, t.attn.sliding_window, 2);
  Moe& m = t.moe;
  m.num_experts = f.req_int_any({"num_local_experts", "num_experts"});
  m.experts_per_token = f.req_int_any({"num_experts_per_tok", "experts_per_token"});
  m.expert_intermediate_size = t.intermediate_size;
  m.norm_topk_prob =
      true;  // softmax over the top-k logits = the full softmax's top k, renormalized
  m.router_bias = true;
  m.fused_experts = true;
  m.swiglu_alpha = f.opt_double("swiglu_alpha", 1.702);
  m.swiglu_limit = f.opt_double("swiglu_limit", 7.0);
  if (m.swiglu_limit <= 0) throw InputError(f.where("swiglu_limit"), "must be positive");
  return a;
}

}  // namespace h0::model
