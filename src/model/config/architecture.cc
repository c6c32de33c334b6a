#include "model/config/architecture.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "base/json_depth.h"
#include "base/json_read.h"
#include "model/config/config_fields.h"
#include "model/config/families/families.h"

namespace h0::model {

// The families' parse functions, each in its file under families/ (the table below: one row each).
Architecture arch_llama(const ConfigFields& f);             // families/llama.cc
Architecture arch_qwen2(const ConfigFields& f);             // families/qwen2.cc
Architecture arch_qwen3(const ConfigFields& f);             // families/qwen3.cc
Architecture arch_qwen3_moe(const ConfigFields& f);         // families/qwen3_moe.cc
Architecture arch_mixtral(const ConfigFields& f);           // families/mixtral.cc
Architecture arch_deepseek_v3(const ConfigFields& f);       // families/deepseek_v3.cc
Architecture arch_llava(const ConfigFields& f);             // families/llava.cc
Architecture arch_mistral(const ConfigFields& f);           // families/mistral.cc
Architecture arch_qwen2_moe(const ConfigFields& f);         // families/qwen2_moe.cc
Architecture arch_glm4_moe(const ConfigFields& f);          // families/glm4_moe.cc
Architecture arch_gemma3_text(const ConfigFields& f);       // families/gemma3_text.cc
Architecture arch_gpt_oss(const ConfigFields& f);           // families/gpt_oss.cc
Architecture arch_qwen3_next(const ConfigFields& f);        // families/qwen3_next.cc
Architecture arch_qwen3_5_text(const ConfigFields& f);      // families/qwen3_next.cc
Architecture arch_qwen3_5_moe_text(const ConfigFields& f);  // families/qwen3_next.cc
Architecture arch_deepseek_v32(const ConfigFields& f);      // families/deepseek_v32.cc
Architecture arch_qwen2_5_vl(const ConfigFields& f);        // families/qwen2_5_vl.cc
Architecture arch_glm4_moe_lite(const ConfigFields& f);     // families/glm4_moe_lite.cc
Architecture arch_minimax_m2(const ConfigFields& f);        // families/minimax_m2.cc

namespace {

struct Family {
  const char* architecture;  // HF class in `architectures`
  const char* model_type;
  const char* family;
  Architecture (*parse)(const ConfigFields&);
};

// Adding a family: one file under src/model/config/families/ (its parse function) and, here, its
// declaration and one row.
constexpr Family kFamilies[] = {
    {"LlamaForCausalLM", "llama", "llama", arch_llama},
    {"Qwen2ForCausalLM", "qwen2", "qwen2", arch_qwen2},
    {"Qwen3ForCausalLM", "qwen3", "qwen3", arch_qwen3},
    {"Qwen3MoeForCausalLM", "qwen3_moe", "qwen3_moe", arch_qwen3_moe},
    {"MixtralForCausalLM", "mixtral", "mixtral", arch_mixtral},
    {"DeepseekV3ForCausalLM", "deepseek_v3", "deepseek_v3", arch_deepseek_v3},
    {"DeepseekV3ForCausalLM", "kimi_k2", "deepseek_v3", arch_deepseek_v3},
    {"LlavaForConditionalGeneration", "llava", "llava", arch_llava},
    {"MistralForCausalLM", "mistral", "mistral", arch_mistral},
    {"Qwen2MoeForCausalLM", "qwen2_moe", "qwen2_moe", arch_qwen2_moe},
    {"Glm4MoeForCausalLM", "glm4_moe", "glm4_moe", arch_glm4_moe},
    {"Gemma3ForCausalLM", "gemma3_text", "gemma3_text", arch_gemma3_text},
    {"GptOssForCausalLM", "gpt_oss", "gpt_oss", arch_gpt_oss},
    {"Qwen3NextForCausalLM", "qwen3_next", "qwen3_next", arch_qwen3_next},
    {"Qwen3_5ForCausalLM", "qwen3_5_text", "qwen3_5_text", arch_qwen3_5_text},
    {"Qwen3_5MoeForCausalLM", "qwen3_5_moe_text", "qwen3_5_moe_text", arch_qwen3_5_moe_text},
    {"DeepseekV32ForCausalLM", "deepseek_v32", "deepseek_v32", arch_deepseek_v32},
    {"Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl", "qwen2_5_vl", arch_qwen2_5_vl},
    {"Glm4MoeLiteForCausalLM", "glm4_moe_lite", "glm4_moe_lite", arch_glm4_moe_lite},
    {"MiniMaxM2ForCausalLM", "minimax_m2", "minimax_m2", arch_minimax_m2},
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
    throw InputError(where + ": architectures",
                     "unknown architecture (" + got + "); known: " + known_architectures());
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
  return std::filesystem::is_directory(path)
             ? (std::filesystem::path(path) / "config.json").string()
             : path;
}

nlohmann::json read_config_file(const std::string& path) {
  const std::string file = config_path(path);
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    throw InputError(file,
                     "cannot open (a model directory with config.json, or a config.json file)");
  }
  return base::read_json_file(file);
}

Architecture load_architecture(const std::string& path) {
  return parse_architecture(read_config_file(path), config_path(path));
}

bool is_modelled(const nlohmann::json& config) {
  return config.is_object() && find_family(config) != nullptr;
}

TextModel::LayerKind TextModel::layer_kind(int64_t layer) const {
  if (layer < 0 || layer >= static_cast<int64_t>(layer_kinds.size())) return LayerKind::kFull;
  return layer_kinds[static_cast<size_t>(layer)];
}

}  // namespace h0::model
