// harness coverage [--platform P] [--model DIR] [--json]
// The op x dtype support table of a platform's backend: native, by decomposition, by the host
// reference, or missing. Given a model, the ops that model needs and how each would run.
#include <cstdio>
#include <fstream>
#include <set>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/executor.h"
#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "ops/op.h"
#include "suite/platform.h"

namespace h0::cli {
namespace {

struct CoverageOptions {
  std::string platform, model;
  bool json = false;
};

// The ops a model needs, read from its HF config.json: every decoder needs the same core; MoE
// and vision towers add theirs. (The models module refines this per architecture.)
std::set<std::string> ops_of_model(const nlohmann::json& config, std::string* dtype) {
  const nlohmann::json& text = config.contains("text_config") ? config["text_config"] : config;
  *dtype = text.value("torch_dtype", config.value("torch_dtype", std::string("bfloat16")));
  std::set<std::string> need = {"embedding", "rmsnorm", "linear", "rope", "attention", "paged_attention",
                                "swiglu", "add", "argmax", "sample"};
  for (const char* key : {"num_experts", "n_routed_experts", "num_local_experts"}) {
    if (text.contains(key) && text[key].is_number() && text[key].get<int64_t>() > 0) need.insert({"moe_gate", "moe_experts"});
  }
  if (config.contains("vision_config")) need.insert({"patch_embed", "layernorm", "gelu", "matmul", "softmax"});
  if (config.contains("quantization_config")) need.insert({"quantize", "dequantize"});
  return need;
}

std::string cell(const backend::Outcome& o) {
  switch (o.route) {
    case backend::Route::kNative: return "native";
    case backend::Route::kDecomposed: return "decomposed";
    case backend::Route::kHost: return "host";
    default: return "missing";
  }
}

int run_coverage(const CoverageOptions& opt) {
  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));
  auto be = backend::Backend::open({platform.backend, platform.lib, platform.options});
  const tensor::DType dtypes[] = {tensor::DType::kF32, tensor::DType::kBF16, tensor::DType::kF16, tensor::DType::kF64};

  std::set<std::string> needed;
  std::string model_dtype;
  if (!opt.model.empty()) {
    const std::string path = opt.model + "/config.json";
    std::ifstream in(path);
    if (!in) throw InputError(path, "cannot open");
    try {
      needed = ops_of_model(nlohmann::json::parse(in), &model_dtype);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path, std::string("not JSON: ") + e.what());
    }
  }
  const auto dtype_of_model = tensor::parse_dtype(model_dtype);

  nlohmann::json rows = nlohmann::json::array();
  for (const ops::OpDef* op : ops::all_ops()) {
    if (!needed.empty() && needed.count(op->name) == 0) continue;
    nlohmann::json row = {{"op", op->name}};
    for (tensor::DType d : dtypes) row[tensor::dtype_name(d)] = cell(backend::plan(*be, *op, d, backend::FallbackMode::kHost));
    if (dtype_of_model) row["model"] = cell(backend::plan(*be, *op, *dtype_of_model, backend::FallbackMode::kHost));
    rows.push_back(row);
  }
  if (opt.json) {
    std::printf("%s\n", nlohmann::json{{"backend", be->name()}, {"stack", be->stack_info()}, {"model", opt.model},
                                       {"model_dtype", model_dtype}, {"ops", rows}}.dump(2).c_str());
    return kExitOk;
  }
  std::printf("backend %s (%s)%s%s\n", be->name().c_str(), be->origin().c_str(),
              opt.model.empty() ? "" : ", ops needed by ", opt.model.c_str());
  std::printf("%-16s %-11s %-11s %-11s %-11s%s\n", "op", "f32", "bf16", "f16", "f64",
              dtype_of_model ? ("  model (" + std::string(tensor::dtype_name(*dtype_of_model)) + ")").c_str() : "");
  int missing = 0;
  for (const auto& r : rows) {
    auto show = [](const std::string& s) {
      return s == "native" ? colored(s, "32") + std::string(11 - s.size(), ' ')
             : s == "missing" ? colored(s, "31") + std::string(11 - s.size(), ' ')
                              : colored(s, "33") + std::string(11 - s.size(), ' ');
    };
    std::printf("%-16s %s %s %s %s", r["op"].get<std::string>().c_str(), show(r["f32"]).c_str(), show(r["bf16"]).c_str(),
                show(r["f16"]).c_str(), show(r["f64"]).c_str());
    if (r.contains("model")) {
      std::printf("  %s", show(r["model"]).c_str());
      missing += r["model"] == "missing";
    }
    std::printf("\n");
  }
  if (!needed.empty()) std::printf("%zu ops needed, %d missing\n", rows.size(), missing);
  return kExitOk;
}

}  // namespace

void register_coverage(CLI::App& app, Run* run) {
  auto opt = std::make_shared<CoverageOptions>();
  CLI::App* sub = app.add_subcommand("coverage", "Show which ops and dtypes a platform's backend covers");
  sub->add_option("--platform", opt->platform, "Platform config (default configs/platforms/cpu.yaml)");
  sub->add_option("--model", opt->model, "A model directory (config.json): show the ops it needs");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_coverage(*opt); }; });
}

}  // namespace h0::cli
