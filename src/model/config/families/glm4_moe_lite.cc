// GLM-4.7-Flash (Glm4MoeLiteForCausalLM, model_type glm4_moe_lite): DeepSeek-V3's multi-head latent
// attention (q_lora_rank, kv_lora_rank, RoPE on qk_rope_head_dim, interleaved) over GLM-4.5's MoE
// (sigmoid scores with a correction bias, expert groups, routed scaling, shared experts): the
// blocks families/deepseek_v3.cc reads, with transformers 5's mlp_layer_types saying which layers
// are dense (Glm4MoeLiteConfig's default: the first, the rest MoE).
#include "base/error.h"
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_deepseek_v3(const ConfigFields& f);  // families/deepseek_v3.cc: its fields

Architecture arch_glm4_moe_lite(const ConfigFields& f) {
  if (!f.opt_bool("rope_interleave", true)) {
    throw InputError(f.where("rope_interleave"),
                     "false: MLA's rotary dims are run interleaved (DeepSeek's layout, "
                     "Glm4MoeLiteConfig's default); the half-split layout is not modelled");
  }
  Architecture a = arch_deepseek_v3(f);
  Moe& m = a.text.moe;
  m.scoring = "sigmoid";  // Glm4MoeLiteTopkRouter: always, with the correction bias
  m.correction_bias = true;
  m.first_k_dense = 1;  // mlp_layer_types' default: ["dense"] + ["sparse"] * (layers - 1)
  m.layer_freq = 1;
  read_mlp_layer_types(f, &a.text);
  return a;
}

}  // namespace h0::model
