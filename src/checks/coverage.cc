#include "checks/coverage.h"

#include <fstream>

#include "base/error.h"
#include "ops/op.h"

namespace h0::checks {

std::set<std::string> ops_of_model(const nlohmann::json& config, std::string* dtype) {
  const nlohmann::json& text = config.contains("text_config") ? config["text_config"] : config;
  const std::string torch_dtype = text.value("torch_dtype", config.value("torch_dtype", std::string()));
  const auto parsed = tensor::parse_dtype(torch_dtype);
  *dtype = parsed ? tensor::dtype_name(*parsed) : "";
  std::set<std::string> need = {"embedding", "rmsnorm", "linear", "rope", "attention", "paged_attention",
                                "swiglu", "add", "argmax", "sample"};
  for (const char* key : {"num_experts", "n_routed_experts", "num_local_experts"}) {
    if (text.contains(key) && text[key].is_number() && text[key].get<int64_t>() > 0) need.insert({"moe_gate", "moe_experts"});
  }
  if (config.contains("vision_config")) need.insert({"patch_embed", "layernorm", "gelu", "matmul", "softmax"});
  // fp8 block-quantized checkpoints run their projections through scaled_linear.
  const nlohmann::json& quant = config.contains("quantization_config") ? config["quantization_config"] : text.value("quantization_config", nlohmann::json());
  if (quant.is_object() && quant.value("quant_method", std::string()) == "fp8") need.insert("scaled_linear");
  return need;
}

nlohmann::json read_model_config(const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, std::string("not JSON: ") + e.what());
  }
}

std::vector<CoverageRow> coverage(const backend::Backend& backend, const std::vector<tensor::DType>& dtypes,
                                  const std::set<std::string>& only) {
  std::vector<CoverageRow> rows;
  for (const ops::OpDef* op : ops::all_ops()) {
    if (!only.empty() && only.count(op->name) == 0) continue;
    CoverageRow row{op->name, {}};
    for (tensor::DType d : dtypes) row.routes.emplace_back(d, backend::plan(backend, *op, d, backend::FallbackMode::kHost));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string coverage_word(const backend::Outcome& o) {
  switch (o.route) {
    case backend::Route::kNative: return "native";
    case backend::Route::kDecomposed: return "decomposed";
    case backend::Route::kHost: return "host";
    default: return "missing";
  }
}

}  // namespace h0::checks
