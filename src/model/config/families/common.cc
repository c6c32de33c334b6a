// What every family reads: the decoder's shared fields (rope, sizes, heads) and a CLIP tower.
#include "base/error.h"
#include "model/config/families/families.h"

namespace h0::model {
namespace {

using LayerKind = TextModel::LayerKind;

// Rope base and scaling: transformers 4 writes `rope_theta` + `rope_scaling`, transformers 5
// writes `rope_parameters` {rope_theta, rope_type, factor, ...}.
void read_rope(const ConfigFields& f, TextModel* t, double default_theta) {
  t->rope_theta = f.opt_double("rope_theta", default_theta);
  std::optional<ConfigFields> s = f.opt_object("rope_parameters");
  if (!s) s = f.opt_object("rope_scaling");
  if (s)
    read_rope_object(*s, t->max_position_embeddings, &t->rope_theta, &t->rope_scaling,
                     &t->rope_scaling_json);
}

}  // namespace

void read_rope_object(const ConfigFields& s, int64_t max_positions, double* theta,
                      RopeScaling* scaling, nlohmann::json* json) {
  *theta = s.opt_double("rope_theta", *theta);
  *json = s.json();
  RopeScaling& r = *scaling;
  r.type = s.opt_string("rope_type", s.opt_string("type", "default"));
  if (r.type == "mrope")
    r.type =
        "default";  // Qwen2-VL's 4.x spelling; transformers reads it as default + mrope_section
  if (r.type == "default") {
    *json = nullptr;
    return;
  }
  if (r.type != "linear" && r.type != "llama3" && r.type != "yarn") {
    throw InputError(s.where("rope_type"),
                     "unsupported '" + r.type + "' (default, linear, llama3, yarn)");
  }
  r.factor = s.req_double("factor");
  r.original_max_position_embeddings = s.opt_int("original_max_position_embeddings", max_positions);
  if (r.type == "llama3") {
    r.low_freq_factor = s.req_double("low_freq_factor");
    r.high_freq_factor = s.req_double("high_freq_factor");
    r.original_max_position_embeddings = s.req_int("original_max_position_embeddings");
  }
  if (r.type == "yarn") {
    r.beta_fast = s.opt_double("beta_fast", 32);
    r.beta_slow = s.opt_double("beta_slow", 1);
    r.mscale = s.opt_double("mscale", 1);
    r.mscale_all_dim = s.opt_double("mscale_all_dim", 0);
  }
}

std::string read_activation(const ConfigFields& f, const char* key, const std::string& def) {
  const std::string act = f.opt_string(key, def);
  if (act == "silu" || act == "swish") return "silu";
  if (act == "gelu") return "gelu";
  if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_tanh")
    return "gelu_pytorch_tanh";
  throw InputError(f.where(key), "unsupported activation '" + act +
                                     "' (silu, gelu, gelu_pytorch_tanh, gelu_new)");
}

int64_t read_layer_freq(const ConfigFields& f, const char* key) {
  const int64_t n = f.opt_int(key, 1);
  if (n < 1 || n > kMaxDecoderLayers) {
    throw InputError(f.where(key), std::to_string(n) + " must be in 1 to " +
                                       std::to_string(kMaxDecoderLayers) +
                                       " (every n-th layer is MoE)");
  }
  return n;
}

void read_mlp_layer_types(const ConfigFields& f, TextModel* t,
                          std::map<std::string, int64_t>* unknown) {
  if (f.find("mlp_layer_types") == nullptr) return;
  const nlohmann::json& types = f.json()["mlp_layer_types"];
  if (!types.is_array() || static_cast<int64_t>(types.size()) != t->num_layers) {
    throw InputError(f.where("mlp_layer_types"),
                     "must list \"dense\" or \"sparse\" for each of the " +
                         std::to_string(t->num_layers) + " num_hidden_layers");
  }
  Moe& m = t->moe;
  m.first_k_dense = 0;  // the list is the rule
  m.layer_freq = 1;
  m.dense_layers.clear();
  for (int64_t i = 0; i < t->num_layers; ++i) {
    const nlohmann::json& v = types[static_cast<size_t>(i)];
    // "moe" is read for a family the executor does not model (DeepSeek-V4); a modelled one's
    // list holds dense and sparse only.
    if (v != "dense" && v != "sparse" && !(unknown != nullptr && v == "moe")) {
      if (unknown == nullptr) {
        throw InputError(f.where("mlp_layer_types") + "[" + std::to_string(i) + "]",
                         "must be \"dense\" or \"sparse\", got " + v.dump());
      }
      ++(*unknown)[v.is_string() ? v.get<std::string>() : v.dump()];
    }
    if (v == "dense") m.dense_layers.push_back(i);
  }
}

void read_decoder(const ConfigFields& f, TextModel* t, bool defaults, double default_rope_theta,
                  bool dense_mlp) {
  auto size = [&](const char* key, int64_t def) {
    return defaults ? f.opt_int(key, def) : f.req_int(key);
  };
  t->model_type = f.opt_string("model_type", "llama");
  t->hidden_size = size("hidden_size", 4096);
  t->intermediate_size =
      dense_mlp ? size("intermediate_size", 11008) : f.opt_int("intermediate_size", 0);
  t->num_layers = size("num_hidden_layers", 32);
  if (t->num_layers < 1 ||
      t->num_layers > kMaxDecoderLayers) {  // a layer table of that size is a malformed config
    throw InputError(f.where("num_hidden_layers"), std::to_string(t->num_layers) +
                                                       " is not a plausible layer count (1 to " +
                                                       std::to_string(kMaxDecoderLayers) + ")");
  }
  t->vocab_size = size("vocab_size", 32000);
  t->attn.num_heads = size("num_attention_heads", 32);
  if (t->attn.num_heads <= 0) {  // head_dim's default divides by it
    throw InputError(f.where("num_attention_heads"),
                     "must be positive, got " + std::to_string(t->attn.num_heads));
  }
  t->attn.num_kv_heads = f.opt_int("num_key_value_heads", t->attn.num_heads);
  t->attn.head_dim = f.opt_int("head_dim", t->hidden_size / t->attn.num_heads);
  t->max_position_embeddings = f.opt_int("max_position_embeddings", 2048);
  t->rms_norm_eps = f.opt_double("rms_norm_eps", 1e-6);
  t->tie_word_embeddings = f.opt_bool("tie_word_embeddings", false);
  t->hidden_act = read_activation(f, "hidden_act");
  t->mlp_bias = f.opt_bool("mlp_bias", false);
  const std::string dtype = f.opt_string("torch_dtype", f.opt_string("dtype", ""));
  if (!dtype.empty()) t->dtype = tensor::parse_dtype(dtype);
  read_rope(f, t, default_rope_theta);
  if (t->attn.num_heads <= 0 || t->attn.num_kv_heads <= 0 ||
      t->attn.num_heads % t->attn.num_kv_heads != 0) {
    throw InputError(f.where("num_key_value_heads"),
                     "must be positive and divide num_attention_heads (" +
                         std::to_string(t->attn.num_heads) + ")");
  }
}

std::vector<TextModel::LayerKind> read_layer_kinds(const ConfigFields& f, int64_t layers,
                                                   int64_t window, int64_t default_pattern,
                                                   std::map<std::string, int64_t>* unknown) {
  std::vector<TextModel::LayerKind> kinds;
  const nlohmann::json& j = f.json();
  if (j.contains("layer_types") && j["layer_types"].is_array()) {
    const nlohmann::json& types = j["layer_types"];
    if (static_cast<int64_t>(types.size()) != layers) {
      throw InputError(f.where("layer_types"), "has " + std::to_string(types.size()) +
                                                   " entries for " + std::to_string(layers) +
                                                   " num_hidden_layers");
    }
    for (const auto& t : types) {
      const std::string s = t.is_string() ? t.get<std::string>() : t.dump();
      const bool sliding = s == "sliding_attention" || s == "chunked_attention",
                 linear = s == "linear_attention" || s == "mamba";
      kinds.push_back(sliding  ? LayerKind::kSliding
                      : linear ? LayerKind::kLinear
                               : LayerKind::kFull);
      if (unknown != nullptr && !sliding && !linear && s != "full_attention" && s != "attention")
        ++(*unknown)[s];
    }
    return kinds;
  }
  if (window <= 0 || !f.opt_bool("use_sliding_window", true)) return kinds;
  const int64_t pattern = f.opt_int("sliding_window_pattern", default_pattern);
  for (int64_t l = 0; l < layers; ++l) {
    kinds.push_back(pattern > 0 && (l + 1) % pattern == 0 ? LayerKind::kFull : LayerKind::kSliding);
  }
  return kinds;
}

void require_positive(const ConfigFields& f,
                      std::initializer_list<std::pair<const char*, int64_t>> fields) {
  for (const auto& [key, v] : fields) {
    if (v < 1)
      throw InputError(f.where(key), "must be a positive integer, got " + std::to_string(v));
  }
}

int64_t read_rotary_dim(const ConfigFields& f, int64_t head_dim, double def) {
  double factor = def;
  if (const std::optional<ConfigFields> rope = f.opt_object("rope_parameters"))
    factor = rope->opt_double("partial_rotary_factor", factor);
  factor = f.opt_double("partial_rotary_factor", factor);
  // HF: dim = int(head_dim * factor), inv_freq over arange(0, dim, 2) / dim, cos/sin 2·ceil(dim/2)
  // wide.
  const int64_t dim = int64_t(double(head_dim) * factor);
  if (factor <= 0 || factor > 1 || dim < 2) {
    throw InputError(f.where("partial_rotary_factor"),
                     "must leave a rotary dim in [2, head_dim = " + std::to_string(head_dim) + "]");
  }
  return dim;
}

void read_grouped_routing(const ConfigFields& f, Moe* m) {
  m->experts_per_token = f.req_int("num_experts_per_tok");
  m->expert_intermediate_size = f.req_int("moe_intermediate_size");
  m->norm_topk_prob = f.opt_bool("norm_topk_prob", true);
  m->n_group = f.opt_int("n_group", 1);
  m->topk_group = f.opt_int("topk_group", 1);
  m->routed_scaling_factor = f.opt_double("routed_scaling_factor", 1);
  if (m->num_experts > 0 && (m->n_group <= 0 || m->num_experts % m->n_group != 0)) {
    throw InputError(f.where("n_group"),
                     "must divide n_routed_experts (" + std::to_string(m->num_experts) + ")");
  }
}

const TensorNames& clip_vision_names() {
  static const TensorNames names({
      {TensorRole::kVisClassEmbed, "embeddings.class_embedding"},
      {TensorRole::kVisPatchEmbed, "embeddings.patch_embedding"},
      {TensorRole::kVisPosEmbed, "embeddings.position_embedding"},
      {TensorRole::kVisPreNorm, "pre_layrnorm"},  // sic: HF's CLIP name
      {TensorRole::kVisNorm1, "layer_norm1"},
      {TensorRole::kVisAttnQ, "self_attn.q_proj"},
      {TensorRole::kVisAttnK, "self_attn.k_proj"},
      {TensorRole::kVisAttnV, "self_attn.v_proj"},
      {TensorRole::kVisAttnO, "self_attn.out_proj"},
      {TensorRole::kVisNorm2, "layer_norm2"},
      {TensorRole::kVisFc1, "mlp.fc1"},
      {TensorRole::kVisFc2, "mlp.fc2"},
      {TensorRole::kVisPostNorm, "post_layernorm"},
      {TensorRole::kProjector1, "multi_modal_projector.linear_1"},
      {TensorRole::kProjector2, "multi_modal_projector.linear_2"},
  });
  return names;
}

Vision read_clip_vision(const ConfigFields& f) {
  Vision v;
  v.names = &clip_vision_names();
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
  if (type != "clip_vision_model")
    throw InputError(f.where("model_type"),
                     "unsupported vision tower '" + type + "' (clip_vision_model)");
  if (v.image_size % v.patch_size != 0)
    throw InputError(f.where("patch_size"), "must divide image_size");
  return v;
}

}  // namespace h0::model
