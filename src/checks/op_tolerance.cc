#include "checks/op_tolerance.h"

#include <cmath>

#include "base/error.h"

namespace h0::checks {

compare::Tolerance op_tolerance(const ops::OpDef& op, tensor::DType dtype, const ops::Cost& cost,
                                const nlohmann::json& user, double golden_rms) {
  compare::Tolerance tol;
  const std::string preset_name = user.value("preset", std::string("auto"));
  if (!tensor::is_float(dtype)) {
    // Integer results: exact; quantized codes may differ by one step at a rounding boundary.
    tol = *compare::preset("exact");
    if (dtype == tensor::DType::kI8) tol.element.atol = 1;
  } else if (preset_name != "auto") {
    auto p = compare::preset(preset_name);
    if (!p)
      throw InputError("tolerance", "unknown preset '" + preset_name + "' (expected " +
                                        compare::preset_names() + ")");
    tol = *p;
  } else {
    tol = *compare::preset(tensor::dtype_name(dtype));
    tol.preset = std::string(tensor::dtype_name(dtype)) + "/" + [&] {
      switch (op.tolerance) {
        case ops::ToleranceClass::kExact:
          return "exact";
        case ops::ToleranceClass::kElementwise:
          return "elementwise";
        case ops::ToleranceClass::kTranscendental:
          return "transcendental";
        default:
          return "reduction";
      }
    }();
    // An f32-accumulating backend drifts about sqrt(K) f32 ulps on a reduction of length K,
    // relative to the output's scale; transcendental functions cost a few ulps more.
    constexpr double kF32Ulp = 0x1p-24;
    if (op.tolerance == ops::ToleranceClass::kReduction) {
      const double drift = 8.0 * std::sqrt(std::max(1.0, cost.reduction)) * kF32Ulp;
      tol.element.rtol = std::max(tol.element.rtol, drift);
      tol.element.atol += drift * golden_rms;
    } else if (op.tolerance == ops::ToleranceClass::kTranscendental) {
      tol.element.rtol = std::max(tol.element.rtol, 16 * kF32Ulp);
      tol.element.atol += 16 * kF32Ulp * golden_rms;
    }
  }
  if (user.contains("rtol"))
    tol.element.rtol = user.at("rtol").get<double>(), tol.preset += "+rtol";
  if (user.contains("atol"))
    tol.element.atol = user.at("atol").get<double>(), tol.preset += "+atol";
  for (const auto& [key, value] : user.items()) {
    if (key == "preset" || key == "rtol" || key == "atol") continue;
    if (!value.is_number()) throw InputError("tolerance", "'" + key + "' must be a number");
    auto t = compare::parse_threshold(key, value.get<double>());
    if (!t)
      throw InputError("tolerance", "unknown key '" + key + "' (expected preset, rtol, atol or " +
                                        compare::threshold_keys() + ")");
    tol.thresholds.push_back(*t);
  }
  return tol;
}

}  // namespace h0::checks
