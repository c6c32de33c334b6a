#include "model/tensor_names.h"

#include "base/check.h"

namespace h0::model {

const char* tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kOther:
      return "other";
    case TensorRole::kEmbed:
      return "embed";
    case TensorRole::kFinalNorm:
      return "final_norm";
    case TensorRole::kHead:
      return "head";
    case TensorRole::kAttnNorm:
      return "attn_norm";
    case TensorRole::kFfnNorm:
      return "ffn_norm";
    case TensorRole::kAttnPostNorm:
      return "attn_post_norm";
    case TensorRole::kFfnPostNorm:
      return "ffn_post_norm";
    case TensorRole::kAttnQ:
      return "attn_q";
    case TensorRole::kAttnK:
      return "attn_k";
    case TensorRole::kAttnV:
      return "attn_v";
    case TensorRole::kAttnO:
      return "attn_o";
    case TensorRole::kAttnQNorm:
      return "attn_q_norm";
    case TensorRole::kAttnKNorm:
      return "attn_k_norm";
    case TensorRole::kAttnQA:
      return "attn_q_a";
    case TensorRole::kAttnQANorm:
      return "attn_q_a_norm";
    case TensorRole::kAttnQB:
      return "attn_q_b";
    case TensorRole::kAttnKVA:
      return "attn_kv_a";
    case TensorRole::kAttnKVANorm:
      return "attn_kv_a_norm";
    case TensorRole::kAttnKVB:
      return "attn_kv_b";
    case TensorRole::kFfnGate:
      return "ffn_gate";
    case TensorRole::kFfnUp:
      return "ffn_up";
    case TensorRole::kFfnDown:
      return "ffn_down";
    case TensorRole::kRouter:
      return "router";
    case TensorRole::kRouterBias:
      return "router_correction_bias";
    case TensorRole::kSharedGate:
      return "shared_gate";
    case TensorRole::kSharedUp:
      return "shared_up";
    case TensorRole::kSharedDown:
      return "shared_down";
    case TensorRole::kSharedExpertGate:
      return "shared_expert_gate";
    case TensorRole::kExpertGate:
      return "expert_gate";
    case TensorRole::kExpertUp:
      return "expert_up";
    case TensorRole::kExpertDown:
      return "expert_down";
    case TensorRole::kAttnSinks:
      return "attn_sinks";
    case TensorRole::kExpertsGateUp:
      return "experts_gate_up";
    case TensorRole::kExpertsDown:
      return "experts_down";
    case TensorRole::kVisClassEmbed:
      return "vis_class_embed";
    case TensorRole::kVisPatchEmbed:
      return "vis_patch_embed";
    case TensorRole::kVisPosEmbed:
      return "vis_pos_embed";
    case TensorRole::kVisPreNorm:
      return "vis_pre_norm";
    case TensorRole::kVisNorm1:
      return "vis_norm1";
    case TensorRole::kVisAttnQ:
      return "vis_attn_q";
    case TensorRole::kVisAttnK:
      return "vis_attn_k";
    case TensorRole::kVisAttnV:
      return "vis_attn_v";
    case TensorRole::kVisAttnO:
      return "vis_attn_o";
    case TensorRole::kVisNorm2:
      return "vis_norm2";
    case TensorRole::kVisAttnQKV:
      return "vis_attn_qkv";
    case TensorRole::kVisFfnGate:
      return "vis_ffn_gate";
    case TensorRole::kVisFfnUp:
      return "vis_ffn_up";
    case TensorRole::kVisFfnDown:
      return "vis_ffn_down";
    case TensorRole::kVisFc1:
      return "vis_fc1";
    case TensorRole::kVisFc2:
      return "vis_fc2";
    case TensorRole::kVisPostNorm:
      return "vis_post_norm";
    case TensorRole::kVisMergerNorm:
      return "vis_merger_norm";
    case TensorRole::kVisMerger1:
      return "vis_merger_1";
    case TensorRole::kVisMerger2:
      return "vis_merger_2";
    case TensorRole::kProjector1:
      return "projector_1";
    case TensorRole::kProjector2:
      return "projector_2";
    case TensorRole::kLinQKVZ:
      return "lin_qkvz";
    case TensorRole::kLinBA:
      return "lin_ba";
    case TensorRole::kLinQKV:
      return "lin_qkv";
    case TensorRole::kLinZ:
      return "lin_z";
    case TensorRole::kLinB:
      return "lin_b";
    case TensorRole::kLinA:
      return "lin_a";
    case TensorRole::kLinConv:
      return "lin_conv";
    case TensorRole::kLinDtBias:
      return "lin_dt_bias";
    case TensorRole::kLinALog:
      return "lin_a_log";
    case TensorRole::kLinNorm:
      return "lin_norm";
    case TensorRole::kLinOut:
      return "lin_out";
    case TensorRole::kIdxQB:
      return "idx_q_b";
    case TensorRole::kIdxK:
      return "idx_k";
    case TensorRole::kIdxKNorm:
      return "idx_k_norm";
    case TensorRole::kIdxWeights:
      return "idx_weights";
    case TensorRole::kCount:
      break;
  }
  return "?";
}

bool is_parameter_role(TensorRole role) {
  return role == TensorRole::kAttnSinks || role == TensorRole::kExpertsGateUp ||
         role == TensorRole::kExpertsDown || role == TensorRole::kVisClassEmbed ||
         role == TensorRole::kLinDtBias || role == TensorRole::kLinALog;
}

