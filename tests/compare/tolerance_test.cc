#include "compare/tolerance.h"

#include <gtest/gtest.h>

namespace h0::compare {
namespace {

using tensor::DType;

TEST(Tolerance, PresetsFollowAssertClose) {
  EXPECT_EQ(preset("f32")->element.rtol, 1.3e-6);
  EXPECT_EQ(preset("f32")->element.atol, 1e-5);
  EXPECT_EQ(preset("bf16")->element.rtol, 1.6e-2);
  EXPECT_EQ(preset("f16")->element.rtol, 1e-3);
  EXPECT_EQ(preset("f64")->element.atol, 1e-7);
  EXPECT_FALSE(preset("none")->element.enabled);
  EXPECT_FALSE(preset("fp32").has_value());
}

TEST(Tolerance, AutoTakesTheLessPreciseDtype) {
  EXPECT_EQ(auto_preset(DType::kBF16, DType::kF32).preset, "bf16");
  EXPECT_EQ(auto_preset(DType::kF32, DType::kF16).preset, "f16");
  EXPECT_EQ(auto_preset(DType::kF8E4M3, DType::kF64).preset, "f8_e4m3");
  EXPECT_EQ(auto_preset(DType::kI32, DType::kI32).preset, "exact");
}

TEST(Tolerance, ThresholdKeys) {
  auto t = parse_threshold("cosine_min", 0.9999);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->metric, "cosine");
  EXPECT_TRUE(t->is_min);
  EXPECT_EQ(parse_threshold("max_abs_max", 1)->metric, "max_abs_err");
  EXPECT_EQ(parse_threshold("max_rel_err_max", 1)->metric, "max_rel_err");
  EXPECT_EQ(parse_threshold("ratio_rel_lt_1e-3_min", 1)->metric, "ratio_rel_lt_1e-3");
  EXPECT_FALSE(parse_threshold("cosine", 1));
  EXPECT_FALSE(parse_threshold("cosin_min", 1));
  EXPECT_FALSE(parse_threshold("_min", 1));
}

TEST(Tolerance, EvaluateExplainsEveryFailure) {
  Metrics m;
  m.count = 100;
  m.cosine = 0.99;
  m.max_abs_err = 0.5;
  m.mismatch_count = 3;
  m.worst_excess_index = 42;
  Tolerance tol = *preset("bf16");
  tol.thresholds = {*parse_threshold("cosine_min", 0.999), *parse_threshold("max_abs_max", 1.0)};
  const Verdict v = evaluate(m, tol);
  EXPECT_FALSE(v.pass);
  ASSERT_EQ(v.failures.size(), 2u);
  EXPECT_EQ(
      v.failures[0],
      "3 of 100 elements outside |a-e| <= atol + rtol*|e| (preset bf16: rtol 0.016, atol 1e-05); "
      "worst at index 42");
  EXPECT_EQ(v.failures[1], "cosine 0.99 < cosine_min 0.999");

  m.mismatch_count = 0;
  m.cosine = 0.9995;
  EXPECT_TRUE(evaluate(m, tol).pass);
}

TEST(Tolerance, AThresholdOnAMetricThatWasNotComputedFails) {
  Metrics m;  // same-dtype ULP not computed
  Tolerance tol = *preset("none");
  tol.thresholds = {*parse_threshold("max_ulp_max", 2)};
  const Verdict v = evaluate(m, tol);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.failures[0], "max_ulp_max: metric max_ulp was not computed");
}

TEST(Tolerance, NoElementCheckStillFailsNanMismatches) {
  Metrics m;
  m.nan_mismatch = 1;
  EXPECT_FALSE(evaluate(m, *preset("none")).pass);
}

}  // namespace
}  // namespace h0::compare
