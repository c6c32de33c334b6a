// One description of a model's architecture, read from a Hugging Face config.json. One function
// per family (architecture.cc: arch_llama, arch_qwen3_moe, arch_deepseek_v3, ...) looked up by
// the config's `architectures` (then `model_type`); everything downstream (tensor inventory,
// memory plan, executor) reads only this struct.
#pragma once

#include <any>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/config/tensor_names.h"
#include "tensor/dtype.h"

namespace h0::model {

// RoPE frequency scaling. type: "default", "linear", "llama3", "yarn" (HF names).
struct RopeScaling {
  std::string type = "default";
  double factor = 1;
  double low_freq_factor = 1, high_freq_factor = 4;  // llama3
  double beta_fast = 32, beta_slow = 1;              // yarn
  double mscale = 0, mscale_all_dim = 0;             // yarn (DeepSeek)
  int64_t original_max_position_embeddings = 0;
};

// Self-attention of a decoder layer. Standard (GQA) attention uses num_kv_heads and head_dim;
// multi-head latent attention (mla) uses the low-rank fields and has one shared latent KV.
struct Attention {
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;     // q/k/v head dim of standard attention
  bool qkv_bias = false;    // Qwen2
  bool o_bias = false;      // attention_bias on o_proj too (Llama's attention_bias)
  bool qk_norm = false;     // Qwen3: RMSNorm over head_dim on q and k
  bool mla = false;         // DeepSeek-V2/V3, Kimi-K2
  int64_t q_lora_rank = 0;  // 0: q is projected directly (no q_a/q_b)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  // Sliding-window attention (Mistral, Gemma 3, GPT-OSS): a sliding layer's query sees the last
  // `sliding_window` keys, so its KV cache holds at most that many tokens per sequence.
  int64_t sliding_window = 0;  // 0: none
  // Partial rotary (GLM-4.5's partial_rotary_factor): RoPE turns the first rotary_dim dims of each
  // q/k head (NeoX halves of those), the rest pass through. 0: all of head_dim.
  int64_t rotary_dim = 0;
  // The softmax scale of q·k; 0: qk_head_dim^-0.5 (Gemma 3: query_pre_attn_scalar^-0.5).
  double scale = 0;
  // GPT-OSS: a learned logit per head in the softmax denominator (kAttnSinks, paged_attention's
  // sinks).
  bool sinks = false;
  // Qwen3-Next / Qwen3.5's gated attention: q_proj writes, per head, head_dim query values then
  // head_dim gate values; the attention's output is multiplied by sigmoid(gate) before o_proj.
  bool output_gate = false;

  int64_t qk_head_dim() const { return mla ? qk_nope_head_dim + qk_rope_head_dim : head_dim; }
  int64_t value_head_dim() const { return mla ? v_head_dim : head_dim; }
  // What the planner holds per token per layer, in elements: one latent (kv_lora_rank +
  // qk_rope_head_dim) for MLA, K and V of `kv_heads` heads otherwise.
  int64_t kv_cache_width(int64_t kv_heads) const {
    return mla ? kv_lora_rank + qk_rope_head_dim : 2 * kv_heads * head_dim;
  }
};

// Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5: the layers whose layer_types entry is
// linear_attention). Per token: q, k [num_k_heads, k_head_dim], v and the output gate z
// [num_v_heads, v_head_dim], b and a [num_v_heads]; a causal depthwise conv1d of conv_kernel taps
// over the q|k|v channels, then the gated delta rule (catalogue: causal_conv1d, gated_delta_rule,
// rmsnorm_gated). Per sequence it holds a fixed-size state instead of a KV cache: the conv's last
// conv_kernel - 1 inputs and the recurrent state [num_v_heads, k_head_dim, v_head_dim].
struct LinearAttention {
  int64_t num_k_heads = 0, num_v_heads = 0, k_head_dim = 0, v_head_dim = 0, conv_kernel = 0;
  // Qwen3-Next's checkpoints fuse the input projections per key-head group (in_proj_qkvz,
  // in_proj_ba); Qwen3.5's keep them apart (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a).
  bool fused_projections = true;