bool is_vision_role(TensorRole role) {
  return role >= TensorRole::kVisClassEmbed && role <= TensorRole::kProjector2;
}

bool is_vision_layer_role(TensorRole role) {
  return role >= TensorRole::kVisNorm1 && role <= TensorRole::kVisFc2;
}

TensorNames::TensorNames(std::initializer_list<Entry> stems) {
  for (const auto& [role, stem] : stems) stems_[size_t(role)] = stem;
}

TensorNames TensorNames::with(std::initializer_list<Entry> changes) const {
  TensorNames out = *this;
  for (const auto& [role, stem] : changes) out.stems_[size_t(role)] = stem;
  return out;
}

const char* TensorNames::stem(TensorRole role) const {
  const char* stem = stems_[size_t(role)];
  H0_CHECK(stem != nullptr) << "the family's tensor names have no " << tensor_role_name(role);
  return stem;
}

std::string TensorNames::name(const std::string& layer_prefix, TensorRole role, TensorPiece piece,
                              int64_t expert) const {
  std::string out = layer_prefix + stem(role);
  if (const size_t at = out.find("{e}"); at != std::string::npos) {
    H0_CHECK(expert >= 0) << tensor_role_name(role)
                          << " is a routed expert's: an expert index is needed";
    out.replace(at, 3, std::to_string(expert));
  }
  if (role == TensorRole::kRouterBias) return out;
  if (is_parameter_role(role)) {  // GPT-OSS's: gate_up_proj, gate_up_proj_bias, MXFP4's
                                  // gate_up_proj_blocks, ..._scales
    switch (piece) {
      case TensorPiece::kWeight:
        return out;
      case TensorPiece::kBias:
        return out + "_bias";
      case TensorPiece::kScale:
        return out + "_scales";
      case TensorPiece::kBlocks:
        return out + "_blocks";
    }
  }
  switch (piece) {
    case TensorPiece::kWeight:
      return out + ".weight";
    case TensorPiece::kBias:
      return out + ".bias";
    case TensorPiece::kScale:
      return out + ".weight_scale_inv";
    case TensorPiece::kBlocks:
      break;
  }
  H0_CHECK(false) << tensor_role_name(role) << " is a module's weight: it has no MXFP4 blocks";
  return out;
}

const TensorNames& llama_tensor_names() {
  static const TensorNames names({
      {TensorRole::kAttnNorm, "input_layernorm"},
      {TensorRole::kFfnNorm, "post_attention_layernorm"},
      {TensorRole::kAttnQ, "self_attn.q_proj"},
      {TensorRole::kAttnK, "self_attn.k_proj"},
      {TensorRole::kAttnV, "self_attn.v_proj"},
      {TensorRole::kAttnO, "self_attn.o_proj"},
      {TensorRole::kAttnQNorm, "self_attn.q_norm"},
      {TensorRole::kAttnKNorm, "self_attn.k_norm"},
      {TensorRole::kAttnQA, "self_attn.q_a_proj"},
      {TensorRole::kAttnQANorm, "self_attn.q_a_layernorm"},
      {TensorRole::kAttnQB, "self_attn.q_b_proj"},
      {TensorRole::kAttnKVA, "self_attn.kv_a_proj_with_mqa"},
      {TensorRole::kAttnKVANorm, "self_attn.kv_a_layernorm"},
      {TensorRole::kAttnKVB, "self_attn.kv_b_proj"},
      {TensorRole::kFfnGate, "mlp.gate_proj"},
      {TensorRole::kFfnUp, "mlp.up_proj"},
      {TensorRole::kFfnDown, "mlp.down_proj"},
      {TensorRole::kRouter, "mlp.gate"},
      {TensorRole::kRouterBias, "mlp.gate.e_score_correction_bias"},
      {TensorRole::kSharedGate, "mlp.shared_experts.gate_proj"},
      {TensorRole::kSharedUp, "mlp.shared_experts.up_proj"},
      {TensorRole::kSharedDown, "mlp.shared_experts.down_proj"},
      {TensorRole::kExpertGate, "mlp.experts.{e}.gate_proj"},
      {TensorRole::kExpertUp, "mlp.experts.{e}.up_proj"},
      {TensorRole::kExpertDown, "mlp.experts.{e}.down_proj"},
      {TensorRole::kLinQKVZ, "linear_attn.in_proj_qkvz"},
      {TensorRole::kLinBA, "linear_attn.in_proj_ba"},
      {TensorRole::kLinQKV, "linear_attn.in_proj_qkv"},
      {TensorRole::kLinZ, "linear_attn.in_proj_z"},
      {TensorRole::kLinB, "linear_attn.in_proj_b"},
      {TensorRole::kLinA, "linear_attn.in_proj_a"},
      {TensorRole::kLinConv, "linear_attn.conv1d"},
      {TensorRole::kLinDtBias, "linear_attn.dt_bias"},
      {TensorRole::kLinALog, "linear_attn.A_log"},
      {TensorRole::kLinNorm, "linear_attn.norm"},
      {TensorRole::kLinOut, "linear_attn.out_proj"},
      {TensorRole::kIdxQB, "self_attn.indexer.wq_b"},
      {TensorRole::kIdxK, "self_attn.indexer.wk"},
      {TensorRole::kIdxKNorm, "self_attn.indexer.k_norm"},
      {TensorRole::kIdxWeights, "self_attn.indexer.weights_proj"},
  });
  return names;
}

}  // namespace h0::model
