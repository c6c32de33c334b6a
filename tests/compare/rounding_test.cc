// The rounding probes: exact, representable in their dtype, and telling every rounding apart;
// round to nearest even agrees with the harness's own casts (PyTorch's, tensor/convert.h, checked
// against PyTorch's goldens elsewhere); outputs made by each rounding are named as that rounding.
#include "compare/rounding.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tensor/convert.h"

namespace h0::compare {
namespace {

using tensor::DType;

double cast(double v, DType d) {  // f64 -> d -> f64 by the harness's conversion (RNE)
  uint64_t buf = 0;
  tensor::convert(&v, DType::kF64, &buf, d, 1);
  double back = 0;
  tensor::convert(&buf, d, &back, DType::kF64, 1);
  return back;
}

const Rounding kAll[] = {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kHalfAway,
                         Rounding::kUpward, Rounding::kDownward};

TEST(Rounding, RoundAsKnowsTheBf16Neighbours) {
  const double u = std::ldexp(1.0, -7), tie = 1 + 2 * u + u / 2;
  EXPECT_EQ(round_as(tie, DType::kBF16, Rounding::kNearestEven, false), 1 + 2 * u);
  EXPECT_EQ(round_as(tie, DType::kBF16, Rounding::kHalfAway, false), 1 + 3 * u);
  EXPECT_EQ(round_as(tie, DType::kBF16, Rounding::kTowardZero, false), 1 + 2 * u);
  EXPECT_EQ(round_as(-tie, DType::kBF16, Rounding::kTowardZero, false), -(1 + 2 * u));
  EXPECT_EQ(round_as(-tie, DType::kBF16, Rounding::kDownward, false), -(1 + 3 * u));
  EXPECT_EQ(round_as(1 + u / 4, DType::kBF16, Rounding::kUpward, false), 1 + u);
  const double sub = std::ldexp(1.0, -127);  // bf16 subnormal
  EXPECT_EQ(round_as(sub, DType::kBF16, Rounding::kNearestEven, false), sub);
  EXPECT_EQ(round_as(sub, DType::kBF16, Rounding::kNearestEven, true), 0.0);
}

TEST(Rounding, ProbesAreExactRepresentableAndTellEveryRoundingApart) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const char* op : {"add", "mul"}) {
      SCOPED_TRACE(std::string(op) + " " + tensor::dtype_name(d));
      const auto probes = rounding_probes(op, d);
      ASSERT_GE(probes.size(), 8u);
      for (const auto& p : probes) {
        EXPECT_EQ(cast(p.x, d), p.x) << p.what;
        EXPECT_EQ(cast(p.y, d), p.y) << p.what;
        EXPECT_EQ(p.exact, std::string(op) == "add" ? p.x + p.y : p.x * p.y) << p.what;
        // The harness's own cast is round to nearest even.
        EXPECT_EQ(cast(p.exact, d), round_as(p.exact, d, Rounding::kNearestEven, false)) << p.what;
      }
      // Outputs made by each rounding, with and without flushing, are named as exactly that.
      for (bool flush : {false, true}) {
        for (Rounding r : kAll) {
          std::vector<double> out;
          for (const auto& p : probes) out.push_back(round_as(p.exact, d, r, flush));
          const RoundingVerdict v = classify_rounding(probes, out, d);
          ASSERT_TRUE(v.matched.has_value()) << rounding_name(r);
          EXPECT_EQ(*v.matched, r) << rounding_name(r) << ": " << v.summary;
          EXPECT_EQ(v.flushes_subnormals, flush) << v.summary;
          EXPECT_EQ(v.nearest_even, r == Rounding::kNearestEven && !flush);
        }
      }
    }
  }
}

TEST(Rounding, WhatNoRoundingExplainsIsShownWithItsProbe) {
  const auto probes = rounding_probes("add", DType::kBF16);
  std::vector<double> out;
  for (const auto& p : probes)
    out.push_back(round_as(p.exact, DType::kBF16, Rounding::kNearestEven, false));
  out[2] = 7.0;  // nothing rounds there
  RoundingVerdict v = classify_rounding(probes, out, DType::kBF16);
  EXPECT_FALSE(v.matched.has_value());
  EXPECT_EQ(v.first_unexplained, 2);
  EXPECT_NE(v.summary.find("no rounding explains"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find(probes[2].what), std::string::npos) << v.summary;
  // One probe truncated, the rest to nearest even: each is some rounding's, no one's all.
  out[2] = round_as(probes[2].exact, DType::kBF16, Rounding::kNearestEven, false);
  out[6] = round_as(probes[6].exact, DType::kBF16, Rounding::kUpward, false);  // below a tie
  v = classify_rounding(probes, out, DType::kBF16);
  EXPECT_FALSE(v.matched.has_value());
  EXPECT_NE(v.summary.find("mix"), std::string::npos) << v.summary;
  EXPECT_EQ(rounding_description(Rounding::kTowardZero, false), "rounds toward zero (truncation)");
}

}  // namespace
}  // namespace h0::compare
