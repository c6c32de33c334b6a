// The rounding-bias statistics of the one-pass metrics against numpy
// (golden/tools/gen_bias_stats.py -> golden/compare/bias_statistics.json), and the bias rule on
// them: truncation, rounding upward and rounding half away are flagged and named; round to
// nearest even is not, nor is a handful of elements.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "compare/metrics.h"
#include "compare/tensor_compare.h"
#include "compare/tolerance.h"
#include "tensor/convert.h"
#include "test_util.h"

namespace h0::compare {
namespace {

using tensor::DType;
using tensor::Tensor;

// `values` (float64, each exactly representable in `dtype`) as a tensor of that dtype.
Tensor tensor_of(DType dtype, const std::vector<double>& values) {
  Tensor t = Tensor::empty(dtype, {static_cast<int64_t>(values.size())});
  tensor::convert(values.data(), DType::kF64, t.mutable_data(), dtype, values.size());
  return t;
}

std::vector<double> values_of(const nlohmann::json& j) {
  std::vector<double> out;
  for (const auto& v : j) {  // JSON's stand-ins: "nan", "inf", "-inf"
    const double inf = std::numeric_limits<double>::infinity();
    out.push_back(v.is_number() ? v.get<double>()
                  : v == "inf"  ? inf
                  : v == "-inf" ? -inf
                                : std::nan(""));
  }
  return out;
}

nlohmann::json golden_cases() {
  std::ifstream in(test::golden_path("compare/bias_statistics.json"));
  return nlohmann::json::parse(in)["cases"];
}

Metrics metrics_of(const nlohmann::json& c) {
  const DType dtype = *tensor::parse_dtype(c["dtype"].get<std::string>());
  const std::vector<double> actual = values_of(c["actual"]), expected = values_of(c["expected"]);
  const Tensor a = tensor_of(dtype, actual);
  for (size_t i = 0; i < actual.size(); ++i) {  // the golden's actual values are the dtype's
    const double back = a.at(static_cast<int64_t>(i));
    if (!std::isnan(actual[i])) {
      EXPECT_EQ(back, actual[i]) << "element " << i;
    }
  }
  return compute_metrics(a, tensor_of(DType::kF64, expected), ElementTolerance{}, true);
}

TEST(BiasStatistics, MatchNumpy) {
  const nlohmann::json cases = golden_cases();
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const Metrics m = metrics_of(c);
    EXPECT_EQ(m.bias_count, c["bias_count"].get<int64_t>());
    EXPECT_NEAR(m.bias_ulp, c["bias_ulp"].get<double>(), 1e-12);
    EXPECT_NEAR(m.magnitude_bias_ulp, c["magnitude_bias_ulp"].get<double>(), 1e-12);
    EXPECT_NEAR(m.bias_rel, c["bias_rel"].get<double>(), 1e-12);
    EXPECT_NEAR(m.bias_sd_ulp, c["bias_sd_ulp"].get<double>(), 1e-12);
    EXPECT_NEAR(m.magnitude_bias_sd_ulp, c["magnitude_bias_sd_ulp"].get<double>(), 1e-12);
  }
}

// What the rule says of each golden case: the way it leans, or nothing.
TEST(BiasStatistics, TheRuleNamesTheRoundingThatLeans) {
  const std::map<std::string, std::string> expected = {
      {"bf16 nearest_even vs exact", ""},
      {"bf16 toward_zero vs exact", "toward zero"},
      {"bf16 toward_zero vs bf16 golden", "toward zero"},
      {"bf16 half_away at ties", "away from zero"},
      {"bf16 nearest_even at ties", ""},
      {"f16 nearest_even vs exact", ""},
      {"f16 toward_zero vs exact", "toward zero"},
      {"f16 upward vs exact", "upward"},
      {"bf16 with an outlier, a zero, NaN and Inf", ""},
      {"f8_e4m3 subnormals one ULP up", "away from zero"},  // 8 of 8, each a whole ULP
  };
  for (const auto& c : golden_cases()) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    ASSERT_TRUE(expected.count(name));
    const std::optional<std::string> why = rounding_bias_failure(metrics_of(c));
    if (expected.at(name).empty()) {
      EXPECT_FALSE(why.has_value()) << *why;
    } else {
      ASSERT_TRUE(why.has_value());
      EXPECT_NE(why->find("lean"), std::string::npos) << *why;
      EXPECT_NE(why->find(expected.at(name)), std::string::npos) << *why;
    }
  }
}

// A few elements cannot make a bias: 3 of them half an ULP toward zero stay under the bound.
TEST(BiasStatistics, AFewElementsAreNoBias) {
  Metrics m;
  m.bias_count = 3;
  m.magnitude_bias_ulp = -0.5;
  EXPECT_FALSE(rounding_bias_failure(m).has_value());
  m.bias_count = 256;
  EXPECT_TRUE(rounding_bias_failure(m).has_value());
}

// Truncated bf16 outputs, every element well inside the bf16 tolerance: only the bias rule fails
// them, and only where the output dtype is 16 bits or narrower.
TEST(BiasStatistics, CompareTensorsFailsTruncationInsideTolerance) {
  for (const auto& c : golden_cases()) {
    if (c["name"] != "bf16 toward_zero vs bf16 golden") continue;
    const Tensor a = tensor_of(DType::kBF16, values_of(c["actual"]));
    const Tensor e = tensor_of(DType::kBF16, values_of(c["expected"]));
    Comparison r = compare_tensors(a, e, *preset("auto"));
    EXPECT_EQ(r.metrics.mismatch_count, 0);
    ASSERT_FALSE(r.pass);
    ASSERT_EQ(r.failures.size(), 1u);
    EXPECT_NE(r.failures[0].find("toward zero"), std::string::npos) << r.failures[0];
    EXPECT_NE(r.failures[0].find("truncation"), std::string::npos) << r.failures[0];
    Tolerance off = *preset("auto");
    off.rounding_bias = false;
    EXPECT_TRUE(compare_tensors(a, e, off).pass);
    // f32 outputs: no rule, and no statistic (computed for outputs of 16 bits or fewer).
    const Tensor a32 = tensor_of(DType::kF32, values_of(c["actual"]));
    const Comparison c32 = compare_tensors(a32, e, *preset("auto"));
    EXPECT_FALSE(c32.tolerance.rounding_bias);
    EXPECT_EQ(c32.metrics.bias_count, 0);
    return;
  }
  FAIL() << "the golden case is missing";
}

}  // namespace
}  // namespace h0::compare
