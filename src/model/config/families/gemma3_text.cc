// Gemma 3's language model (Gemma3ForCausalLM, gemma3_text): Llama's blocks with Gemma's
// details — the embedding times √hidden_size, every RMSNorm weighing by (1 + w) (q/k norms
// included), a norm on the attention's and the MLP's outputs too (four per layer), a GeLU-tanh
// MLP, the softmax scale query_pre_attn_scalar^-0.5, and layer_types alternating sliding and full
// attention with a RoPE base of their own (rope_local_base_freq; transformers 5 nests
// rope_parameters by layer type). Gemma3ForConditionalGeneration (the SigLIP tower) is not this.
#include <cmath>

#include "base/error.h"
#include "model/config/families/families.h"

namespace h0::model {

namespace {

const TensorNames& gemma3_tensor_names() {
  static const TensorNames names = llama_tensor_names().with({
      {TensorRole::kAttnPostNorm, "post_attention_layernorm"},
      {TensorRole::kFfnNorm, "pre_feedforward_layernorm"},
      {TensorRole::kFfnPostNorm, "post_feedforward_layernorm"},
  });
  return names;
}

// What these blocks cannot run is refused at its field, not run without it.
void refuse_set(const ConfigFields& f, const char* key, const std::string& why) {
  if (f.find(key) != nullptr) throw InputError(f.where(key), why);
}

}  // namespace

Architecture arch_gemma3_text(const ConfigFields& f) {
  Architecture a;
  TextModel& t = a.text;
  read_decoder(f, &t, false, 1e6);  // Gemma3TextConfig.default_theta's global base
  t.names = &gemma3_tensor_names();
  t.attn.head_dim =
      f.opt_int("head_dim", 256);  // Gemma3TextConfig's defaults where configs omit them
  t.tie_word_embeddings = f.opt_bool("tie_word_embeddings", true);
  t.hidden_act = read_activation(f, "hidden_activation", "gelu_pytorch_tanh");
  t.attn.qkv_bias = t.attn.o_bias = f.opt_bool("attention_bias", false);
  t.attn.qk_norm = true;
  t.attn.scale = 1.0 / std::sqrt(f.opt_double("query_pre_attn_scalar", 256));
  t.embed_scaled = t.sandwich_norms = true;
  t.norm_offset = 1;
  refuse_set(f, "attn_logit_softcapping",
             "attention logit soft-capping is not modelled (Gemma 2's; Gemma 3 has none)");
  refuse_set(f, "final_logit_softcapping",
             "final logit soft-capping is not modelled (Gemma 2's; Gemma 3 has none)");
  if (f.opt_bool("use_bidirectional_attention", false)) {
    throw InputError(f.where("use_bidirectional_attention"),
                     "bidirectional attention is not modelled (causal only)");
  }

  // Sliding layers: layer_types, else every sliding_window_pattern-th layer full (6 when the
  // config says neither: Gemma3TextConfig's default).
  t.attn.sliding_window = f.opt_int("sliding_window", 4096);
  t.layer_kinds = read_layer_kinds(f, t.num_layers, t.attn.sliding_window, 6);
  // RoPE: transformers 4 writes rope_theta (+ rope_scaling, read by read_decoder) for the full
  // layers and rope_local_base_freq for the sliding ones; 5 writes rope_parameters
  // {full_attention: {...}, sliding_attention: {...}}. The local base defaults to 1e4.
  t.local_rope_theta = f.opt_double("rope_local_base_freq", 10000);
  t.local_rope_scaling_json = nullptr;
  const std::optional<ConfigFields> rope = f.opt_object("rope_parameters");
  if (rope && rope->find("full_attention") != nullptr) {
    read_rope_object(rope->req_object("full_attention"), t.max_position_embeddings, &t.rope_theta,
                     &t.rope_scaling, &t.rope_scaling_json);
    if (rope->find("sliding_attention") != nullptr) {
      RopeScaling local;
      read_rope_object(rope->req_object("sliding_attention"), t.max_position_embeddings,
                       &t.local_rope_theta, &local, &t.local_rope_scaling_json);
    }
  }
  return a;
}

}  // namespace h0::model
