// Qwen2.5-VL (Qwen2_5_VLForConditionalGeneration): a Qwen2 language model with M-RoPE and
// Qwen's vision tower (architecture.h Vision, tower "qwen2_5_vl"). transformers 4 writes the
// language model's fields at the top level (rope_scaling {type: mrope, mrope_section}), 5 under
// text_config (rope_parameters {rope_type: default, mrope_section}); both are read. Checkpoints
// name the tower visual.*, the decoder model.layers.* and the head lm_head (the hub's layout, and
// what transformers 5's save_pretrained writes).
#include "base/error.h"
#include "model/config/families/families.h"

namespace h0::model {
namespace {

const TensorNames& qwen_vision_names() {
  static const TensorNames names({
      {TensorRole::kVisPatchEmbed, "patch_embed.proj"},
      {TensorRole::kVisNorm1, "norm1"},
      {TensorRole::kVisAttnQKV, "attn.qkv"},
      {TensorRole::kVisAttnO, "attn.proj"},
      {TensorRole::kVisNorm2, "norm2"},
      {TensorRole::kVisFfnGate, "mlp.gate_proj"},
      {TensorRole::kVisFfnUp, "mlp.up_proj"},
      {TensorRole::kVisFfnDown, "mlp.down_proj"},
      {TensorRole::kVisMergerNorm, "merger.ln_q"},
      {TensorRole::kVisMerger1, "merger.mlp.0"},
      {TensorRole::kVisMerger2, "merger.mlp.2"},
  });
  return names;
}

// Qwen2_5_VLVisionConfig's fields, its defaults for the missing ones.
Vision read_qwen_vision(const ConfigFields& f, int64_t text_hidden) {
  Vision v;
  v.tower = "qwen2_5_vl";
  v.names = &qwen_vision_names();
  v.prefix = "visual.";
  v.layers_prefix = "blocks.";
  v.num_layers = f.opt_int("depth", 32);
  v.hidden_size = f.opt_int("hidden_size", 3584);
  v.intermediate_size = f.opt_int("intermediate_size", 3420);
  v.num_heads = f.opt_int("num_heads", 16);
  v.num_channels = f.opt_int("in_channels", f.opt_int("in_chans", 3));
  v.patch_size = f.opt_int("patch_size", 14);
  v.spatial_merge_size = f.opt_int("spatial_merge_size", 2);
  v.temporal_patch_size = f.opt_int("temporal_patch_size", 2);
  v.window_size = f.opt_int("window_size", 112);
  v.out_hidden_size = f.opt_int("out_hidden_size", 3584);
  v.tokens_per_second = f.opt_int("tokens_per_second", 4);
  v.hidden_act = read_activation(f, "hidden_act");
  v.layer_norm_eps = 1e-6;  // Qwen2_5_VLRMSNorm's, fixed in transformers
  if (const std::optional<ConfigFields> rope = f.opt_object("rope_parameters")) {
    v.rope_theta = rope->opt_double("rope_theta", v.rope_theta);
  }
  require_positive(f, {{"depth", v.num_layers},
                       {"hidden_size", v.hidden_size},
                       {"intermediate_size", v.intermediate_size},
                       {"num_heads", v.num_heads},
                       {"patch_size", v.patch_size},
                       {"spatial_merge_size", v.spatial_merge_size},
                       {"temporal_patch_size", v.temporal_patch_size},
                       {"window_size", v.window_size},
                       {"out_hidden_size", v.out_hidden_size}});
  if (v.num_layers > kMaxDecoderLayers)
    throw InputError(f.where("depth"), "is not a plausible block count");
  if (v.hidden_size % v.num_heads != 0 || (v.hidden_size / v.num_heads) % 4 != 0) {
    throw InputError(f.where("num_heads"),
                     "hidden_size / num_heads must be a multiple of 4 (the 2D rotary embedding "
                     "turns a quarter of each head per axis)");
  }
  if (v.out_hidden_size != text_hidden) {
    throw InputError(f.where("out_hidden_size"), std::to_string(v.out_hidden_size) +
                                                     " is not the language model's hidden_size " +
                                                     std::to_string(text_hidden));
  }
  for (int64_t b : f.opt_int_list("fullatt_block_indexes")) {
    if (b < 0 || b >= v.num_layers) {
      throw InputError(
          f.where("fullatt_block_indexes"),
          std::to_string(b) + " is not a block (depth " + std::to_string(v.num_layers) + ")");
    }
    v.fullatt_blocks.push_back(b);
  }
  return v;
}

}  // namespace

Architecture arch_qwen2_5_vl(const ConfigFields& f) {
  Architecture a;
  const std::optional<ConfigFields> nested = f.opt_object("text_config");
  const ConfigFields& text = nested ? *nested : f;
  read_decoder(text, &a.text, false, 1000000.0);
  a.text.attn.qkv_bias = true;  // Qwen2's q/k/v biases, no o_proj bias
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    if (const std::optional<ConfigFields> rope = text.opt_object(key)) {
      a.text.mrope_section = rope->opt_int_list("mrope_section");
      if (!a.text.mrope_section.empty()) break;
    }
  }
  int64_t pairs = 0;
  for (int64_t s : a.text.mrope_section) {
    if (s < 0) throw InputError(text.where("mrope_section"), "holds a negative section");
    pairs += s;
  }
  if (!a.text.mrope_section.empty() &&
      (a.text.mrope_section.size() != 3 || pairs != a.text.attn.head_dim / 2)) {
    throw InputError(text.where("mrope_section"),
                     "must be 3 sections (t, h, w) summing to head_dim / 2 = " +
                         std::to_string(a.text.attn.head_dim / 2));
  }
  // The checkpoint's dtype is the top level's (transformers 5 writes text_config.dtype float32).
  const std::string dtype = f.opt_string("torch_dtype", f.opt_string("dtype", ""));
  if (!dtype.empty()) a.text.dtype = tensor::parse_dtype(dtype);
  a.text.tie_word_embeddings = f.opt_bool("tie_word_embeddings", a.text.tie_word_embeddings);
  Vision v = read_qwen_vision(f.req_object("vision_config"), a.text.hidden_size);
  v.image_token_index = f.opt_int("image_token_id", 151655);
  a.vision = v;
  a.has_vision = true;
  return a;
}

}  // namespace h0::model
