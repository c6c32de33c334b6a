#include "diff/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "test_util.h"

namespace h0::diff {
namespace {

// Reference values from scipy 1.17.1:
//   scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method=M, use_continuity=True)
// with M = "exact" for the small samples without ties and M = "asymptotic" for the others;
// u is the returned statistic (U of x), p the returned pvalue, both printed with repr().
struct Reference {
  const char* name;
  std::vector<double> x, y;
  double u, p;
};

const Reference kExact[] = {
    {"separated", {1.1, 2.2, 3.3, 4.4, 5.5}, {6.6, 7.7, 8.8, 9.9, 10.0}, 0.0, 0.007936507936507936},
    {"interleaved",
     {1, 3, 5, 7, 9, 11, 13},
     {2, 4, 6, 8, 10, 12, 14, 16},
     21.0,
     0.46340326340326343},
    {"10x10",
     {10.3, 11.9, 9.7, 12.4, 10.8, 13.1, 11.2, 9.9, 12.8, 10.1},
     {11.5, 12.2, 13.7, 12.9, 14.1, 11.8, 13.3, 12.6, 14.8, 13.0},
     15.0,
     0.006841455757864427},
    {"3x10", {5.0, 7.5, 2.5}, {1, 2, 3, 4, 6, 8, 9, 10, 11, 12}, 11.0, 0.5734265734265734},
};

const Reference kAsymptotic[] = {
    {"ties_small", {1, 2, 2, 3, 3, 3, 4}, {2, 3, 4, 4, 5, 5, 6}, 8.5, 0.043051432728945134},
    {"12x15",
     {0.5, 1.7, 2.2, 3.9, 4.1, 5.6, 6.3, 7.8, 8.4, 9.0, 10.2, 11.5},
     {2.05, 3.3, 4.7, 5.1, 6.9, 7.2, 8.8, 9.6, 10.6, 11.1, 12.4, 13.3, 14.0, 15.5, 16.2},
     50.0,
     0.05392947037277041},
    {"integers_with_ties",
     {3, 5, 5, 6, 7, 7, 7, 8, 9, 9, 10, 11, 12, 12, 13},
     {5, 6, 7, 8, 8, 9, 9, 10, 10, 11, 12, 13, 13, 14, 15, 15, 16},
     76.5,
     0.05554631822813057},
    // One sample has 11 values, so no exact distribution even without ties.
    {"5x11_no_ties",
     {1.5, 4.5, 7.5, 10.5, 13.5},
     {2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 16},
     20.0,
     0.4277675351083102},
    {"all_equal", {4, 4, 4, 4, 4, 4}, {4, 4, 4, 4, 4, 4, 4}, 21.0, 1.0},
};

TEST(MannWhitney, ExactMatchesScipy) {
  for (const auto& r : kExact) {
    const MannWhitney m = mann_whitney_u(r.x, r.y);
    EXPECT_EQ(m.u, r.u) << r.name;
    EXPECT_NEAR(m.p_value, r.p, 1e-12 * r.p) << r.name;
  }
}

TEST(MannWhitney, AsymptoticMatchesScipy) {
  for (const auto& r : kAsymptotic) {
    const MannWhitney m = mann_whitney_u(r.x, r.y);
    EXPECT_EQ(m.u, r.u) << r.name;
    EXPECT_NEAR(m.p_value, r.p, 1e-9 * r.p) << r.name;
    // Two-sided p of the continuity-corrected normal score.
    if (r.p < 1) {
      EXPECT_NEAR(std::erfc(std::abs(m.z) / std::sqrt(2.0)), r.p, 1e-12) << r.name;
    }
  }
}

TEST(MannWhitney, SwappingTheSamplesMirrorsU) {
  for (const auto& r : kAsymptotic) {
    const MannWhitney xy = mann_whitney_u(r.x, r.y), yx = mann_whitney_u(r.y, r.x);
    EXPECT_EQ(xy.u + yx.u, static_cast<double>(r.x.size() * r.y.size())) << r.name;
    EXPECT_DOUBLE_EQ(xy.p_value, yx.p_value) << r.name;
    EXPECT_DOUBLE_EQ(xy.z, -yx.z) << r.name;
  }
}

TEST(MannWhitney, ZIsPositiveWhenTheFirstSampleIsLarger) {
  const MannWhitney m = mann_whitney_u({6.6, 7.7, 8.8, 9.9, 10.0}, {1.1, 2.2, 3.3, 4.4, 5.5});
  EXPECT_EQ(m.u, 25);
  EXPECT_GT(m.z, 0);
  EXPECT_NEAR(m.p_value, 0.007936507936507936, 1e-15);
}

TEST(MannWhitney, EmptySampleIsNotSignificant) {
  EXPECT_EQ(mann_whitney_u({}, {1, 2, 3}).p_value, 1.0);
  EXPECT_EQ(mann_whitney_u({1, 2}, {}).p_value, 1.0);
}

TEST(Statistics, Median) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({7}), 7);
  EXPECT_TRUE(std::isnan(median({})));
}

TEST(Statistics, GeometricMean) {
  EXPECT_DOUBLE_EQ(geometric_mean({2, 8}), 4);
  EXPECT_DOUBLE_EQ(geometric_mean({2, 0.5}), 1);
  EXPECT_DOUBLE_EQ(geometric_mean({1, 3, 9}), 3);
  EXPECT_TRUE(std::isnan(geometric_mean({})));
  EXPECT_TRUE(std::isnan(geometric_mean({1, 0})));
}

