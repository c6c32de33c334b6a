#include "checks/coverage.h"

#include "base/error.h"
#include "model/exec/model_ops.h"
#include "ops/op.h"

namespace h0::checks {

std::set<std::string> ops_of_model(const model::Architecture& arch) {
  std::set<std::string> ops =
      model::model_ops(arch, arch.text.dtype.value_or(tensor::DType::kBF16)).names();
  // An MXFP4 checkpoint's experts (GPT-OSS as released): the harness dequantizes them on load (the
  // reference), the platform's engine runs that format: its kernel is checked too.
  if (arch.quantization.method == "mxfp4") ops.insert("dequantize_mxfp4");
  return ops;
}

std::vector<CoverageRow> coverage(const backend::Backend& backend,
                                  const std::vector<tensor::DType>& dtypes,
                                  const std::set<std::string>& only) {
  std::vector<CoverageRow> rows;
  for (const ops::OpDef* op : ops::all_ops()) {
    if (!only.empty() && only.count(op->name) == 0) continue;
    CoverageRow row{op->name, {}};
    for (tensor::DType d : dtypes)
      row.routes.emplace_back(d, backend::plan(backend, *op, d, backend::FallbackMode::kHost));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string coverage_word(const backend::Outcome& o) {
  switch (o.route) {
    case backend::Route::kNative:
      return "native";
    case backend::Route::kDecomposed:
      return "decomposed";
    case backend::Route::kHost:
      return "host";
    default:
      return "missing";
  }
}

}  // namespace h0::checks