  // The conv's channels: q and k of every key head, v of every value head.
  int64_t conv_dim() const { return 2 * num_k_heads * k_head_dim + num_v_heads * v_head_dim; }
  // Value heads per key head (GVA; transformers repeats each key head this many times).
  int64_t value_group() const { return num_k_heads > 0 ? num_v_heads / num_k_heads : 0; }
  // One sequence's state of one layer split over `tp` ranks, in bytes: the conv window in the
  // compute dtype (`act_bytes` per element), the recurrent state in f32 (gated_delta_rule's
  // contract, and transformers' torch_recurrent_gated_delta_rule's).
  int64_t conv_state_bytes(int64_t tp, int64_t act_bytes) const {
    return conv_dim() / tp * (conv_kernel - 1) * act_bytes;
  }
  int64_t recurrent_state_bytes(int64_t tp) const {
    return num_v_heads / tp * k_head_dim * v_head_dim * 4;
  }
};

// DeepSeek-V3.2's lightning indexer (DeepSeek sparse attention): per query a score for every
// earlier key, sum_h w_h * ReLU(q_h . k) over n_heads heads of head_dim, and attention over the
// top `topk` keys only. It caches one key of head_dim per token per layer (every rank: not split).
struct Indexer {
  int64_t n_heads = 0, head_dim = 0, topk = 0;  // n_heads == 0: none
};

// Mixture of experts. num_experts == 0: every layer is dense.
struct Moe {
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;
  int64_t expert_intermediate_size = 0;
  int64_t num_shared_experts = 0;  // run as one dense MLP of shared_inter() width
  int64_t shared_intermediate_size =
      0;  // Qwen2-MoE's shared_expert_intermediate_size; 0: num_shared·expert_inter
  std::string scoring = "softmax";  // "softmax" or "sigmoid" (DeepSeek-V3)
  bool norm_topk_prob = false;
  int64_t n_group = 1, topk_group = 1;  // grouped routing (DeepSeek-V3)
  double routed_scaling_factor = 1;
  bool correction_bias = false;       // gate.e_score_correction_bias (noaux_tc)
  int64_t first_k_dense = 0;          // DeepSeek: layers [0, k) are dense
  int64_t layer_freq = 1;             // DeepSeek moe_layer_freq / Qwen decoder_sparse_step
  std::vector<int64_t> dense_layers;  // Qwen3-MoE mlp_only_layers
  // Qwen2-MoE: the shared expert's output scaled by sigmoid(x·shared_expert_gate) per token.
  bool shared_expert_gate = false;
  // GPT-OSS: the router has a bias; the experts are stored fused (kExpertsGateUp, kExpertsDown,
  // with biases) and gated by the clamped SwiGLU (moe_experts' activation clamped_swiglu).
  bool router_bias = false;
  bool fused_experts = false;
  double swiglu_alpha = 0, swiglu_limit = 0;  // > 0: clamped_swiglu
  // LongCat-Flash's zero-computation experts (zero_expert_num): routed to, identity, numbered after
  // the num_experts real ones; transformers 5.24 still saves their gate/up rows.
  int64_t identity_experts = 0;

