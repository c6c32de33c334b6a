// Qwen3-MoE (Qwen3MoeForCausalLM): Qwen3 attention, softmax-routed experts.
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_qwen3(const ConfigFields& f);  // families/qwen3.cc: the family this one extends

Architecture arch_qwen3_moe(const ConfigFields& f) {
  Architecture a = arch_qwen3(f);
  Moe& m = a.text.moe;
  m.num_experts = f.req_int_any({"num_experts", "num_local_experts"});  // transformers 4 / 5
  m.experts_per_token = f.req_int("num_experts_per_tok");
  m.expert_intermediate_size = f.req_int("moe_intermediate_size");
  m.norm_topk_prob = f.opt_bool("norm_topk_prob", false);
  m.layer_freq = read_layer_freq(f, "decoder_sparse_step");
  m.dense_layers = f.opt_int_list("mlp_only_layers");
  return a;
}

}  // namespace h0::model
