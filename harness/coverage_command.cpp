// harness coverage [--platform P] [--model DIR] [--json]
// The op x dtype support table of a platform's backend: native, by decomposition, by the host
// reference, or missing. Given a model, the ops that model needs and how each would run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "checks/coverage.h"
#include "cli_output.h"
#include "commands.h"
#include "model/config/architecture.h"
#include "ops/op.h"
#include "suite/platform.h"

namespace h0::cli {
namespace {

struct CoverageOptions {
  std::string platform, model;
  bool json = false;
};

int run_coverage(const CoverageOptions& opt) {
  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));
  auto be = backend::Backend::open({platform.backend, platform.lib, platform.options});
  std::vector<tensor::DType> dtypes = {tensor::DType::kF32, tensor::DType::kBF16,
                                       tensor::DType::kF16, tensor::DType::kF64};
  std::set<std::string> needed;
  std::string model_dtype;
  if (!opt.model.empty()) {
    const model::Architecture arch = model::load_any_architecture(opt.model);
    if (!arch.modelled) {
      std::fprintf(stderr,
                   "family %s is not modelled by the executor: which ops it runs is not known "
                   "here; the whole "
                   "catalogue follows\n",
                   arch.family.c_str());
    } else {
      needed = checks::ops_of_model(arch);
      model_dtype = arch.text.dtype ? tensor::dtype_name(*arch.text.dtype) : "bf16";
    }
  }
  const auto rows = checks::coverage(*be, dtypes, needed);
  const auto model_d = tensor::parse_dtype(model_dtype);

  if (opt.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json row = {{"op", r.op}};
      for (const auto& [d, o] : r.routes) row[tensor::dtype_name(d)] = checks::coverage_word(o);
      if (model_d)
        row["model"] = checks::coverage_word(
            backend::plan(*be, ops::require_op(r.op), *model_d, backend::FallbackMode::kHost));
      list.push_back(row);
    }
    std::printf("%s\n", nlohmann::json{{"backend", be->name()},
                                       {"stack", be->stack_info()},
                                       {"model", opt.model},
                                       {"model_dtype", model_dtype},
                                       {"ops", list}}
                            .dump(2)
                            .c_str());
    return kExitOk;
  }
  auto show = [](const std::string& s) {
    const char* color = s == "native" ? "32" : s == "missing" ? "31" : "33";
    return colored(s, color) + std::string(11 - s.size(), ' ');
  };
  std::printf("backend %s (%s)%s%s\n", be->name().c_str(), be->origin().c_str(),
              opt.model.empty() ? "" : ", ops needed by ", opt.model.c_str());
  std::printf("%-16s %-11s %-11s %-11s %-11s%s\n", "op", "f32", "bf16", "f16", "f64",
              model_d ? ("  model (" + model_dtype + ")").c_str() : "");
  int missing = 0;
  for (const auto& r : rows) {
    std::printf("%-16s", r.op.c_str());
    for (const auto& [d, o] : r.routes) std::printf(" %s", show(checks::coverage_word(o)).c_str());
    if (model_d) {
      const std::string word = checks::coverage_word(
          backend::plan(*be, ops::require_op(r.op), *model_d, backend::FallbackMode::kHost));
      std::printf("  %s", show(word).c_str());
      missing += word == "missing";
    }
    std::printf("\n");
  }
  if (!needed.empty()) std::printf("%zu ops needed, %d missing\n", rows.size(), missing);
  return kExitOk;
}

}  // namespace

void register_coverage(CLI::App& app, Run* run) {
  auto opt = std::make_shared<CoverageOptions>();
  CLI::App* sub =
      app.add_subcommand("coverage", "Show which ops and dtypes a platform's backend covers");
  sub->add_option("--platform", opt->platform,
                  "Platform config (default configs/platforms/cpu.yaml)");
  sub->add_option("--model", opt->model, "A model directory (config.json): show the ops it needs");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_coverage(*opt); }; });
}

}  // namespace h0::cli
