// GLM-4.5 / 4.6 / 4.7 (Glm4MoeForCausalLM): GQA with q/k/v biases (attention_bias), optional
// QK-norm (use_qk_norm) and partial rotary (partial_rotary_factor of head_dim, NeoX halves);
// DeepSeek-V3's routing (sigmoid scores, correction bias, groups, routed scaling) over experts
// named as DeepSeek's, shared experts, dense first layers, MTP layers in the checkpoint only.
#include "base/error.h"
#include "model/families/families.h"

namespace h0::model {

Architecture arch_glm4_moe(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  Attention& at = a.text.attn;
  at.qkv_bias = f.opt_bool("attention_bias", false);  // o_proj never has a bias
  at.qk_norm = f.opt_bool("use_qk_norm", false);
  // transformers 4 writes it at the top, 5 inside rope_parameters; Glm4MoeConfig's default is 0.5.
  double factor = 0.5;
  if (const std::optional<ConfigFields> rope = f.opt_object("rope_parameters")) factor = rope->opt_double("partial_rotary_factor", factor);
  factor = f.opt_double("partial_rotary_factor", factor);
  // HF: dim = int(head_dim * factor), inv_freq over arange(0, dim, 2) / dim, cos/sin 2·ceil(dim/2) wide.
  at.rotary_dim = int64_t(double(at.head_dim) * factor);
  if (factor <= 0 || factor > 1 || at.rotary_dim < 2) {
    throw InputError(f.where("partial_rotary_factor"), "must leave a rotary dim in [2, head_dim = " +
                                                           std::to_string(at.head_dim) + "]");
  }
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