  // The width of the shared experts' MLP (DeepSeek: num_shared_experts · expert_intermediate_size).
  int64_t shared_inter() const {
    return shared_intermediate_size > 0 ? shared_intermediate_size
                                        : num_shared_experts * expert_intermediate_size;
  }
};

// The language model: a decoder-only transformer.
struct TextModel {
  std::string model_type;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense MLP
  int64_t num_layers = 0;
  // Decoder layers per layer of the checkpoint (its model.layers.<n>), where the config derives
  // num_layers from a count of its own: LongCat-Flash's two attention sublayers a layer (2).
  int64_t layers_per_stored_layer = 1;
  int64_t vocab_size = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000;
  RopeScaling rope_scaling;
  nlohmann::json
      rope_scaling_json;  // the config's object verbatim (the rope op's `scaling`); null: none
  // The sliding layers' own RoPE (Gemma 3's rope_local_base_freq, or rope_parameters'
  // sliding_attention): a base and a scaling object (null: none). 0: they use the rope above.
  double local_rope_theta = 0;
  nlohmann::json local_rope_scaling_json;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool mlp_bias = false;
  std::string hidden_act =
      "silu";  // the MLP's: silu (swiglu), gelu, gelu_pytorch_tanh (model_ops: others refused)
  // Gemma 3: the embedding's rows times √hidden_size (rounded to the run dtype, as HF's
  // embed_scale.to(weight.dtype)); every RMSNorm weighs by (1 + w); a norm on the attention's
  // and on the MLP's output before each residual add (kAttnPostNorm, kFfnPostNorm).
  bool embed_scaled = false;
  double norm_offset = 0;
  bool sandwich_norms = false;
  // Qwen2-VL's M-RoPE: the rotary pairs split in sections turned by the temporal, height and width
  // position ids (rope_parameters / rope_scaling mrope_section). Empty: plain RoPE. A text-only
  // sequence has all three ids equal, so it is plain RoPE on its positions.
  std::vector<int64_t> mrope_section;
  Attention attn;
  LinearAttention linear;  // the kLinear layers' (num_v_heads == 0: none)
  Indexer indexer;         // DeepSeek-V3.2: every attention layer's
  Moe moe;
  int64_t num_nextn_predict_layers = 0;  // DeepSeek-V3 multi-token prediction (checkpoint only)
  std::optional<tensor::DType> dtype;    // torch_dtype / dtype
  // Weight-name prefixes: "model." for the decoder, "lm_head." for the head (LLaVA nests both).
  std::string prefix = "model.";
  std::string head_prefix = "lm_head.";
  // The decoder layers' tensor names: the family's table (static; families/<family>.cc).
  const TensorNames* names = &llama_tensor_names();

  // Per decoder layer, when the config says (layer_types, sliding_window_pattern); empty: every
  // layer is full attention.
  enum class LayerKind {
    kFull,
    kSliding,
    kLinear
  };  // kLinear: a fixed-size recurrent state, no KV
  std::vector<LayerKind> layer_kinds;
  // The blocks that keep their config fields in their own file (config/block.h use_block): each
  // one's struct under its name. A block added since holds its fields there, not above.
  std::map<std::string, std::any> block_config;

  bool is_moe_layer(int64_t layer) const;
  LayerKind layer_kind(int64_t layer) const;
};

// A vision tower: CLIP plus LLaVA's projector (tower "clip"), or Qwen2.5-VL's (tower
// "qwen2_5_vl": a Conv3d patch embedding over temporal_patch_size frames, blocks of RMSNorm,
// fused-qkv attention with 2D RoPE, in windows of window_size pixels except the
// fullatt_blocks, and SwiGLU MLPs; then the PatchMerger of spatial_merge_size² patches into the
// language model's width, out_hidden_size). What runs it is the tower's file (config/tower.h:
// blocks/clip_tower.cc, blocks/qwen_vl_tower.cc); these are the config's fields.
struct Vision {
  std::string tower = "clip";
  int64_t hidden_size = 0, intermediate_size = 0, num_layers = 0, num_heads = 0;
  int64_t image_size = 0, patch_size = 0, num_channels = 3;
  double layer_norm_eps = 1e-5;
  std::string hidden_act = "quick_gelu";
  std::string projector_hidden_act = "gelu";
  bool projector_bias = true;
  int64_t feature_layer = -2;  // hidden state LLaVA takes (negative: from the end)
  std::string feature_select_strategy = "default";  // "default" drops the CLS token
  int64_t image_token_index = 0;
  // Qwen2.5-VL (tower "qwen2_5_vl"):
  int64_t spatial_merge_size = 1, temporal_patch_size = 1, window_size = 0, out_hidden_size = 0;
  int64_t tokens_per_second = 0;
  double rope_theta = 10000;
  std::vector<int64_t> fullatt_blocks;
  std::string prefix = "vision_tower.";
  std::string layers_prefix =
      "encoder.layers.";  // an encoder layer's, under `prefix` (Qwen: "blocks.")
  // The tower's tensor names (families/common.cc clip_vision_names: HF's CLIP), stems under
  // weight_prefix().
  const TensorNames* names = nullptr;

