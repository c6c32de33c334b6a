// Qwen3-Next (Qwen3NextForCausalLM) and the Qwen3.5 text models (Qwen3_5ForCausalLM,
// Qwen3_5MoeForCausalLM): hybrid layers — three of every four (layer_types, else
// full_attention_interval) are Gated DeltaNet linear attention, the rest full attention with an
// output gate (q_proj writes query and gate per head), QK-norm and partial rotary (a quarter of
// head_dim); every RMSNorm but the gated one weighs by (1 + w). Qwen3-Next's MLP is MoE with a
// sigmoid-gated shared expert (Qwen2-MoE's block) and its linear layers fuse their input
// projections per key-head group; Qwen3.5 keeps them apart, and is dense (Qwen3_5) or MoE with
// always-renormalized top-k (Qwen3_5Moe).
#include "base/error.h"
#include "model/config/families/families.h"

namespace h0::model {
namespace {

using LayerKind = TextModel::LayerKind;

// What the families share: the decoder, the gated attention, the linear layers and where they are.
Architecture hybrid_decoder(const ConfigFields& f, bool fused_projections, bool dense_mlp = true) {
  Architecture a;
  TextModel& t = a.text;
  read_decoder(f, &t, false, 10000, dense_mlp);
  t.names = &qwen2_moe_names();  // the shared expert as Qwen2-MoE names it; linear_attn.* is
                                 // Llama's table
  t.norm_offset = 1;
  Attention& at = t.attn;
  at.head_dim = f.opt_int("head_dim", 256);  // the configs' default; not hidden_size / heads
  at.qkv_bias = at.o_bias = f.opt_bool("attention_bias", false);
  at.qk_norm = true;
  at.output_gate = true;
  at.rotary_dim = read_rotary_dim(f, at.head_dim, 0.25);

  LinearAttention& l = t.linear;
  l.fused_projections = fused_projections;
  l.num_k_heads = f.opt_int("linear_num_key_heads", 16);  // Qwen3NextConfig's defaults
  l.num_v_heads = f.opt_int("linear_num_value_heads", 32);
  l.k_head_dim = f.opt_int("linear_key_head_dim", 128);
  l.v_head_dim = f.opt_int("linear_value_head_dim", 128);
  l.conv_kernel = f.opt_int("linear_conv_kernel_dim", 4);
  require_positive(f, {{"linear_num_key_heads", l.num_k_heads},
                       {"linear_num_value_heads", l.num_v_heads},
                       {"linear_key_head_dim", l.k_head_dim},
                       {"linear_value_head_dim", l.v_head_dim},
                       {"linear_conv_kernel_dim", l.conv_kernel}});
  if (l.num_v_heads % l.num_k_heads != 0) {
    throw InputError(
        f.where("linear_num_value_heads"),
        "must be a multiple of linear_num_key_heads (" + std::to_string(l.num_k_heads) + ")");
  }

  // transformers 5 writes layer_types; 4's configs say full_attention_interval (default 4): layer
  // i is full attention when (i + 1) % interval == 0.
  if (f.json().contains("layer_types")) {
    t.layer_kinds = read_layer_kinds(f, t.num_layers, 0);
  } else {
    const int64_t every = f.opt_int("full_attention_interval", 4);
    if (every < 1)
      throw InputError(f.where("full_attention_interval"), "must be a positive integer");
    for (int64_t i = 0; i < t.num_layers; ++i)
      t.layer_kinds.push_back((i + 1) % every == 0 ? LayerKind::kFull : LayerKind::kLinear);
  }
  return a;
}

// Qwen2-MoE's block: softmax routing, a shared expert scaled by sigmoid(x · shared_expert_gate).
void gated_shared_moe(const ConfigFields& f, Moe* m, bool default_norm_topk) {
  m->num_experts = f.req_int_any({"num_experts", "num_local_experts"});
  m->experts_per_token = f.req_int("num_experts_per_tok");
  m->expert_intermediate_size = f.req_int("moe_intermediate_size");
  m->shared_intermediate_size = f.req_int("shared_expert_intermediate_size");
  m->num_shared_experts = 1;
  m->shared_expert_gate = true;
  m->norm_topk_prob = f.opt_bool("norm_topk_prob", default_norm_topk);
}

}  // namespace

Architecture arch_qwen3_next(const ConfigFields& f) {
  Architecture a = hybrid_decoder(f, true);
  Moe& m = a.text.moe;
  gated_shared_moe(f, &m, true);
  m.layer_freq = read_layer_freq(f, "decoder_sparse_step");
  m.dense_layers = f.opt_int_list("mlp_only_layers");
  return a;
}

Architecture arch_qwen3_5_text(const ConfigFields& f) { return hybrid_decoder(f, false); }

Architecture arch_qwen3_5_moe_text(const ConfigFields& f) {
  Architecture a = hybrid_decoder(f, false, false);  // every layer MoE: no intermediate_size
  gated_shared_moe(f, &a.text.moe, true);
  a.text.moe.norm_topk_prob = true;  // Qwen3_5MoeTopKRouter renormalizes whatever the config says
  return a;
}

}  // namespace h0::model
