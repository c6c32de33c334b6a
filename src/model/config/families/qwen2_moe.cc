// Qwen2-MoE (Qwen2MoeForCausalLM; Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2 attention, experts routed by
// a softmax over all experts (top-k weights renormalized only with norm_topk_prob), and one
// shared expert whose output is scaled per token by sigmoid(x · shared_expert_gate).
#include "model/config/families/families.h"

namespace h0::model {

const TensorNames& qwen2_moe_names() {
  static const TensorNames names = llama_tensor_names().with({
      {TensorRole::kSharedGate, "mlp.shared_expert.gate_proj"},
      {TensorRole::kSharedUp, "mlp.shared_expert.up_proj"},
      {TensorRole::kSharedDown, "mlp.shared_expert.down_proj"},
      {TensorRole::kSharedExpertGate, "mlp.shared_expert_gate"},
  });
  return names;
}

Architecture arch_qwen2_moe(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  a.text.names = &qwen2_moe_names();
  a.text.attn.qkv_bias =
      f.opt_bool("qkv_bias", true);  // transformers 5 writes it; 4 always had them
  if (f.opt_bool("use_sliding_window",
                 false)) {  // no released Qwen2-MoE sets it; HF's rule if one does
    const int64_t layers = a.text.num_layers;
    a.text.attn.sliding_window = f.opt_int("sliding_window", 0);
    if (f.json().contains("layer_types")) {  // transformers 5 writes the rule's result
      a.text.layer_kinds = read_layer_kinds(f, layers, a.text.attn.sliding_window);
    } else {  // transformers 4: layers from max_window_layers on slide
      const int64_t from = f.opt_int("max_window_layers", layers);
      for (int64_t l = 0; l < layers; ++l)
        a.text.layer_kinds.push_back(l >= from ? TextModel::LayerKind::kSliding
                                               : TextModel::LayerKind::kFull);
    }
  }
  Moe& m = a.text.moe;
  m.num_experts = f.req_int_any({"num_experts", "num_local_experts"});
  m.experts_per_token = f.req_int("num_experts_per_tok");
  m.expert_intermediate_size = f.req_int("moe_intermediate_size");
  m.norm_topk_prob = f.opt_bool("norm_topk_prob", false);
  m.layer_freq = read_layer_freq(f, "decoder_sparse_step");
  m.dense_layers = f.opt_int_list("mlp_only_layers");
  m.shared_intermediate_size =
      f.req_int("shared_expert_intermediate_size");  // every layer's MoE block has one
  m.num_shared_experts = 1;
  m.shared_expert_gate = true;
  return a;
}

}  // namespace h0::model
