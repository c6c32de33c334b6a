// The architecture-independent description of a model whose family the executor does not model
// (Gemma 3, GPT-OSS, Mistral, Qwen2-MoE, Qwen2.5-VL, ... on the day they are released): only the
// fields that every decoder config of transformers spells the same way, enough for the memory
// planner's KV-cache and activation terms. The weights themselves come from the checkpoint's
// headers (model/weights/checkpoint_inventory.h).
#include <algorithm>
#include <map>

#include "base/error.h"
#include "model/config/architecture.h"
#include "model/config/config_fields.h"
#include "model/config/families/families.h"

namespace h0::model {
namespace {

// Far above any released model; a larger value is a malformed config, not a model to plan.
// The first of `keys` present (not null) in `f`, else `def`.
int64_t first_int(const ConfigFields& f, std::initializer_list<const char*> keys, int64_t def) {
  for (const char* k : keys) {
    const int64_t v = f.opt_int(k, INT64_MIN);
    if (v != INT64_MIN) return v;
  }
  return def;
}

// How transformers 5 derives a field the planner needs for a family whose config.json saves it
// under another name (golden/tools/gen_tf5_config_fields.py; the evidence in
// golden/models/transformers5-fields.json).
struct DerivedField {
  const char* model_type;
  const char* field;
  const char* saved_key;  // "text_config.<key>" for a nested language model's
  int64_t factor;         // 0: the length of the saved list or string
};
constexpr DerivedField kTransformers5Fields[] = {
#include "model/config/transformers5_fields.inc"
};

// transformers 5's rule for `field` of `family`, or null.
const DerivedField* rule_for(const std::string& family, const char* field) {
  for (const DerivedField& d : kTransformers5Fields) {
    if (family == d.model_type && std::string(field) == d.field) return &d;
  }
  return nullptr;
}

// `field` as the config spells it: under its own name; else as transformers 5 derives it for
// `family` (LongCat-Flash's num_hidden_layers = 2 x num_layers: two attention sublayers a layer);
// else under a name other families use for it (`aliases`, said to be an assumption); else
// refused, naming `field`. What was derived goes to a->derived.
int64_t derived_int(const ConfigFields& f, const std::string& family, const char* field,
                    std::initializer_list<const char*> aliases, Architecture* a) {
  if (f.find(field) != nullptr) return f.req_int(field);
  const DerivedField* d = rule_for(family, field);
  std::string key = d != nullptr ? d->saved_key : "";
  if (key.rfind("text_config.", 0) == 0) key = key.substr(12);
  if (const nlohmann::json* saved = d != nullptr ? f.find(key) : nullptr) {
    int64_t v = 0;
    std::string how;
    if (d->factor == 0) {  // a per-layer list (or pattern string): its length
      if (!saved->is_array() && !saved->is_string())
        throw InputError(f.where(key), "expected a list of the layers' kinds");
      v = saved->is_array() ? int64_t(saved->size()) : int64_t(saved->get<std::string>().size());
      how = "the length of " + key;
    } else {
      v = f.req_int(key) * d->factor;
      how = (d->factor > 1 ? std::to_string(d->factor) + " x " : "") + key;
    }
    a->derived.push_back(std::string(field) + " " + std::to_string(v) + " = " + how +
                         " (transformers 5.24's " + family + ")");
    return v;
  }
  for (const char* alias : aliases) {
    if (f.find(alias) == nullptr) continue;
    const int64_t v = f.req_int(alias);
    a->derived.push_back(std::string(field) + " " + std::to_string(v) + " = " + alias +
                         " (its name in other families; transformers 5.24 has no rule for " +
                         family + ")");
    return v;
  }
  return f.req_int(field);
}

// An optional field: derived_int where the config has it or transformers derives it, else `def`.
int64_t optional_derived_int(const ConfigFields& f, const std::string& family, const char* field,
                             int64_t def, Architecture* a) {
  return f.find(field) != nullptr || rule_for(family, field) != nullptr
             ? derived_int(f, family, field, {}, a)
             : def;
}

// A size that may be given per layer (Gemma 3n's intermediate_size: one value a layer): the
// largest, said in a->derived; a single integer as it is.
int64_t largest_per_layer(const ConfigFields& f, const char* key, Architecture* a) {
  const nlohmann::json* v = f.find(key);
  if (v == nullptr || !v->is_array()) return f.opt_int(key, 0);
  int64_t most = 0;
  for (const nlohmann::json& x : *v) {
    if (!x.is_number_integer()) throw InputError(f.where(key), "expected integers, one a layer");
    most = std::max(most, x.get<int64_t>());
  }
  a->derived.push_back(std::string(key) + " " + std::to_string(most) + " = the largest of its " +
                       std::to_string(v->size()) + " per-layer values");
  return most;
}

int64_t positive(const ConfigFields& f, const char* key, int64_t value) {
  if (value < 1)
    throw InputError(f.where(key), "must be a positive integer, got " + std::to_string(value));
  return value;
}

// "key 'value' on N layers: then" for each value of a per-layer list the harness has no rule for.
void say_not_understood(const char* key, const std::map<std::string, int64_t>& unknown,
                        const std::string& then, Architecture* a) {
  for (const auto& [kind, n] : unknown) {
    a->not_understood.push_back(std::string(key) + " '" + kind + "' on " + std::to_string(n) +
                                (n == 1 ? " layer: " : " layers: ") + then);
  }
}

// What the KV estimate will rest on, in words (Architecture::kv_basis); `unknown_kinds` the
// layer_types values read_layer_kinds had no rule for.
void explain_kv(const ConfigFields& f, const std::map<std::string, int64_t>& unknown_kinds,
                Architecture* a) {
  const TextModel& t = a->text;
  const Attention& at = t.attn;
  if (at.mla) {
    a->kv_basis.push_back("kv_lora_rank " + std::to_string(at.kv_lora_rank) +
                          " + qk_rope_head_dim " + std::to_string(at.qk_rope_head_dim) +
                          " a token and layer (MLA's latent)");
  } else {
    a->kv_basis.push_back(
        "num_key_value_heads " + std::to_string(at.num_kv_heads) +
        (f.find("num_key_value_heads") ? "" : " (none given: num_attention_heads)") +
        " x head_dim " + std::to_string(at.head_dim) +
        (f.find("head_dim") ? "" : " (none given: hidden_size / num_attention_heads)") +
        ", keys and values");
  }
  int64_t sliding = 0, linear = 0;
  for (TextModel::LayerKind k : t.layer_kinds) {
    sliding += k == TextModel::LayerKind::kSliding;
    linear += k == TextModel::LayerKind::kLinear;
  }
  if (sliding > 0)
    a->kv_basis.push_back("sliding_window " + std::to_string(at.sliding_window) + " on " +
                          std::to_string(sliding) + " of " + std::to_string(t.num_layers) +
                          " layers");
  if (linear > 0) a->kv_basis.push_back(std::to_string(linear) + " linear-attention layers: no KV");
  say_not_understood("layer_types", unknown_kinds, "counted as full attention", a);
  for (const char* key : {"layers_block_type", "block_types", "indexer_types"}) {
    if (f.find(key) != nullptr)
      a->not_understood.push_back(std::string(key) + " not read: its layers' KV as layer_types" +
                                  " and the attention fields say");
  }
}

// A config with no attention heads under any name that describes a recurrent state instead
// (Mamba's state_size, RWKV's attention_hidden_size): refused at num_attention_heads, saying what
// the model is, not only that a field is missing.
void refuse_attention_free(const ConfigFields& f, const std::string& family) {
  for (const char* heads : {"num_attention_heads", "n_head", "num_heads"}) {
    if (f.find(heads) != nullptr) return;
  }
  if (rule_for(family, "num_attention_heads") != nullptr) return;
  for (const char* k :
       {"state_size", "ssm_state_size", "attention_hidden_size", "time_step_rank"}) {
    if (f.find(k) == nullptr) continue;
    throw InputError(f.where("num_attention_heads"),
                     "missing: " + family + " has no attention heads (its " + k +
                         " describes a recurrent state); stage 1 and the memory plan size "
                         "attention models only");
  }
}

Architecture generic_architecture(const nlohmann::json& config, const std::string& where) {
  if (!config.is_object()) throw InputError(where, "not a JSON object");
  const ConfigFields top(config, where);
  const bool nested = config.contains("text_config") && config["text_config"].is_object();
  const ConfigFields f = nested ? top.req_object("text_config") : top;
  Architecture a;
  a.modelled = false;
  a.family = f.opt_string("model_type", top.opt_string("model_type", "unknown"));
  if (nested) a.family = top.opt_string("model_type", a.family);
  if (config.contains("architectures") && config["architectures"].is_array() &&
      !config["architectures"].empty() && config["architectures"][0].is_string()) {
    a.architecture = config["architectures"][0].get<std::string>();
  }
  a.has_vision = config.contains("vision_config");
  TextModel& t = a.text;
  t.model_type = f.opt_string("model_type", a.family);
  t.hidden_size = positive(f, "hidden_size",
                           derived_int(f, a.family, "hidden_size", {"n_embd", "d_model"}, &a));
  t.num_layers = positive(
      f, "num_hidden_layers",
      derived_int(f, a.family, "num_hidden_layers", {"num_layers", "n_layer", "n_layers"}, &a));
  if (const DerivedField* d = rule_for(a.family, "num_hidden_layers");
      d != nullptr && d->factor > 1 && f.find("num_hidden_layers") == nullptr)
    t.layers_per_stored_layer = d->factor;  // LongCat-Flash: 2 decoder layers a stored layer
  if (t.num_layers > kMaxDecoderLayers) {
    throw InputError(f.where("num_hidden_layers"), std::to_string(t.num_layers) +
                                                       " is not a plausible layer count (at most " +
                                                       std::to_string(kMaxDecoderLayers) + ")");
  }
  Attention& at = t.attn;
  refuse_attention_free(f, a.family);
  at.num_heads =
      positive(f, "num_attention_heads",
               derived_int(f, a.family, "num_attention_heads", {"n_head", "num_heads"}, &a));
  at.num_kv_heads =
      positive(f, "num_key_value_heads",
               optional_derived_int(f, a.family, "num_key_value_heads", at.num_heads, &a));
  at.head_dim = positive(f, "head_dim", f.opt_int("head_dim", t.hidden_size / at.num_heads));
  if (at.num_heads % at.num_kv_heads != 0) {
    throw InputError(f.where("num_key_value_heads"),
                     "must divide num_attention_heads (" + std::to_string(at.num_heads) + ")");
  }
  if (f.opt_int("kv_lora_rank", 0) > 0) {  // multi-head latent attention (DeepSeek-V2/V3 layout)
    at.mla = true;
    at.kv_lora_rank = f.req_int("kv_lora_rank");
    at.q_lora_rank = f.opt_int("q_lora_rank", 0);
    at.qk_rope_head_dim = f.req_int("qk_rope_head_dim");
    at.qk_nope_head_dim = f.opt_int("qk_nope_head_dim", 0);
    at.v_head_dim = f.opt_int("v_head_dim", at.head_dim);
    at.num_kv_heads = at.num_heads;
  }
  at.sliding_window = f.opt_int("sliding_window", 0);
  std::map<std::string, int64_t> unknown_kinds;  // layer_types values it has no rule for
  t.layer_kinds = read_layer_kinds(f, t.num_layers, at.sliding_window, 0, &unknown_kinds);
  t.intermediate_size = largest_per_layer(f, "intermediate_size", &a);
  t.vocab_size = optional_derived_int(f, a.family, "vocab_size", top.opt_int("vocab_size", 0), &a);
  t.max_position_embeddings = f.opt_int("max_position_embeddings", 0);
  t.tie_word_embeddings =
      top.opt_bool("tie_word_embeddings", f.opt_bool("tie_word_embeddings", false));
  t.rms_norm_eps = f.opt_double("rms_norm_eps", 1e-6);
  const std::string dtype =
      f.opt_string("torch_dtype", f.opt_string("dtype", top.opt_string("torch_dtype", "")));
  if (!dtype.empty()) t.dtype = tensor::parse_dtype(dtype);
  Moe& m = t.moe;
  m.num_experts = first_int(f, {"num_experts", "num_local_experts", "n_routed_experts"}, 0);
  if (m.num_experts > 0) {
    m.experts_per_token = first_int(f, {"num_experts_per_tok", "experts_per_token", "moe_topk"}, 1);
    m.expert_intermediate_size = first_int(f, {"moe_intermediate_size"}, t.intermediate_size);
    m.num_shared_experts = first_int(f, {"n_shared_experts", "num_shared_experts"}, 0);
    m.first_k_dense = f.opt_int("first_k_dense_replace", 0);
    m.layer_freq = first_int(f, {"moe_layer_freq", "decoder_sparse_step"}, 1);
    if (m.layer_freq < 1) m.layer_freq = 1;
    m.dense_layers = f.opt_int_list("mlp_only_layers");
    m.identity_experts = f.opt_int("zero_expert_num", 0);
    std::map<std::string, int64_t> unknown_mlp;  // DeepSeek-V4's "hash_moe"
    read_mlp_layer_types(f, &t, &unknown_mlp);
    say_not_understood("mlp_layer_types", unknown_mlp, "counted as routed experts", &a);
  }
  explain_kv(f, unknown_kinds, &a);
  if (config.contains("quantization_config") && config["quantization_config"].is_object()) {
    const ConfigFields q(config["quantization_config"], where + ": quantization_config");
    a.quantization.method = q.opt_string("quant_method", "");
  }
  return a;
}

}  // namespace

Architecture describe_architecture(const nlohmann::json& config, const std::string& where) {
  if (is_modelled(config)) return parse_architecture(config, where);
  return generic_architecture(config, where);
}

Architecture load_any_architecture(const std::string& path) {
  return describe_architecture(read_config_file(path), config_path(path));
}

}  // namespace h0::model
