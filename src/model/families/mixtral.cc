// Mixtral (MixtralForCausalLM): Llama attention, top-k experts with renormalized softmax weights.
#include "model/families/families.h"

namespace h0::model {

Architecture arch_mixtral(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  Moe& m = a.text.moe;
  m.num_experts = f.req_int("num_local_experts");
  m.experts_per_token = f.req_int("num_experts_per_tok");
  m.expert_intermediate_size = a.text.intermediate_size;
  m.norm_topk_prob = true;  // Mixtral renormalizes the top-k softmax weights
  m.mixtral_names = true;
  return a;
}

}  // namespace h0::model