  // Where a vision role's stem sits: LLaVA's projector at the top level, an encoder layer's
  // roles under "<prefix><layers_prefix><layer>.", the rest (Qwen's merger too) under `prefix`.
  std::string weight_prefix(TensorRole role, int64_t layer) const {
    if (role == TensorRole::kProjector1 || role == TensorRole::kProjector2) return "";
    if (is_vision_layer_role(role)) return prefix + layers_prefix + std::to_string(layer) + ".";
    return prefix;
  }
  // The checkpoint name of `role`'s `piece` (of encoder layer `layer` for a layer's role).
  std::string name(TensorRole role, TensorPiece piece = TensorPiece::kWeight,
                   int64_t layer = -1) const {
    return names->name(weight_prefix(role, layer), role, piece);
  }

  int64_t num_patches() const { return (image_size / patch_size) * (image_size / patch_size); }
};

// Quantization the released checkpoint uses (config's quantization_config), for the planner.
struct Quantization {
  std::string method;  // "fp8", ... ; empty: none
  int64_t block_rows = 0, block_cols = 0;
};

struct Architecture {
  std::string family;  // "llama", "qwen2", "qwen3", "qwen3_moe", "mixtral", "deepseek_v3", "llava",
                       // "qwen2_5_vl", ...
  std::string architecture;  // the HF class, e.g. "LlamaForCausalLM"
  // False for a family the executor does not model (describe_architecture): `family` is then the
  // config's model_type, and only the fields every decoder config shares are read (sizes, heads,
  // kv heads, head_dim, sliding windows, MLA latent, expert counts); the tensor inventory comes
  // from the checkpoint's headers (model/weights/checkpoint_inventory.h), never from
  // build_inventory.
  bool modelled = true;
  bool has_vision = false;  // a vision_config (also set when the tower itself is not modelled)
  // What was read under another name or derived (a family the executor does not model):
  // "num_hidden_layers 56 = 2 x num_layers (transformers 5.24's longcat_flash)".
  std::vector<std::string> derived;
  // What the memory plan's KV estimate rests on (a family the executor does not model): the
  // attention fields it used ("num_key_value_heads 8 x head_dim 128 ..."), and the per-layer
  // kinds it did not understand ("layer_types 'compressed_sparse_attention' on 21 layers: counted
  // as full attention").
  std::vector<std::string> kv_basis, not_understood;
  TextModel text;
  std::optional<Vision> vision;
  Quantization quantization;

  bool is_moe() const { return text.moe.num_experts > 0; }
};

// num_hidden_layers above this (or below 1) is a malformed config, not a model: refused at the
// field before any per-layer table is built.
inline constexpr int64_t kMaxDecoderLayers = 100000;

// Parses a config.json object. `where` names it in errors: "config.json: text_config.hidden_size:
// missing (an integer is required)". Unknown architectures are an InputError listing the known
// ones.
Architecture parse_architecture(const nlohmann::json& config, const std::string& where);

// Reads `path`: a config.json file or a model directory holding one.
Architecture load_architecture(const std::string& path);

// Whether the executor models the config's family (its `architectures`, then `model_type`).
bool is_modelled(const nlohmann::json& config);
// parse_architecture for a modelled family; for any other, the architecture-independent
// description (modelled = false; generic_architecture.cc): the shared decoder fields, read
// leniently (absent sizes default as transformers' PretrainedConfig does; only hidden_size,
// num_hidden_layers and num_attention_heads are required), under `text_config` when the config
// nests its language model.
Architecture describe_architecture(const nlohmann::json& config, const std::string& where);
Architecture load_any_architecture(const std::string& path);
// The parsed JSON of `path` (a config.json or a directory holding one); InputError naming the file.
nlohmann::json read_config_file(const std::string& path);
// The config.json path for a directory or file path.
std::string config_path(const std::string& path);

// The families this build knows: "LlamaForCausalLM (llama), ...", for help and errors.
std::string known_architectures();

}  // namespace h0::model
