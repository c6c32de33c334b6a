// The tolerance policy: an element-wise bound |a - e| <= atol + rtol |e| from a per-dtype
// preset (PyTorch assert_close's defaults as the starting point), plus optional bounds on any
// metric by name: `cosine_min: 0.9999`, `max_abs_max: 0.05`, `max_ulp_max: 2`, ...
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compare/metrics.h"
#include "tensor/dtype.h"

namespace h0::compare {

// A bound on one metric.
struct Threshold {
  std::string key;      // as written: "cosine_min", "max_abs_max"
  std::string metric;   // the stable metric name: "cosine", "max_abs_err"
  bool is_min = false;  // true: metric >= value; false: metric <= value
  double value = 0;
};

struct Tolerance {
  std::string preset;  // "auto", "f64", "f32", "f16", "bf16", "f8_e4m3", "f8_e5m2", "exact", "none"
  ElementTolerance element;
  std::vector<Threshold> thresholds;
  // Fail on a systematic rounding bias (rounding_bias_failure). compare_tensors keeps it on only
  // for an output dtype of 10 mantissa bits or fewer (f16, bf16, f8), where the rounding mode is
  // the kernel's choice and one ULP is large.
  bool rounding_bias = true;
};

// A named preset; nullopt if unknown. "exact": rtol = atol = 0; "none": no element-wise check;
// "auto": resolved by compare_tensors to the preset of the less precise dtype.
std::optional<Tolerance> preset(std::string_view name);
// "f64, f32, ..." for error messages.
std::string preset_names();
// The preset of the less precise of the two dtypes (what `auto` means).
Tolerance auto_preset(tensor::DType actual, tensor::DType expected);

// Parses "<metric>_min" / "<metric>_max" (metric names of metric_values, or the short forms
// max_abs, max_rel, mean_abs). nullopt if the key names no known metric.
std::optional<Threshold> parse_threshold(std::string_view key, double value);
// The accepted threshold keys, for error messages.
std::string threshold_keys();

struct Verdict {
  bool pass = true;
  std::vector<std::string> failures;  // e.g. "cosine 0.99120 < cosine_min 0.9999"
};

// Applies the element-wise bound (no position outside it), every threshold, and with
// tolerance.rounding_bias the bias rule.
Verdict evaluate(const Metrics& m, const Tolerance& tolerance);

// The bias rule: a mean signed error (bias_ulp or magnitude_bias_ulp, metrics.h) is a
// systematic bias when |mean| >= kMinRoundingBias ULP and it exceeds kBiasSigmas standard errors,
// the standard deviation taken as the sample's but never below round-to-nearest's own, 1/sqrt(12)
// ULP: so the bound falls with the element count (to 0.25 ULP from 34 elements at that SD), and
// a few elements cannot flag anything. Truncation's bias is about 1/2 ULP. The failure says which
// way the outputs lean; nullopt when they do not.
constexpr double kMinRoundingBias = 0.25;
constexpr double kBiasSigmas = 5;
std::optional<std::string> rounding_bias_failure(const Metrics& m);

}  // namespace h0::compare
