// The families the executor models: one file each under src/model/config/families/ (built by a
// glob), holding its parse function (config.json fields -> Architecture) and, when its checkpoints
// name tensors differently from Llama's, its TensorNames table; and one row in architecture.cc's
// kFamilies (declared there, next to its row). This header holds what family files share. A family
// that the existing blocks express (attention: GQA or MLA, with or without biases and QK-norm,
// sliding-window layers; MLP: dense, MoE with shared experts; a CLIP tower) needs nothing else:
// docs/extending.md "Adding a model family".
#pragma once

#include "model/config/architecture.h"
#include "model/config/config_fields.h"

namespace h0::model {

// Fields every decoder shares (sizes, heads, rope, dtype). With `defaults` (a LLaVA
// text_config), missing sizes take LlamaConfig's defaults as transformers does; otherwise they
// are required. Throws InputError naming the field.
// `default_rope_theta`: the family's base when the config writes none (Gemma 3: 1e6).
// `dense_mlp` false: no layer has a dense MLP (Qwen3.5-MoE), intermediate_size is optional.
void read_decoder(const ConfigFields& f, TextModel* t, bool defaults,
                  double default_rope_theta = 10000, bool dense_mlp = true);
// A RoPE object (rope_parameters, rope_scaling, or one layer type's entry of Gemma 3's nested
// rope_parameters): its rope_theta (when present) and scaling (json: the object, null for
// "default"). Throws InputError naming the field.
void read_rope_object(const ConfigFields& s, int64_t max_positions, double* theta,
                      RopeScaling* scaling, nlohmann::json* json);
// The MLP's activation under `key` (hidden_act; Gemma's hidden_activation), normalized: silu
// (also "swish"), gelu (erf), gelu_pytorch_tanh (also gelu_new, gelu_tanh: the same tanh
// approximation). Another is refused at the field: a model run with the wrong one matches nothing.
std::string read_activation(const ConfigFields& f, const char* key,
                            const std::string& def = "silu");
// Per layer: full, sliding or linear attention. layer_types (transformers' current spelling),
// else Gemma 3's sliding_window_pattern (every n-th layer full; `default_pattern` when absent,
// Gemma3TextConfig's 6), else every layer sliding when a window is set and use_sliding_window is
// not false (Mistral); empty: every layer full. A layer_types value it does not know is counted
// as full attention, and into `unknown` (value -> layers) when given.
std::vector<TextModel::LayerKind> read_layer_kinds(
    const ConfigFields& f, int64_t layers, int64_t window, int64_t default_pattern = 0,
    std::map<std::string, int64_t>* unknown = nullptr);
// Every n-th layer is MoE (DeepSeek's moe_layer_freq, Qwen's decoder_sparse_step), default 1.
// n < 1 is refused at the field (the layer rule divides by it).
int64_t read_layer_freq(const ConfigFields& f, const char* key);
// mlp_layer_types (transformers 5: DeepSeek-V3.2, GLM-4.7-Flash), when written: "dense" or
// "sparse" for each layer, the dense ones set as Moe::dense_layers (and the list the only rule).
// Throws InputError naming the field, or an entry of another value — unless `unknown` is given (a
// family the executor does not model): "moe" is then read as "sparse", and any other value
// (DeepSeek-V4's "hash_moe") counted as routed experts and into `unknown` (value -> layers).
void read_mlp_layer_types(const ConfigFields& f, TextModel* t,
                          std::map<std::string, int64_t>* unknown = nullptr);
// DeepSeek-V3's routing fields, which GLM-4.5 shares (num_experts set first): experts per token,
// their width, norm_topk_prob (default true), n_group / topk_group (must divide the experts),
// routed_scaling_factor.
void read_grouped_routing(const ConfigFields& f, Moe* m);
// partial_rotary_factor (transformers 4 at the top, 5 inside rope_parameters; `def` when neither)
// as rotary dims of `head_dim`: int(head_dim · factor), as HF's rotary embedding. Throws
// InputError unless it leaves at least 2.
int64_t read_rotary_dim(const ConfigFields& f, int64_t head_dim, double def);
// Throws InputError at the first field of `fields` (config key, value read) below 1.
void require_positive(const ConfigFields& f,
                      std::initializer_list<std::pair<const char*, int64_t>> fields);
// Qwen2-MoE's names (Llama's with mlp.shared_expert.* and mlp.shared_expert_gate), which Qwen3-Next
// and Qwen3.5 share.
const TensorNames& qwen2_moe_names();
// CLIPVisionConfig's fields, its defaults for the missing ones; names: clip_vision_names().
Vision read_clip_vision(const ConfigFields& f);
// HF's CLIP tower and LLaVA's projector, by vision role.
const TensorNames& clip_vision_names();

}  // namespace h0::model
