#include "checks/rounding_check.h"

#include <chrono>

#include "backend/backend.h"
#include "backend/fallback.h"
#include "base/error.h"
#include "compare/rounding.h"
#include "ops/op.h"
#include "suite/platform.h"
#include "tensor/convert.h"
#include "tensor/tensor.h"

namespace h0::checks {
namespace {

using tensor::DType;
using tensor::Tensor;

class RoundingCase : public PreparedCase {
 public:
  RoundingCase(const ops::OpDef& op, DType dtype, backend::FallbackMode fallback)
      : op_(op),
        dtype_(dtype),
        fallback_(fallback),
        probes_(compare::rounding_probes(op.name, dtype)) {}

  CheckResult run(RunContext& ctx) override {
    const auto t0 = std::chrono::steady_clock::now();
    CheckResult r;
    backend::Backend& be = ctx.backend();
    const int64_t n = static_cast<int64_t>(probes_.size());
    std::vector<double> x, y;
    for (const auto& p : probes_) x.push_back(p.x), y.push_back(p.y);
    const Tensor tx = of_values(x), ty = of_values(y);
    backend::DeviceTensor dx = be.upload(tx), dy = be.upload(ty);
    backend::DeviceTensor out = be.allocate(dtype_, {n});
    const backend::Outcome route =
        backend::execute(be, op_, {&dx, &dy}, {&out}, ops::Json::object(), fallback_);
    r.details["route"] = backend::route_name(route.route);
    if (route.route == backend::Route::kUnsupported) {
      r.status = Status::kSkip;
      r.message = std::string(op_.name) + " in " + tensor::dtype_name(dtype_) +
                  " is not supported here: " + route.detail;
      return r;
    }
    be.synchronize();
    const Tensor got = be.download(out);
    std::vector<double> outputs;
    nlohmann::json probes = nlohmann::json::array();
    for (int64_t i = 0; i < n; ++i) {
      outputs.push_back(got.at(i));
      const compare::RoundingProbe& p = probes_[i];
      probes.push_back({{"what", p.what},
                        {"x", p.x},
                        {"y", p.y},
                        {"exact", p.exact},
                        {"nearest_even", compare::round_as(p.exact, dtype_,
                                                           compare::Rounding::kNearestEven, false)},
                        {"output", outputs.back()}});
    }
    const compare::RoundingVerdict v = compare::classify_rounding(probes_, outputs, dtype_);
    r.details["probes"] = probes;
    r.details["rounding"] =
        v.matched ? compare::rounding_name(*v.matched) : std::string("unexplained");
    r.details["flushes_subnormals"] = v.flushes_subnormals;
    r.metrics.emplace_back("probes", static_cast<double>(n));
    r.status = v.nearest_even ? Status::kPass : Status::kFail;
    r.message = std::string(op_.name) + " in " + tensor::dtype_name(dtype_) + " " + v.summary;
    r.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

  nlohmann::json describe() const override {
    return {{"kind", "rounding"}, {"op", op_.name}, {"dtype", tensor::dtype_name(dtype_)}};
  }

 private:
  Tensor of_values(const std::vector<double>& v) const {
    Tensor t = Tensor::empty(dtype_, {static_cast<int64_t>(v.size())});
    tensor::convert(v.data(), DType::kF64, t.mutable_data(), dtype_, v.size());  // exact: chosen so
    return t;
  }

  const ops::OpDef& op_;
  DType dtype_;
  backend::FallbackMode fallback_;
  std::vector<compare::RoundingProbe> probes_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform& platform) {
  const YAML::Node op_node = case_field(c, "op");
  const std::string op_name = as_string(c, op_node, "op");
  if (op_name != "add" && op_name != "mul") fail(c, op_node, "op must be add or mul");
  const YAML::Node dtype_node = case_field(c, "dtype");
  const std::string dtype_name = as_string(c, dtype_node, "dtype");
  const std::optional<DType> dtype = tensor::parse_dtype(dtype_name);
  if (!dtype || compare::rounding_probes(op_name, *dtype).empty())
    fail(c, dtype_node, "dtype must be f32, bf16 or f16, got '" + dtype_name + "'");
  backend::FallbackMode fallback = backend::FallbackMode::kDecompose;
  if (!platform.fallback.empty()) backend::parse_fallback(platform.fallback, &fallback);
  return std::make_unique<RoundingCase>(*ops::find_op(op_name), *dtype, fallback);
}

}  // namespace

CheckKind rounding_check_kind() { return {"rounding", {"op", "dtype"}, &prepare}; }

}  // namespace h0::checks