TEST(Statistics, MedianAbsoluteDeviation) {
  EXPECT_EQ(median_absolute_deviation({1, 2, 3, 4, 100}), 1);
  EXPECT_EQ(median_absolute_deviation({5, 5, 5}), 0);
}

// The accuracy gate's statistics against golden/eval/statistics.json (golden/tools/
// gen_eval_stats.py: statsmodels 0.14.6, scipy 1.17.1, numpy 2.4.6).
nlohmann::json eval_statistics() {
  const std::string text = test::read_file(test::golden_path("eval/statistics.json"));
  EXPECT_FALSE(text.empty());
  return nlohmann::json::parse(text);
}

TEST(AccuracyStatistics, NormalQuantileMatchesScipy) {
  const nlohmann::json g = eval_statistics();
  ASSERT_GE(g["quantile"].size(), 5u);
  for (const auto& r : g["quantile"]) {
    const double x = r["x"];
    EXPECT_NEAR(normal_quantile(r["p"]), x, 1e-13 * std::max(1.0, std::fabs(x))) << r.dump();
  }
  EXPECT_TRUE(std::isinf(normal_quantile(0)));
  EXPECT_TRUE(std::isnan(normal_quantile(1.5)));
}

TEST(AccuracyStatistics, WilsonMatchesStatsmodels) {
  const nlohmann::json g = eval_statistics();
  ASSERT_GE(g["wilson"].size(), 5u);
  for (const auto& r : g["wilson"]) {
    const Interval i = wilson_interval(r["k"], r["n"], r["alpha"]);
    EXPECT_NEAR(i.lo, r["lo"].get<double>(), 1e-12) << r.dump();
    EXPECT_NEAR(i.hi, r["hi"].get<double>(), 1e-12) << r.dump();
  }
}

TEST(AccuracyStatistics, McNemarExactMatchesStatsmodels) {
  const nlohmann::json g = eval_statistics();
  ASSERT_GE(g["mcnemar"].size(), 5u);
  for (const auto& r : g["mcnemar"]) {
    const double p = r["p"];
    EXPECT_NEAR(mcnemar_exact_p(r["b"], r["c"]), p, 1e-12 * std::max(p, 1e-300) + 1e-15)
        << r.dump();
    EXPECT_EQ(mcnemar_exact_p(r["b"], r["c"]), mcnemar_exact_p(r["c"], r["b"]));  // symmetric
  }
}

TEST(AccuracyStatistics, TwoProportionZMatchesStatsmodels) {
  const nlohmann::json g = eval_statistics();
  ASSERT_GE(g["ztest"].size(), 3u);
  for (const auto& r : g["ztest"]) {
    EXPECT_NEAR(two_proportion_z_p(r["x1"], r["n1"], r["x2"], r["n2"]), r["p"].get<double>(), 1e-12)
        << r.dump();
  }
  EXPECT_EQ(two_proportion_z_p(0, 10, 0, 10), 1);  // no variance: nothing to test
}

TEST(AccuracyStatistics, PairedBootstrapReproducesNumpyDrawForDraw) {
  const nlohmann::json g = eval_statistics();
  ASSERT_GE(g["bootstrap"].size(), 2u);
  for (const auto& r : g["bootstrap"]) {
    const std::vector<int> head = r["head"], ref = r["ref"];
    const Interval i =
        paired_bootstrap_delta(head, ref, r["resamples"], r["seed"].get<uint32_t>(), r["alpha"]);
    EXPECT_NEAR(i.lo, r["lo"].get<double>(), 1e-12) << "seed " << r["seed"];
    EXPECT_NEAR(i.hi, r["hi"].get<double>(), 1e-12) << "seed " << r["seed"];
    // scipy.stats.bootstrap draws from its own stream: equal up to the Monte-Carlo error.
    EXPECT_NEAR(i.lo, r["scipy_lo"].get<double>(), 0.012) << "seed " << r["seed"];
    EXPECT_NEAR(i.hi, r["scipy_hi"].get<double>(), 0.012) << "seed " << r["seed"];
  }
  // Identical sides: every resampled delta is 0.
  const Interval same = paired_bootstrap_delta({1, 0, 1}, {1, 0, 1}, 100, 1, 0.05);
  EXPECT_EQ(same.lo, 0);
  EXPECT_EQ(same.hi, 0);
}

}  // namespace
}  // namespace h0::diff

namespace h0::diff {
namespace {

// The engine's calibration (diff_engine_kernels, diff --runs, history): a heavy kernel outweighs
// many light ones.
TEST(WeightedMedian, TheValueWhereHalfTheWeightIsReached) {
  EXPECT_DOUBLE_EQ(weighted_median({{1.3, 10}, {1.0, 1}, {1.0, 1}, {1.0, 1}}), 1.3);
  EXPECT_DOUBLE_EQ(weighted_median({{1.3, 1}, {1.0, 5}, {2.0, 1}}), 1.0);
  EXPECT_DOUBLE_EQ(weighted_median({{0.5, 1}, {2.0, 1}}), 0.5);
  EXPECT_TRUE(std::isnan(weighted_median({})));
  EXPECT_TRUE(std::isnan(weighted_median({{1.0, 0}})));
}

}  // namespace
}  // namespace h0::diff
