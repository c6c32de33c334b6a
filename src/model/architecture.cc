#include "model/architecture.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "base/json_depth.h"
#include "model/config_fields.h"

namespace h0::model {
namespace {

constexpr int64_t kMaxLayers = 100000;  // far above any released model

// Rope base and scaling: transformers 4 writes `rope_theta` + `rope_scaling`, transformers 5
// writes `rope_parameters` {rope_theta, rope_type, factor, ...}.
void read_rope(const ConfigFields& f, TextModel* t, double default_theta) {
  t->rope_theta = f.opt_double("rope_theta", default_theta);
  std::optional<ConfigFields> s = f.opt_object("rope_parameters");
  if (!s) s = f.opt_object("rope_scaling");
  if (!s) return;
  t->rope_theta = s->opt_double("rope_theta", t->rope_theta);
  t->rope_scaling_json = s->json();
  RopeScaling& r = t->rope_scaling;
  r.type = s->opt_string("rope_type", s->opt_string("type", "default"));
  if (r.type == "default") {
    t->rope_scaling_json = nullptr;
    return;
  }
  if (r.type != "linear" && r.type != "llama3" && r.type != "yarn") {
    throw InputError(s->where("rope_type"), "unsupported '" + r.type + "' (default, linear, llama3, yarn)");
  }
  r.factor = s->req_double("factor");
  r.original_max_position_embeddings = s->opt_int("original_max_position_embeddings", t->max_position_embeddings);
  if (r.type == "llama3") {
    r.low_freq_factor = s->req_double("low_freq_factor");
    r.high_freq_factor = s->req_double("high_freq_factor");
    r.original_max_position_embeddings = s->req_int("original_max_position_embeddings");
  }
  if (r.type == "yarn") {
    r.beta_fast = s->opt_double("beta_fast", 32);
    r.beta_slow = s->opt_double("beta_slow", 1);
    r.mscale = s->opt_double("mscale", 1);
    r.mscale_all_dim = s->opt_double("mscale_all_dim", 0);
  }
}

// Fields every decoder shares. With `defaults` (a LLaVA text_config), missing sizes take
// LlamaConfig's defaults as transformers does; otherwise they are required.
void read_decoder(const ConfigFields& f, TextModel* t, bool defaults) {
  auto size = [&](const char* key, int64_t def) { return defaults ? f.opt_int(key, def) : f.req_int(key); };
  t->model_type = f.opt_string("model_type", "llama");
  t->hidden_size = size("hidden_size", 4096);
  t->intermediate_size = size("intermediate_size", 11008);
  t->num_layers = size("num_hidden_layers", 32);
  if (t->num_layers < 1 || t->num_layers > kMaxLayers) {  // a layer table of that size is a malformed config
    throw InputError(f.where("num_hidden_layers"), std::to_string(t->num_layers) +
                                                       " is not a plausible layer count (1 to " +
                                                       std::to_string(kMaxLayers) + ")");
  }
  t->vocab_size = size("vocab_size", 32000);
  t->attn.num_heads = size("num_attention_heads", 32);
  t->attn.num_kv_heads = f.opt_int("num_key_value_heads", t->attn.num_heads);
  t->attn.head_dim = f.opt_int("head_dim", t->hidden_size / t->attn.num_heads);
  t->max_position_embeddings = f.opt_int("max_position_embeddings", 2048);
  t->rms_norm_eps = f.opt_double("rms_norm_eps", 1e-6);
  t->tie_word_embeddings = f.opt_bool("tie_word_embeddings", false);
  t->hidden_act = f.opt_string("hidden_act", "silu");
  t->mlp_bias = f.opt_bool("mlp_bias", false);
  const std::string dtype = f.opt_string("torch_dtype", f.opt_string("dtype", ""));
  if (!dtype.empty()) t->dtype = tensor::parse_dtype(dtype);
  read_rope(f, t, 10000);
  if (t->attn.num_heads <= 0 || t->attn.num_kv_heads <= 0 || t->attn.num_heads % t->attn.num_kv_heads != 0) {
    throw InputError(f.where("num_key_value_heads"), "must be positive and divide num_attention_heads (" +
                                                         std::to_string(t->attn.num_heads) + ")");
  }
}

Architecture arch_llama(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  a.text.attn.qkv_bias = a.text.attn.o_bias = f.opt_bool("attention_bias", false);
  return a;
}

Architecture arch_qwen2(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  a.text.attn.qkv_bias = true;  // Qwen2 always has q/k/v biases, never an o_proj bias
  return a;
}

Architecture arch_qwen3(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  a.text.attn.qkv_bias = a.text.attn.o_bias = f.opt_bool("attention_bias", false);
  a.text.attn.qk_norm = true;
  return a;
}

Architecture arch_qwen3_moe(const ConfigFields& f) {
  Architecture a = arch_qwen3(f);
  Moe& m = a.text.moe;
  m.num_experts = f.req_int_any({"num_experts", "num_local_experts"});  // transformers 4 / 5
  m.experts_per_token = f.req_int("num_experts_per_tok");
  m.expert_intermediate_size = f.req_int("moe_intermediate_size");
  m.norm_topk_prob = f.opt_bool("norm_topk_prob", false);
  m.layer_freq = f.opt_int("decoder_sparse_step", 1);
  m.dense_layers = f.opt_int_list("mlp_only_layers");
  return a;
}

Architecture arch_mixtral(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  Moe& m = a.text.moe;
  m.num_experts = f.req_int("num_local_experts");
  m.experts_per_token = f.req_int("num_experts_per_tok");
  m.expert_intermediate_size = a.text.intermediate_size;
  m.norm_topk_prob = true;  // Mixtral renormalizes the top-k softmax weights
  m.mixtral_names = true;
  return a;
}

Architecture arch_deepseek_v3(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  Attention& at = a.text.attn;
  at.mla = true;
  at.q_lora_rank = f.opt_int("q_lora_rank", 0);  // null in DeepSeek-V2-Lite: q projected directly
  at.kv_lora_rank = f.req_int("kv_lora_rank");
  at.qk_nope_head_dim = f.req_int("qk_nope_head_dim");
  at.qk_rope_head_dim = f.req_int("qk_rope_head_dim");
  at.v_head_dim = f.req_int("v_head_dim");
  at.head_dim = at.qk_rope_head_dim;  // the rotary part, as HF's config does
  at.qkv_bias = at.o_bias = f.opt_bool("attention_bias", false);
  Moe& m = a.text.moe;
  m.num_experts = f.opt_int("n_routed_experts", 0);
  m.experts_per_token = f.req_int("num_experts_per_tok");
  m.expert_intermediate_size = f.req_int("moe_intermediate_size");
  m.num_shared_experts = f.opt_int("n_shared_experts", 0);
  m.scoring = f.opt_string("scoring_func", "sigmoid");
  m.norm_topk_prob = f.opt_bool("norm_topk_prob", true);
  m.n_group = f.opt_int("n_group", 1);
  m.topk_group = f.opt_int("topk_group", 1);
  m.routed_scaling_factor = f.opt_double("routed_scaling_factor", 1);
  m.correction_bias = f.opt_string("topk_method", "noaux_tc") == "noaux_tc";
  m.first_k_dense = f.opt_int("first_k_dense_replace", 0);
  m.layer_freq = f.opt_int("moe_layer_freq", 1);
  if (m.num_experts > 0 && m.num_experts % m.n_group != 0) {
    throw InputError(f.where("n_group"), "must divide n_routed_experts (" + std::to_string(m.num_experts) + ")");
  }
  a.text.num_nextn_predict_layers = f.opt_int("num_nextn_predict_layers", 0);
  return a;
}

// CLIPVisionConfig's defaults apply to missing fields, as in transformers.
Vision read_clip_vision(const ConfigFields& f) {
  Vision v;
  v.hidden_size = f.opt_int("hidden_size", 768);
  v.intermediate_size = f.opt_int("intermediate_size", 3072);
  v.num_layers = f.opt_int("num_hidden_layers", 12);
  v.num_heads = f.opt_int("num_attention_heads", 12);
  v.num_channels = f.opt_int("num_channels", 3);
  v.image_size = f.opt_int("image_size", 224);
  v.patch_size = f.opt_int("patch_size", 32);
  v.layer_norm_eps = f.opt_double("layer_norm_eps", 1e-5);
  v.hidden_act = f.opt_string("hidden_act", "quick_gelu");
  const std::string type = f.opt_string("model_type", "clip_vision_model");
  if (type != "clip_vision_model") throw InputError(f.where("model_type"), "unsupported vision tower '" + type + "' (clip_vision_model)");
  if (v.image_size % v.patch_size != 0) throw InputError(f.where("patch_size"), "must divide image_size");
  return v;
}

Architecture arch_llava(const ConfigFields& f) {
  Architecture a;
  const ConfigFields text = f.req_object("text_config");
  const std::string text_type = text.opt_string("model_type", "llama");
  if (text_type != "llama") throw InputError(text.where("model_type"), "unsupported language model '" + text_type + "' (llama)");
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
  v.projector_hidden_act = f.opt_string("projector_hidden_act", "gelu");
  v.projector_bias = f.opt_bool("multimodal_projector_bias", true);
  v.feature_layer = f.opt_int("vision_feature_layer", -2);
  v.feature_select_strategy = f.opt_string("vision_feature_select_strategy", "default");
  v.image_token_index = f.opt_int("image_token_index", f.opt_int("image_token_id", 32000));
  if (v.feature_layer >= v.num_layers || v.feature_layer < -v.num_layers - 1) {
    throw InputError(f.where("vision_feature_layer"), "out of range for " + std::to_string(v.num_layers) + " layers");
  }
  a.vision = v;
  a.has_vision = true;
  return a;
}

struct Family {
  const char* architecture;  // HF class in `architectures`
  const char* model_type;
  const char* family;
  Architecture (*parse)(const ConfigFields&);
};

// Adding a family: one function above and one row here.
constexpr Family kFamilies[] = {
    {"LlamaForCausalLM", "llama", "llama", arch_llama},
    {"Qwen2ForCausalLM", "qwen2", "qwen2", arch_qwen2},
    {"Qwen3ForCausalLM", "qwen3", "qwen3", arch_qwen3},
    {"Qwen3MoeForCausalLM", "qwen3_moe", "qwen3_moe", arch_qwen3_moe},
    {"MixtralForCausalLM", "mixtral", "mixtral", arch_mixtral},
    {"DeepseekV3ForCausalLM", "deepseek_v3", "deepseek_v3", arch_deepseek_v3},
    {"DeepseekV3ForCausalLM", "kimi_k2", "deepseek_v3", arch_deepseek_v3},
    {"LlavaForConditionalGeneration", "llava", "llava", arch_llava},
};

const Family* find_family(const nlohmann::json& config) {
  if (config.contains("architectures") && config["architectures"].is_array()) {
    for (const auto& name : config["architectures"]) {
      if (!name.is_string()) continue;
      for (const Family& fam : kFamilies) {
        if (name.get<std::string>() == fam.architecture) return &fam;
      }
    }
  }
  if (config.contains("model_type") && config["model_type"].is_string()) {
    for (const Family& fam : kFamilies) {
      if (config["model_type"].get<std::string>() == fam.model_type) return &fam;
    }
  }
  return nullptr;
}

}  // namespace

bool TextModel::is_moe_layer(int64_t layer) const {
  if (moe.num_experts == 0 || layer < moe.first_k_dense) return false;
  for (int64_t d : moe.dense_layers) {
    if (d == layer) return false;
  }
  if (moe.first_k_dense > 0) return layer % moe.layer_freq == 0;  // DeepSeek's rule
  return (layer + 1) % moe.layer_freq == 0;                       // Qwen's decoder_sparse_step
}

std::string known_architectures() {
  std::string out;
  for (const Family& fam : kFamilies) {
    if (!out.empty()) out += ", ";
    out += std::string(fam.architecture) + " (" + fam.model_type + ")";
  }
  return out;
}

Architecture parse_architecture(const nlohmann::json& config, const std::string& where) {
  if (!config.is_object()) throw InputError(where, "not a JSON object");
  const Family* fam = find_family(config);
  if (fam == nullptr) {
    std::string got = config.contains("architectures") ? config["architectures"].dump() : "none";
    if (config.contains("model_type")) got += ", model_type " + config["model_type"].dump();
    throw InputError(where + ": architectures", "unknown architecture (" + got + "); known: " + known_architectures());
  }
  Architecture a = fam->parse(ConfigFields(config, where));
  a.family = fam->family;
  a.architecture = fam->architecture;
  if (config.contains("quantization_config") && config["quantization_config"].is_object()) {
    const ConfigFields q(config["quantization_config"], where + ": quantization_config");
    a.quantization.method = q.opt_string("quant_method", "");
    const std::vector<int64_t> block = q.opt_int_list("weight_block_size");
    if (block.size() == 2) {
      a.quantization.block_rows = block[0];
      a.quantization.block_cols = block[1];
    } else if (a.quantization.method == "fp8") {  // transformers' FineGrainedFP8Config default
      a.quantization.block_rows = a.quantization.block_cols = 128;
    }
    if (!block.empty() && (block.size() != 2 || block[0] <= 0 || block[1] <= 0)) {
      throw InputError(where + ": quantization_config: weight_block_size",
                       "must be two positive integers [rows, cols], e.g. [128, 128]");
    }
  }
  return a;
}

std::string config_path(const std::string& path) {
  return std::filesystem::is_directory(path) ? (std::filesystem::path(path) / "config.json").string() : path;
}

nlohmann::json read_config_file(const std::string& path) {
  const std::string file = config_path(path);
  std::ifstream in(file);
  if (!in) throw InputError(file, "cannot open (a model directory with config.json, or a config.json file)");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (base::json_depth(text, base::kMaxJsonDepth) > base::kMaxJsonDepth) {
    throw InputError(file, "JSON nested deeper than " + std::to_string(base::kMaxJsonDepth) + " levels");
  }
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, std::string("not JSON: ") + e.what());
  }
  return config;
}

Architecture load_architecture(const std::string& path) {
  return parse_architecture(read_config_file(path), config_path(path));
}

bool is_modelled(const nlohmann::json& config) { return config.is_object() && find_family(config) != nullptr; }

TextModel::LayerKind TextModel::layer_kind(int64_t layer) const {
  if (layer < 0 || layer >= static_cast<int64_t>(layer_kinds.size())) return LayerKind::kFull;
  return layer_kinds[static_cast<size_t>(layer)];
}

}  // namespace h0::model
