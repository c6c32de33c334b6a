// LLaVA (LlavaForConditionalGeneration): a Llama language model and a CLIP vision tower.
#include "base/error.h"
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_llava(const ConfigFields& f) {
  Architecture a;
  const ConfigFields text = f.req_object("text_config");
  const std::string text_type = text.opt_string("model_type", "llama");
  if (text_type != "llama")
    throw InputError(text.where("model_type"),
                     "unsupported language model '" + text_type + "' (llama)");
  read_decoder(text, &a.text, true);
  a.text.attn.qkv_bias = a.text.attn.o_bias = text.opt_bool("attention_bias", false);
  a.text.tie_word_embeddings = f.opt_bool("tie_word_embeddings", a.text.tie_word_embeddings);
  if (!a.text.dtype) {
    const std::string dtype = f.opt_string("torch_dtype", f.opt_string("dtype", ""));
    if (!dtype.empty()) a.text.dtype = tensor::parse_dtype(dtype);
  }
  a.text.prefix = "language_model.model.";
  a.text.head_prefix = "language_model.lm_head.";
  Vision v = read_clip_vision(f.req_object("vision_config"));
  // The CLIP tower under its CLIPVisionModel's own name, as llava-hf's checkpoints store it and
  // vLLM loads it (transformers reads this layout too).
  v.prefix = "vision_tower.vision_model.";
  v.projector_hidden_act = f.opt_string("projector_hidden_act", "gelu");
  v.projector_bias = f.opt_bool("multimodal_projector_bias", true);
  v.feature_layer = f.opt_int("vision_feature_layer", -2);
  v.feature_select_strategy = f.opt_string("vision_feature_select_strategy", "default");
  v.image_token_index = f.opt_int("image_token_index", f.opt_int("image_token_id", 32000));
  if (v.feature_layer >= v.num_layers || v.feature_layer < -v.num_layers - 1) {
    throw InputError(f.where("vision_feature_layer"),
                     "out of range for " + std::to_string(v.num_layers) + " layers");
  }
  a.vision = v;
  a.has_vision = true;
  return a;
}

}  // namespace h0::model
