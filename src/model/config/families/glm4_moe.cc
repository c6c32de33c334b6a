// GLM-4.5 / 4.6 / 4.7 (Glm4MoeForCausalLM): GQA with q/k/v biases (attention_bias), optional
// QK-norm (use_qk_norm) and partial rotary (partial_rotary_factor of head_dim, NeoX halves);
// DeepSeek-V3's routing (sigmoid scores, correction bias, groups, routed scaling) over experts
// named as DeepSeek's, shared experts, dense first layers, MTP layers in the checkpoint only.
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_glm4_moe(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  Attention& at = a.text.attn;
  at.qkv_bias = f.opt_bool("attention_bias", false);  // o_proj never has a bias
  at.qk_norm = f.opt_bool("use_qk_norm", false);
  at.rotary_dim = read_rotary_dim(f, at.head_dim, 0.5);  // Glm4MoeConfig's default
  Moe& m = a.text.moe;
  m.num_experts = f.req_int_any({"n_routed_experts", "num_local_experts"});
  read_grouped_routing(f, &m);
  m.num_shared_experts = f.opt_int("n_shared_experts", 1);
  m.scoring = "sigmoid";
  m.correction_bias = true;
  m.first_k_dense = f.opt_int("first_k_dense_replace", 1);
  a.text.num_nextn_predict_layers = f.opt_int("num_nextn_predict_layers", 0);
  return a;
}

}  // namespace h0::model
