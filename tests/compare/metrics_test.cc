// Metrics against values numpy computed (golden/foundation/compare_metrics.json), plus the
// large-input path against a plain loop written here.
#include "compare/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "compare/metrics_kernel.h"
#include "compare/tensor_compare.h"
#include "compare/tolerance.h"
#include "io/safetensors_reader.h"
#include "tensor/philox.h"
#include "test_util.h"

namespace h0::compare {
namespace {

using tensor::DType;
using tensor::Tensor;

void expect_close(double got, double want, const std::string& what) {
  if (want == 0) {
    EXPECT_EQ(got, 0.0) << what;
  } else {
    EXPECT_NEAR(got, want, 1e-9 * std::fabs(want)) << what;
  }
}

TEST(Metrics, MatchNumpyOnEveryGoldenCase) {
  std::ifstream in(test::golden_path("foundation/compare_metrics.json"));
  const auto cases = nlohmann::json::parse(in);
  const auto pairs =
      io::SafetensorsFile::open(test::golden_path("foundation/compare_pairs.safetensors"));
  ASSERT_GE(cases.size(), 10u);
  for (const auto& [name, want] : cases.items()) {
    SCOPED_TRACE(name);
    const Tensor a = pairs.get(name + ".actual"), e = pairs.get(name + ".expected");
    const auto tol = preset(want["preset"].get<std::string>());
    ASSERT_TRUE(tol.has_value());
    const Metrics m = compute_metrics(a, e, tol->element);
    EXPECT_EQ(m.count, want["count"].get<int64_t>());
    for (const auto& [metric, value] : metric_values(m)) {
      // max_ulp below; the rounding bias has its own golden (bias_statistics_test.cc).
      if (metric == "max_ulp" || metric.find("bias") != std::string::npos) continue;
      expect_close(value, want[metric].get<double>(), metric);
    }
    if (want["max_ulp"].is_null()) {
      EXPECT_FALSE(m.max_ulp.has_value());
    } else {
      ASSERT_TRUE(m.max_ulp.has_value());
      EXPECT_EQ(*m.max_ulp, want["max_ulp"].get<uint64_t>());
    }
    EXPECT_EQ(m.nan_actual, want["nan_actual"].get<int64_t>());
    EXPECT_EQ(m.nan_expected, want["nan_expected"].get<int64_t>());
    EXPECT_EQ(m.inf_actual, want["inf_actual"].get<int64_t>());
    EXPECT_EQ(m.inf_expected, want["inf_expected"].get<int64_t>());
    EXPECT_EQ(m.worst_index, want["worst_index"].get<int64_t>());
  }
}

// A plain, obviously right reference for the large-input test.
struct Plain {
  double max_abs = 0, sum_abs = 0, sum_sq = 0, dot = 0, na = 0, ne = 0, max_rel = 0;
  int64_t worst = -1;
};
Plain plain_metrics(const std::vector<float>& a, const std::vector<float>& e) {
  Plain p;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(e[i]));
    if (d > p.max_abs || p.worst < 0) p.max_abs = d, p.worst = static_cast<int64_t>(i);
    p.sum_abs += d;
    p.sum_sq += d * d;
    p.dot += double(a[i]) * e[i];
    p.na += double(a[i]) * a[i];
    p.ne += double(e[i]) * e[i];
    p.max_rel = std::max(p.max_rel, e[i] != 0 ? d / std::fabs(double(e[i])) : d / 0x1p-23);
  }
  return p;
}

