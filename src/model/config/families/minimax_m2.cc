// MiniMax-M2 (MiniMaxM2ForCausalLM, model_type minimax_m2): Mixtral's decoder and experts, with
// attention whose QK-norm runs over the whole projection (blocks/per_layer_qk_norm.cc) and turns
// part of each head (released configs: rotary_dim; transformers 5: partial_rotary_factor), and a
// router of sigmoid scores whose top-k is chosen with a correction bias and renormalized.
#include "base/error.h"
#include "model/config/block.h"
#include "model/config/families/families.h"

namespace h0::model {
namespace {

const TensorNames& minimax_m2_names() {
  static const TensorNames names = llama_tensor_names().with({
      {TensorRole::kRouter, "block_sparse_moe.gate"},
      {TensorRole::kRouterBias, "block_sparse_moe.e_score_correction_bias"},
      {TensorRole::kExpertGate, "block_sparse_moe.experts.{e}.w1"},
      {TensorRole::kExpertUp, "block_sparse_moe.experts.{e}.w3"},
      {TensorRole::kExpertDown, "block_sparse_moe.experts.{e}.w2"},
  });
  return names;
}

}  // namespace

Architecture arch_minimax_m2(const ConfigFields& f) {
  Architecture a;
  TextModel& t = a.text;
  read_decoder(f, &t, false, 5e6);  // MiniMaxM2Config.default_theta
  const int64_t hd = t.attn.head_dim;
  // MiniMaxM2Config: rotary_dim / head_dim unless the config gives partial_rotary_factor.
  t.attn.rotary_dim = read_rotary_dim(f, hd, double(f.opt_int("rotary_dim", hd)) / double(hd));
  if (f.opt_bool("use_qk_norm", true)) use_block("per_layer_qk_norm", f, &t);
  const std::string scoring = f.opt_string("scoring_func", "sigmoid");
  if (scoring != "sigmoid") {
    throw InputError(f.where("scoring_func"),
                     "\"" + scoring + "\": MiniMax-M2's router scores are sigmoid");
  }
  Moe& m = t.moe;
  m.num_experts = f.req_int("num_local_experts");
  m.experts_per_token = f.req_int("num_experts_per_tok");
  m.expert_intermediate_size = t.intermediate_size;
  m.scoring = scoring;
  m.correction_bias = true;  // MiniMaxM2SparseMoeBlock's e_score_correction_bias
  m.norm_topk_prob = true;   // the top-k weights divided by their sum
  t.names = &minimax_m2_names();
  return a;
}

}  // namespace h0::model
