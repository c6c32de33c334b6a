#include "model/config/tensor_names.h"

#include <iterator>
#include <utility>

#include "base/check.h"

namespace h0::model {

// Every role's name (the store and the JSON keep these strings: never renamed), in the enum's
// order.
constexpr std::pair<TensorRole, const char*> kRoleNames[] = {
    {TensorRole::kOther, "other"},
    {TensorRole::kEmbed, "embed"},
    {TensorRole::kFinalNorm, "final_norm"},
    {TensorRole::kHead, "head"},
    {TensorRole::kAttnNorm, "attn_norm"},
    {TensorRole::kFfnNorm, "ffn_norm"},
    {TensorRole::kAttnPostNorm, "attn_post_norm"},
    {TensorRole::kFfnPostNorm, "ffn_post_norm"},
    {TensorRole::kAttnQ, "attn_q"},
    {TensorRole::kAttnK, "attn_k"},
    {TensorRole::kAttnV, "attn_v"},
    {TensorRole::kAttnO, "attn_o"},
    {TensorRole::kAttnQNorm, "attn_q_norm"},
    {TensorRole::kAttnKNorm, "attn_k_norm"},
    {TensorRole::kAttnQA, "attn_q_a"},
    {TensorRole::kAttnQANorm, "attn_q_a_norm"},
    {TensorRole::kAttnQB, "attn_q_b"},
    {TensorRole::kAttnKVA, "attn_kv_a"},
    {TensorRole::kAttnKVANorm, "attn_kv_a_norm"},
    {TensorRole::kAttnKVB, "attn_kv_b"},
    {TensorRole::kFfnGate, "ffn_gate"},
    {TensorRole::kFfnUp, "ffn_up"},
    {TensorRole::kFfnDown, "ffn_down"},
    {TensorRole::kRouter, "router"},
    {TensorRole::kRouterBias, "router_correction_bias"},
    {TensorRole::kSharedGate, "shared_gate"},
    {TensorRole::kSharedUp, "shared_up"},
    {TensorRole::kSharedDown, "shared_down"},
    {TensorRole::kSharedExpertGate, "shared_expert_gate"},
    {TensorRole::kExpertGate, "expert_gate"},
    {TensorRole::kExpertUp, "expert_up"},
    {TensorRole::kExpertDown, "expert_down"},
    {TensorRole::kAttnSinks, "attn_sinks"},
    {TensorRole::kExpertsGateUp, "experts_gate_up"},
    {TensorRole::kExpertsDown, "experts_down"},
    {TensorRole::kVisClassEmbed, "vis_class_embed"},
    {TensorRole::kVisPatchEmbed, "vis_patch_embed"},
    {TensorRole::kVisPosEmbed, "vis_pos_embed"},
    {TensorRole::kVisPreNorm, "vis_pre_norm"},
    {TensorRole::kVisNorm1, "vis_norm1"},
    {TensorRole::kVisAttnQ, "vis_attn_q"},
    {TensorRole::kVisAttnK, "vis_attn_k"},
    {TensorRole::kVisAttnV, "vis_attn_v"},
    {TensorRole::kVisAttnO, "vis_attn_o"},
    {TensorRole::kVisNorm2, "vis_norm2"},
    {TensorRole::kVisAttnQKV, "vis_attn_qkv"},
    {TensorRole::kVisFfnGate, "vis_ffn_gate"},
    {TensorRole::kVisFfnUp, "vis_ffn_up"},
    {TensorRole::kVisFfnDown, "vis_ffn_down"},
    {TensorRole::kVisFc1, "vis_fc1"},
    {TensorRole::kVisFc2, "vis_fc2"},
    {TensorRole::kVisPostNorm, "vis_post_norm"},
    {TensorRole::kVisMergerNorm, "vis_merger_norm"},
    {TensorRole::kVisMerger1, "vis_merger_1"},
    {TensorRole::kVisMerger2, "vis_merger_2"},
    {TensorRole::kProjector1, "projector_1"},
    {TensorRole::kProjector2, "projector_2"},
    {TensorRole::kLinQKVZ, "lin_qkvz"},
    {TensorRole::kLinBA, "lin_ba"},
    {TensorRole::kLinQKV, "lin_qkv"},
    {TensorRole::kLinZ, "lin_z"},
    {TensorRole::kLinB, "lin_b"},
    {TensorRole::kLinA, "lin_a"},
    {TensorRole::kLinConv, "lin_conv"},
    {TensorRole::kLinDtBias, "lin_dt_bias"},
    {TensorRole::kLinALog, "lin_a_log"},
    {TensorRole::kLinNorm, "lin_norm"},
    {TensorRole::kLinOut, "lin_out"},
    {TensorRole::kIdxQB, "idx_q_b"},
    {TensorRole::kIdxK, "idx_k"},
    {TensorRole::kIdxKNorm, "idx_k_norm"},
    {TensorRole::kIdxWeights, "idx_weights"},
};

constexpr bool in_enum_order() {
  for (size_t i = 0; i < std::size(kRoleNames); ++i) {
    if (size_t(kRoleNames[i].first) != i) return false;
  }
  return true;
}
static_assert(std::size(kRoleNames) == size_t(TensorRole::kCount) && in_enum_order(),
              "kRoleNames: one row per TensorRole, in the enum's order");

const char* tensor_role_name(TensorRole role) {
  return size_t(role) < std::size(kRoleNames) ? kRoleNames[size_t(role)].second : "?";
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