TEST(Metrics, LargeInputAcrossChunksMatchesAPlainLoopAndIsDeterministic) {
  const size_t n = 3'000'017;  // several parallel chunks and a ragged tail
  std::vector<float> e(n), a(n), noise(n);
  tensor::Philox(5, 0).fill_normal(e.data(), n);
  tensor::Philox(5, 1).fill_normal(noise.data(), n);
  for (size_t i = 0; i < n; ++i) a[i] = e[i] + 1e-4f * noise[i];
  a[2'500'001] += 0.5f;  // the worst element, in a late chunk
  const Tensor ta = Tensor::view(DType::kF32, {int64_t(n)}, a.data(), nullptr);
  const Tensor te = Tensor::view(DType::kF32, {int64_t(n)}, e.data(), nullptr);
  const Metrics m = compute_metrics(ta, te, {1e-3, 1e-3, true});
  const Plain p = plain_metrics(a, e);
  EXPECT_EQ(m.max_abs_err, p.max_abs);
  EXPECT_EQ(m.worst_index, 2'500'001);
  EXPECT_EQ(m.worst_excess_index, 2'500'001);
  EXPECT_EQ(m.max_rel_err, p.max_rel);
  EXPECT_NEAR(m.mean_abs_err, p.sum_abs / n, 1e-12 * p.sum_abs / n);
  EXPECT_NEAR(m.rmse, std::sqrt(p.sum_sq / n), 1e-12);
  EXPECT_NEAR(m.cosine, p.dot / std::sqrt(p.na * p.ne), 1e-12);
  EXPECT_GT(m.mismatch_count, 0);
  const Metrics again = compute_metrics(ta, te, {1e-3, 1e-3, true});
  EXPECT_EQ(std::bit_cast<uint64_t>(again.mean_abs_err), std::bit_cast<uint64_t>(m.mean_abs_err));
  EXPECT_EQ(std::bit_cast<uint64_t>(again.cosine), std::bit_cast<uint64_t>(m.cosine));
}

// Every instruction-set variant of the kernel gives the same bits (fixed lanes, no FMA).
TEST(Metrics, EveryIsaVariantGivesTheSameBits) {
  const size_t n = 100'003;
  std::vector<float> e(n), a(n);
  tensor::Philox(9, 0).fill_normal(e.data(), n);
  tensor::Philox(9, 1).fill_normal(a.data(), n);
  for (size_t i = 0; i < n; ++i) a[i] = e[i] + 0.01f * a[i];
  e[77] = 0.0f;  // an expected zero: the epsilon denominator
  const Tensor te = Tensor::view(DType::kF32, {int64_t(n)}, e.data(), nullptr);
  const Tensor ta = Tensor::view(DType::kF32, {int64_t(n)}, a.data(), nullptr);
  const int detected = detail::isa_level();
  for (const auto& [actual, expected] :
       {std::pair{ta, te}, std::pair{ta.to(DType::kBF16), te.to(DType::kBF16)},
        std::pair{ta.to(DType::kF16), te}}) {
    std::vector<std::vector<std::pair<std::string, double>>> per_level;
    for (int level = 0; level <= detected; ++level) {
      detail::force_isa_level(level);
      per_level.push_back(metric_values(compute_metrics(actual, expected, {1e-3, 1e-5, true})));
    }
    detail::force_isa_level(detected);
    for (size_t level = 1; level < per_level.size(); ++level) {
      for (size_t k = 0; k < per_level[0].size(); ++k) {
        EXPECT_EQ(std::bit_cast<uint64_t>(per_level[level][k].second),
                  std::bit_cast<uint64_t>(per_level[0][k].second))
            << tensor::dtype_name(actual.dtype()) << " " << per_level[0][k].first
            << " at ISA level " << level;
      }
    }
  }
}

Tensor f32(std::vector<float> v) {
  return Tensor::copy_of(DType::kF32, {int64_t(v.size())}, v.data());
}

TEST(Metrics, ZerosInExpectedUseTheDtypeEpsilon) {
  const Metrics m = compute_metrics(f32({0.0f, 1e-6f, 2.0f}), f32({0.0f, 0.0f, 2.0f}), {});
  EXPECT_EQ(m.max_rel_err, 1e-6f / 0x1p-23);  // msprobe: d / eps(f32) where e == 0
  EXPECT_NEAR(m.ratio_rel_lt_1e3, 2.0 / 3.0, 1e-15);
}

TEST(Metrics, NanAndInfBookkeeping) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  const Metrics m = compute_metrics(f32({nan, nan, 1, inf, inf, -inf, 3}),
                                    f32({nan, 1, nan, inf, -inf, 5, 3}), {0, 0, true});
  EXPECT_EQ(m.nan_actual, 2);
  EXPECT_EQ(m.nan_expected, 2);
  EXPECT_EQ(m.nan_mismatch, 2);  // positions 1 and 2; position 0 is NaN on both sides
  EXPECT_EQ(m.inf_mismatch, 2);  // +inf vs -inf, -inf vs 5; +inf vs +inf matches
  EXPECT_EQ(m.finite_count, 1);
  EXPECT_EQ(m.mismatch_count, 4);
  EXPECT_EQ(m.max_abs_err, 0.0);
  EXPECT_EQ(*m.max_ulp, 0x7F800000u + 0x7F800000u);  // +inf to -inf
}

