// What a weight is to the decoder, whatever a family calls it (llama.cpp's LLM_TENSOR_NAMES):
// every decoder weight has a role, and a family's file spells each role's name once, in its
// TensorNames table. The inventory builds checkpoint names from the table; the executor, the
// loader and the planner find a weight by (layer, role, piece), never by its name.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace h0::model {

// kOther: not looked up by role (MTP-only tensors).
enum class TensorRole : uint8_t {
  kOther,
  kEmbed,
  kFinalNorm,
  kHead,  // layer -1 (the embedding) and num_layers (norm, head)
  kAttnNorm,
  kFfnNorm,  // input_layernorm, post_attention_layernorm (Llama's names)
  kAttnPostNorm,
  kFfnPostNorm,  // sandwich norms (Gemma 3): on the attention's and the MLP's outputs
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnO,
  kAttnQNorm,
  kAttnKNorm,
  kAttnQA,
  kAttnQANorm,
  kAttnQB,
  kAttnKVA,
  kAttnKVANorm,
  kAttnKVB,  // MLA
  kFfnGate,
  kFfnUp,
  kFfnDown,  // a dense MLP
  kRouter,
  kRouterBias,  // kRouterBias: a correction-bias buffer (DeepSeek-V3's noaux_tc)
  kSharedGate,
  kSharedUp,
  kSharedDown,        // shared experts: one dense MLP
  kSharedExpertGate,  // Qwen2-MoE: sigmoid(x·w) scales the shared expert's output
  kExpertGate,
  kExpertUp,
  kExpertDown,  // routed expert `expert`: moe_experts' w_gate, w_up, w_down
  // Parameters, not modules (named by their stem; a bias is "<stem>_bias"): GPT-OSS's attention
  // sinks [Hq], and its routed experts all in one tensor each: gate_up [E, D, 2F] (gate and up
  // interleaved along the last axis: gate ::2, up 1::2, applied as x · w) and down [E, F, D].
  kAttnSinks,
  kExpertsGateUp,
  kExpertsDown,
  // A CLIP-style vision tower and LLaVA's projector (Vision::names; by vision layer, see
  // is_vision_role): the embeddings (the class embedding a bare parameter), the norm before the
  // layers, per layer two LayerNorms, q/k/v/o and the MLP's fc1/fc2, the final norm, the projector.
  // Qwen2.5-VL's tower adds, per block, the fused qkv and a SwiGLU MLP (gate, up, down; norm1 and
  // norm2 are RMSNorms), and after the blocks the PatchMerger (ln_q, mlp.0, mlp.2).
  kVisClassEmbed,
  kVisPatchEmbed,
  kVisPosEmbed,
  kVisPreNorm,
  kVisNorm1,
  kVisAttnQ,
  kVisAttnK,
  kVisAttnV,
  kVisAttnO,
  kVisNorm2,
  kVisAttnQKV,
  kVisFfnGate,
  kVisFfnUp,
  kVisFfnDown,
  kVisFc1,
  kVisFc2,
  kVisPostNorm,
  kVisMergerNorm,
  kVisMerger1,
  kVisMerger2,
  kProjector1,
  kProjector2,
  // Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5; LinearAttention): the input projections
  // — Qwen3-Next fuses them per key-head group as in_proj_qkvz and in_proj_ba, Qwen3.5 keeps
  // in_proj_qkv, in_proj_z, in_proj_b, in_proj_a — the depthwise conv1d [C, 1, K] over q|k|v, the
  // per-value-head decay parameters dt_bias and A_log (bare parameters), the gated RMSNorm [Dv],
  // out_proj.
  kLinQKVZ,
  kLinBA,
  kLinQKV,
  kLinZ,
  kLinB,
  kLinA,
  kLinConv,
  kLinDtBias,
  kLinALog,
  kLinNorm,
  kLinOut,
  // DeepSeek-V3.2's lightning indexer (Indexer): q from the q latent (wq_b), one key head (wk) with
  // a LayerNorm (weight and bias), the per-head weights (weights_proj).
  kIdxQB,
  kIdxK,
  kIdxKNorm,
  kIdxWeights,
  kCount,
};
// Which tensor of a role: the weight, its bias, its block scales (fp8's weight_scale_inv;
// MXFP4's E8M0 `_scales`), MXFP4's packed values (`_blocks`: the weight of an MXFP4 checkpoint).
enum class TensorPiece : uint8_t { kWeight, kBias, kScale, kBlocks };

// "attn_q", "expert_gate", ...: for errors and listings.
const char* tensor_role_name(TensorRole role);
// Whether the role is a bare parameter (kAttnSinks, kExpertsGateUp, kExpertsDown, kVisClassEmbed,
// kLinDtBias, kLinALog).
bool is_parameter_role(TensorRole role);
// Whether the role is the vision tower's or the projector's (kVisClassEmbed .. kProjector2): its
// weights are found by vision layer (WeightInfo::vision_layer; -1 outside the encoder layers).
bool is_vision_role(TensorRole role);
// Whether a vision role is one of an encoder layer's (kVisNorm1 .. kVisFc2).
bool is_vision_layer_role(TensorRole role);

// A family's decoder-layer names: per role, its stem under the layer's prefix
// ("model.layers.3."), "{e}" standing for a routed expert's index. A piece appends ".weight",
// ".bias" or ".weight_scale_inv"; kRouterBias names a buffer and the parameter roles
// (is_parameter_role) a bare nn.Parameter, so their stem is the whole name (a bias: "_bias").
// A role with no stem is one the family's layers never have.
class TensorNames {
 public:
  using Entry = std::pair<TensorRole, const char*>;
  explicit TensorNames(std::initializer_list<Entry> stems);
  // This table with some stems replaced (or added): a family that renames a few tensors.
  TensorNames with(std::initializer_list<Entry> changes) const;

  // "<layer_prefix><stem><piece>"; a role the table lacks is a programming error (H0_CHECK).
  std::string name(const std::string& layer_prefix, TensorRole role,
                   TensorPiece piece = TensorPiece::kWeight, int64_t expert = -1) const;
  // The role's stem ("post_attention_layernorm"): for a norm, also the name of the module whose
  // output is its probe. A role the table lacks is a programming error.
  const char* stem(TensorRole role) const;

 private:
  std::array<const char*, size_t(TensorRole::kCount)> stems_{};
};

// The spelling of HF's Llama and of the families derived from it (Qwen2/3, Qwen3-MoE,
// DeepSeek-V3): self_attn.q_proj, mlp.gate_proj, mlp.gate, mlp.experts.{e}.gate_proj,
// mlp.shared_experts.gate_proj, ...
const TensorNames& llama_tensor_names();

}  // namespace h0::model
