// Mixtral (MixtralForCausalLM): Llama attention, top-k experts with renormalized softmax weights.
#include "model/config/families/families.h"

namespace h0::model {
namespace {

const TensorNames& mixtral_names() {
  static const TensorNames names = llama_tensor_names().with({
      {TensorRole::kRouter, "block_sparse_moe.gate"},
      {TensorRole::kExpertGate, "block_sparse_moe.experts.{e}.w1"},
      {TensorRole::kExpertUp, "block_sparse_moe.experts.{e}.w3"},
      {TensorRole::kExpertDown, "block_sparse_moe.experts.{e}.w2"},
  });
  return names;
}

}  // namespace

Architecture arch_mixtral(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  Moe& m = a.text.moe;
  m.num_experts = f.req_int("num_local_experts");
  m.experts_per_token = f.req_int("num_experts_per_tok");
  m.expert_intermediate_size = a.text.intermediate_size;
  m.norm_topk_prob = true;  // Mixtral renormalizes the top-k softmax weights
  a.text.names = &mixtral_names();
  return a;
}

}  // namespace h0::model
