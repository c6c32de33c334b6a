#include "compare/tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace h0::compare {
namespace {

struct PresetRow {
  const char* name;
  double rtol;
  double atol;
  bool element;
};

// f64/f32/f16/bf16: torch.testing.assert_close defaults. f8 (no torch default): rtol = the
// format's epsilon (one step at 1.0), atol = its smallest subnormal.
constexpr PresetRow kPresets[] = {
    {"f64", 1e-7, 1e-7, true},
    {"f32", 1.3e-6, 1e-5, true},
    {"f16", 1e-3, 1e-5, true},
    {"bf16", 1.6e-2, 1e-5, true},
    {"f8_e4m3", 0x1p-3, 0x1p-9, true},
    {"f8_e5m2", 0x1p-2, 0x1p-16, true},
    {"exact", 0, 0, true},
    {"none", 0, 0, false},
};

// Metrics a threshold may bound. Later layers (model logits, e2e) add their metrics here.
struct MetricName {
  const char* key;     // as written before _min/_max
  const char* metric;  // stable name
};
constexpr MetricName kMetricNames[] = {
    {"max_abs_err", "max_abs_err"},
    {"max_abs", "max_abs_err"},
    {"max_rel_err", "max_rel_err"},
    {"max_rel", "max_rel_err"},
    {"mean_abs_err", "mean_abs_err"},
    {"mean_abs", "mean_abs_err"},
    {"rmse", "rmse"},
    {"cosine", "cosine"},
    {"ratio_rel_lt_1e-3", "ratio_rel_lt_1e-3"},
    {"ratio_rel_lt_5e-3", "ratio_rel_lt_5e-3"},
    {"max_ulp", "max_ulp"},
    {"nan_mismatch", "nan_mismatch"},
    {"inf_mismatch", "inf_mismatch"},
    {"mismatch_count", "mismatch_count"},
};

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::optional<Tolerance> preset(std::string_view name) {
  if (name == "auto") return Tolerance{"auto", {}, {}};  // resolved per dtype pair when comparing
  for (const auto& row : kPresets) {
    if (name == row.name) return Tolerance{row.name, {row.rtol, row.atol, row.element}, {}};
  }
  return std::nullopt;
}

std::string preset_names() {
  std::string out = "auto";
  for (const auto& row : kPresets) out += std::string(", ") + row.name;
  return out;
}

Tolerance auto_preset(tensor::DType actual, tensor::DType expected) {
  const tensor::DType coarser =
      tensor::info(actual).epsilon >= tensor::info(expected).epsilon ? actual : expected;
  auto p = preset(tensor::dtype_name(coarser));
  return p ? *p : *preset("exact");  // integer dtypes compare exactly
}

std::optional<Threshold> parse_threshold(std::string_view key, double value) {
  for (const char* suffix : {"_min", "_max"}) {
    const std::string_view s(suffix);
    if (key.size() <= s.size() || key.substr(key.size() - s.size()) != s) continue;
    const std::string_view stem = key.substr(0, key.size() - s.size());
    for (const auto& row : kMetricNames) {
      if (stem == row.key) return Threshold{std::string(key), row.metric, s == "_min", value};
    }
  }
  return std::nullopt;
}

std::string threshold_keys() {
  std::string out;
  for (const auto& row : kMetricNames) {
    if (!out.empty()) out += ", ";
    out += std::string(row.key) + "_min|_max";
  }
  return out;
}

std::optional<std::string> rounding_bias_failure(const Metrics& m) {
  if (m.bias_count < 2) return std::nullopt;
  const double n = static_cast<double>(m.bias_count);
  const auto bound = [&](double sd) {
    return std::max(kMinRoundingBias,
                    kBiasSigmas * std::max(sd, 1 / std::sqrt(12.0)) / std::sqrt(n));
  };
  const auto say = [&](double mean, double b, const char* way, const char* like) {
    return "rounding bias: the outputs lean " + format_number(std::fabs(mean)) + " ULP " + way +
           " on average over " + std::to_string(m.bias_count) + " elements (bound " +
           format_number(b) + " at this count), as " + like + " does";
  };
  // Toward or away from zero first: truncation cancels in the plain mean over mixed signs.
  if (const double b = bound(m.magnitude_bias_sd_ulp); std::fabs(m.magnitude_bias_ulp) > b) {
    return m.magnitude_bias_ulp < 0 ? say(m.magnitude_bias_ulp, b, "toward zero", "truncation")
                                    : say(m.magnitude_bias_ulp, b, "away from zero",
                                          "rounding half away or up in magnitude");
  }
  if (const double b = bound(m.bias_sd_ulp); std::fabs(m.bias_ulp) > b) {
    return m.bias_ulp < 0 ? say(m.bias_ulp, b, "downward", "rounding toward -inf")
                          : say(m.bias_ulp, b, "upward", "rounding toward +inf");
  }
  return std::nullopt;
}

Verdict evaluate(const Metrics& m, const Tolerance& tolerance) {
  Verdict v;
  if (tolerance.element.enabled && m.mismatch_count > 0) {
    std::string why = std::to_string(m.mismatch_count) + " of " + std::to_string(m.count) +
                      " elements outside |a-e| <= atol + rtol*|e| (preset " + tolerance.preset +
                      ": rtol " + format_number(tolerance.element.rtol) + ", atol " +
                      format_number(tolerance.element.atol) + ")";
    if (m.worst_excess_index >= 0) {
      why += "; worst at index " + std::to_string(m.worst_excess_index);
    }
    if (m.nan_mismatch > 0) why += "; " + std::to_string(m.nan_mismatch) + " NaN mismatches";
    if (m.inf_mismatch > 0) why += "; " + std::to_string(m.inf_mismatch) + " Inf mismatches";
    v.failures.push_back(why);
  } else if (!tolerance.element.enabled && m.nan_mismatch + m.inf_mismatch > 0) {
    v.failures.push_back(std::to_string(m.nan_mismatch) + " NaN and " +
                         std::to_string(m.inf_mismatch) + " Inf mismatches");
  }
  const auto values = metric_values(m);
  for (const auto& t : tolerance.thresholds) {
    const std::pair<std::string, double>* found = nullptr;
    for (const auto& kv : values) {
      if (kv.first == t.metric) found = &kv;
    }
    if (found == nullptr) {
      v.failures.push_back(t.key + ": metric " + t.metric + " was not computed");
      continue;
    }
    const bool ok = t.is_min ? found->second >= t.value : found->second <= t.value;
    if (!ok) {
      v.failures.push_back(t.metric + " " + format_number(found->second) +
                           (t.is_min ? " < " : " > ") + t.key + " " + format_number(t.value));
    }
  }
  if (tolerance.rounding_bias) {
    if (auto why = rounding_bias_failure(m)) v.failures.push_back(*why);
  }
  v.pass = v.failures.empty();
  return v;
}

}  // namespace h0::compare