TEST(Metrics, CosineOfZeroVectors) {
  EXPECT_EQ(compute_metrics(f32({0, 0}), f32({0, 0}), {}).cosine, 1.0);
  EXPECT_EQ(compute_metrics(f32({1, 0}), f32({0, 0}), {}).cosine, 0.0);
  EXPECT_NEAR(compute_metrics(f32({-1, -2}), f32({1, 2}), {}).cosine, -1.0, 1e-15);
}

TEST(Metrics, RelativeL2OverFinitePositions) {
  EXPECT_NEAR(compute_metrics(f32({1, 2, 2}), f32({0, 2, 4}), {}).rel_l2, std::sqrt(5.0 / 20.0),
              1e-15);
  EXPECT_EQ(compute_metrics(f32({3, 4}), f32({0, 0}), {}).rel_l2, 5.0);  // |e| = 0: |a - e|
  EXPECT_EQ(compute_metrics(f32({1, 2}), f32({1, 2}), {}).rel_l2, 0.0);
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  // NaN and Inf positions are left out of both norms, as in the other error metrics.
  EXPECT_NEAR(compute_metrics(f32({nan, 1, inf, 2}), f32({1, 0, 5, 4}), {}).rel_l2,
              std::sqrt(5.0 / 16.0), 1e-15);
}

TEST(Metrics, UlpOnlyForTheSameFloatDtype) {
  const Tensor a = f32({1.0f, 2.0f});
  EXPECT_EQ(*compute_metrics(a, f32({std::nextafter(1.0f, 2.0f), 2.0f}), {}).max_ulp, 1u);
  EXPECT_EQ(*compute_metrics(f32({-0.0f}), f32({0.0f}), {}).max_ulp, 0u);
  EXPECT_EQ(*compute_metrics(f32({-0x1p-149f}), f32({0x1p-149f}), {}).max_ulp, 2u);
  EXPECT_FALSE(compute_metrics(a, a.to(DType::kBF16), {}).max_ulp.has_value());
  const Tensor ids = Tensor::zeros(DType::kI64, {2});
  EXPECT_FALSE(compute_metrics(ids, ids, {}).max_ulp.has_value());
}

TEST(Metrics, CountsMustMatch) {
  EXPECT_THROW(compute_metrics(f32({1, 2}), f32({1}), {}), InputError);
}

TEST(TensorCompare, AutoPicksTheCoarserDtypeAndShapeMismatchFails) {
  const Tensor e = f32({1.0f, 2.0f, 3.0f, 4.0f});
  const Comparison same = compare_tensors(e.to(DType::kBF16), e, *preset("auto"));
  EXPECT_TRUE(same.pass);
  EXPECT_EQ(same.tolerance.preset, "bf16");
  const Comparison reshaped = compare_tensors(e.reshape({2, 2}), e, *preset("auto"));
  EXPECT_FALSE(reshaped.pass);
  EXPECT_TRUE(reshaped.metrics_valid);
  EXPECT_EQ(reshaped.failures[0], "shape 2x2 differs from expected 4");
  const Comparison shorter = compare_tensors(f32({1.0f}), e, *preset("auto"));
  EXPECT_FALSE(shorter.pass);
  EXPECT_FALSE(shorter.metrics_valid);
}

TEST(TensorCompare, IntegersCompareExactly) {
  const int64_t a[] = {5, 7, 9}, b[] = {5, 8, 9};
  const Tensor ta = Tensor::copy_of(DType::kI64, {3}, a), tb = Tensor::copy_of(DType::kI64, {3}, b);
  const Comparison c = compare_tensors(ta, tb, *preset("auto"));
  EXPECT_EQ(c.tolerance.preset, "exact");
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.metrics.mismatch_count, 1);
  EXPECT_EQ(c.metrics.worst_index, 1);
  EXPECT_TRUE(compare_tensors(ta, ta, *preset("auto")).pass);
}

}  // namespace
}  // namespace h0::compare
