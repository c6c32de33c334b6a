// DeepSeek-V3 / Kimi-K2 (DeepseekV3ForCausalLM): multi-head latent attention, sigmoid routing
// with a correction bias, expert groups and routed scaling, shared experts, dense first layers,
// MTP layers in the checkpoint.
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_deepseek_v3(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  Attention& at = a.text.attn;
  at.mla = true;
  at.q_lora_rank = f.opt_int("q_lora_rank", 0);  // null in DeepSeek-V2-Lite: q projected directly
  at.kv_lora_rank = f.req_int("kv_lora_rank");
  at.qk_nope_head_dim = f.req_int("qk_nope_head_dim");
  at.qk_rope_head_dim = f.req_int("qk_rope_head_dim");
  at.v_head_dim = f.req_int("v_head_dim");
  at.head_dim = at.qk_rope_head_dim;  // the rotary part, as HF's config does
  at.qkv_bias = at.o_bias = f.opt_bool("attention_bias", false);
  Moe& m = a.text.moe;
  m.num_experts = f.opt_int("n_routed_experts", 0);
  read_grouped_routing(f, &m);
  m.num_shared_experts = f.opt_int("n_shared_experts", 0);
  m.scoring = f.opt_string("scoring_func", "sigmoid");
  m.correction_bias = f.opt_string("topk_method", "noaux_tc") == "noaux_tc";
  m.first_k_dense = f.opt_int("first_k_dense_replace", 0);
  m.layer_freq = read_layer_freq(f, "moe_layer_freq");
  a.text.num_nextn_predict_layers = f.opt_int("num_nextn_predict_layers", 0);
  return a;
}

}  // namespace h0::model
