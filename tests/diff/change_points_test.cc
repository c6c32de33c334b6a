// E-Divisive change points on synthetic timing histories: a step is found at its run, a ramp
// where it climbs, pure noise and a single outlier give none; the statistic against a direct
// evaluation of its definition; the same input gives the same answer.
#include "diff/change_points.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "diff/statistics.h"

namespace h0::diff {
namespace {

// n values around `level` with relative noise `sd` (Box-Muller over a seeded mt19937: the same
// numbers on every machine).
std::vector<double> noise(size_t n, double level, double sd, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<double> out;
  while (out.size() < n) {
    const double u1 = (double(g()) + 1) / 4294967297.0, u2 = (double(g()) + 1) / 4294967297.0;
    const double r = std::sqrt(-2 * std::log(u1));
    out.push_back(level * (1 + sd * r * std::cos(2 * M_PI * u2)));
    if (out.size() < n) out.push_back(level * (1 + sd * r * std::sin(2 * M_PI * u2)));
  }
  return out;
}

std::vector<double> concat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ChangePoints, TheStatisticIsItsDefinition) {
  const std::vector<double> x = {1, 2, 4, 8, 3, 9, 10, 12};
  // m = 3, n = 5 at tau 3: E|X-Y| over 15 pairs, E|X-X'| over 3, E|Y-Y'| over 10.
  double between = 0, left = 0, right = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 3; j < 8; ++j) between += std::abs(x[i] - x[j]);
  for (int i = 0; i < 3; ++i)
    for (int k = i + 1; k < 3; ++k) left += std::abs(x[i] - x[k]);
  for (int j = 3; j < 8; ++j)
    for (int k = j + 1; k < 8; ++k) right += std::abs(x[j] - x[k]);
  const double want = 3.0 * 5.0 / 8.0 * (2 * between / 15 - left / 3 - right / 10);
  EXPECT_NEAR(energy_statistic(x, 0, 3, 8), want, 1e-12);
  EXPECT_GT(energy_statistic(x, 0, 3, 8), 0);
}

TEST(ChangePoints, AStepIsFoundAtItsRun) {
  const auto x = concat(noise(20, 100, 0.02, 1), noise(15, 120, 0.02, 2));
  const auto cps = find_change_points(x);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 20u);
  EXPECT_LT(cps[0].p_value, 0.01);
  EXPECT_NEAR(cps[0].change, 0.20, 0.03);
  EXPECT_EQ(cps[0].before_points, 20u);
  EXPECT_EQ(cps[0].after_points, 15u);
  EXPECT_NEAR(cps[0].before_median, 100, 3);
  EXPECT_NEAR(cps[0].after_median, 120, 3);
}

TEST(ChangePoints, AStepDownAndBackAreTwo) {
  const auto x =
      concat(concat(noise(12, 100, 0.02, 3), noise(12, 80, 0.02, 4)), noise(12, 100, 0.02, 5));
  const auto cps = find_change_points(x);
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0].index, 12u);
  EXPECT_EQ(cps[1].index, 24u);
  EXPECT_LT(cps[0].change, -0.15);
  EXPECT_GT(cps[1].change, 0.15);
}

TEST(ChangePoints, ARampIsReportedWhereItClimbs) {
  std::vector<double> x = noise(12, 100, 0.01, 6);
  for (int i = 1; i <= 12; ++i) x.push_back(100 + 30.0 * i / 12);
  x = concat(x, noise(12, 130, 0.01, 7));
  const auto cps = find_change_points(x);
  ASSERT_FALSE(cps.empty());
  for (const auto& c : cps) {
    EXPECT_GE(c.index, 12u) << "not before the ramp starts";
    EXPECT_LE(c.index, 25u) << "not after it ends";
    EXPECT_GT(c.change, 0.05);
  }
}

TEST(ChangePoints, PureNoiseHasNone) {
  for (uint32_t seed = 10; seed < 30; ++seed) {
    const auto cps = find_change_points(noise(40, 100, 0.03, seed));
    EXPECT_TRUE(cps.empty()) << "seed " << seed << ": at " << cps[0].index << " p "
                             << cps[0].p_value;
  }
}

TEST(ChangePoints, OneOutlierIsNotAStep) {
  for (size_t at : {0u, 7u, 20u, 39u}) {
    std::vector<double> x = noise(40, 100, 0.02, 40 + uint32_t(at));
    x[at] = 300;
    EXPECT_TRUE(find_change_points(x).empty()) << "outlier at " << at;
  }
}

TEST(ChangePoints, ASmallChangeIsBelowTheMinimum) {
  // 2% is significant with this little noise, but below the 5% a change must reach.
  const auto x = concat(noise(20, 100, 0.002, 8), noise(20, 102, 0.002, 9));
  EXPECT_TRUE(find_change_points(x).empty());
  ChangePointOptions o;
  o.min_change = 0.01;
  ASSERT_EQ(find_change_points(x, o).size(), 1u);
  EXPECT_EQ(find_change_points(x, o)[0].index, 20u);
}

TEST(ChangePoints, DeterministicAndShortSeriesHaveNone) {
  const auto x = concat(noise(10, 100, 0.05, 11), noise(10, 112, 0.05, 12));
  const auto a = find_change_points(x), b = find_change_points(x);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].p_value, b[i].p_value);
  }
  EXPECT_TRUE(find_change_points({100, 100, 200, 200, 200}).empty());     // < 2 * min_segment
  EXPECT_TRUE(find_change_points(std::vector<double>(30, 5.0)).empty());  // constant
}

}  // namespace
}  // namespace h0::diff

namespace h0::diff {
namespace {

// 4 values above 36 others: 2 of the C(40, 4) = 91,390 equally likely rank sets are as extreme
// (scipy.stats.mannwhitneyu(method="exact") gives the same); the normal approximation says 1.3e-3.
TEST(ChangePoints, AnUnbalancedSplitIsJudgedByTheExactUDistribution) {
  std::vector<double> low, high = {200, 201, 202, 203};
  for (int i = 0; i < 36; ++i) low.push_back(100 + (i * 7 % 36) * 0.05);  // level, distinct
  EXPECT_NEAR(mann_whitney_exact_p(low, high), 2.0 / 91390, 1e-12);
  EXPECT_GT(mann_whitney_u(low, high).p_value, 1e-3);
  EXPECT_TRUE(std::isnan(mann_whitney_exact_p({1, 2}, {2, 3})));  // a tie across the samples
  // Ties within each sample, fully separated: still 2 / C(7, 3).
  EXPECT_NEAR(mann_whitney_exact_p({1, 1, 2}, {5, 5, 5, 6}), 2.0 / 35, 1e-15);
  std::vector<double> x = low;
  x.insert(x.end(), high.begin(), high.end());
  const auto cps = find_change_points(x);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 36u);
  EXPECT_NEAR(cps[0].p_value, 2.0 / 91390, 1e-12);
}

}  // namespace
}  // namespace h0::diff
