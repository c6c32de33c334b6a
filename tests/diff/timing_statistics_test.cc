// The timing statistics (Welch and paired t tests, Student's t tail, the exact Mann-Whitney U)
// against scipy's values in golden/diff/timing_statistics.json (golden/tools/gen_timing_stats.py).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "diff/statistics.h"
#include "test_util.h"

namespace h0::diff {
namespace {

nlohmann::json golden() {
  return nlohmann::json::parse(test::read_file(test::golden_path("diff/timing_statistics.json")));
}

std::vector<double> values(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

TEST(TimingStatistics, WelchAgreesWithScipy) {
  const auto g = golden()["welch"];
  ASSERT_GE(g.size(), 5u);
  for (const auto& c : g) {
    const TTest t = welch_t_test(values(c["x"]), values(c["y"]));
    EXPECT_NEAR(t.t, c["t"].get<double>(), 1e-9 * std::abs(c["t"].get<double>()) + 1e-12) << c;
    EXPECT_NEAR(t.df, c["df"].get<double>(), 1e-9 * c["df"].get<double>()) << c;
    EXPECT_NEAR(t.p_value, c["p"].get<double>(), 1e-10 + 1e-8 * c["p"].get<double>()) << c;
  }
}

TEST(TimingStatistics, PairedAgreesWithScipy) {
  for (const auto& c : golden()["paired"]) {
    const std::vector<double> a = values(c["a"]), b = values(c["b"]);
    std::vector<double> d;
    for (size_t i = 0; i < a.size(); ++i) d.push_back(a[i] - b[i]);
    const TTest t = one_sample_t_test(d);
    EXPECT_NEAR(t.t, c["t"].get<double>(), 1e-9 * std::abs(c["t"].get<double>()) + 1e-12) << c;
    EXPECT_EQ(t.df, c["df"].get<double>()) << c;
    EXPECT_NEAR(t.p_value, c["p"].get<double>(), 1e-10 + 1e-8 * c["p"].get<double>()) << c;
  }
}

TEST(TimingStatistics, StudentTailAgreesWithScipy) {
  for (const auto& c : golden()["t_sf"]) {
    const double p = c["p"];
    EXPECT_NEAR(student_t_two_sided_p(c["t"], c["df"]), p, 1e-12 + 1e-9 * p) << c;
  }
  EXPECT_TRUE(std::isnan(student_t_two_sided_p(1, 0)));
}

TEST(TimingStatistics, ExactMannWhitneyAgreesWithScipy) {
  for (const auto& c : golden()["mwu_exact"]) {
    const double p = c["p"];
    EXPECT_NEAR(mann_whitney_exact_p(values(c["x"]), values(c["y"])), p, 1e-12 + 1e-9 * p) << c;
  }
}

TEST(TimingStatistics, NoVarianceOrTooFewValuesIsNoEvidence) {
  EXPECT_EQ(welch_t_test({1, 1}, {1, 1}).p_value, 1);
  EXPECT_EQ(welch_t_test({1}, {2, 3}).p_value, 1);
  EXPECT_EQ(one_sample_t_test({0.5}).p_value, 1);
  EXPECT_EQ(one_sample_t_test({0.1, 0.1, 0.1}).p_value, 1);
}

}  // namespace
}  // namespace h0::diff
