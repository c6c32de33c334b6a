#include "diff/history.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace h0::diff {
namespace {

using store::ProfileData;
using store::ResultData;
using store::RunData;

// A value in [-1, 1) from a 32-bit LCG (Numerical Recipes constants): the same on every platform.
double noise(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return 2 * (static_cast<double>(*state) / 4294967296.0) - 1;
}

// Run `id` of stack `fingerprint` on platform cpu with one timed case "ops/matmul[64]" whose
// steady median is `median_ns`, plus a plain case "ops/softmax[8]" with `softmax_status`.
RunData run(int64_t id, double median_ns, const std::string& softmax_status = "pass",
            const std::string& fingerprint = "0123456789abcdef0123") {
  RunData r;
  r.id = id;
  r.platform = "cpu";
  r.stack.fingerprint = fingerprint;
  r.stack.backend = "cpu";
  r.started_at = "2024-06-" + std::string(id < 10 ? "0" : "") + std::to_string(id) + "T02:00:00Z";
  r.status = "pass";
  ResultData timed;
  timed.case_id = "ops/matmul[64]";
  timed.check_id = "ops/matmul";
  timed.status = "pass";
  ProfileData p;
  p.phase = "steady";
  p.name = "matmul";
  p.median_ns = median_ns;
  timed.profiles = {p};
  ProfileData warmup = p;
  warmup.phase = "warmup";
  warmup.median_ns = 50 * median_ns;  // never looked at
  timed.profiles.push_back(warmup);
  ResultData plain;
  plain.case_id = "ops/softmax[8]";
  plain.check_id = "ops/softmax";
  plain.status = softmax_status;
  r.results = {timed, plain};
  return r;
}

// 12 runs, ids 1..12, medians 1 ms ± `noise_fraction`, times `step_factor` from run `step_at`.
std::vector<RunData> series(double noise_fraction, int step_at, double step_factor, uint32_t seed) {
  std::vector<RunData> runs;
  uint32_t state = seed;
  for (int id = 1; id <= 12; ++id) {
    const double level = id >= step_at ? step_factor : 1.0;
    runs.push_back(run(id, 1e6 * level * (1 + noise_fraction * noise(&state))));
  }
  return runs;
}

TEST(History, StepAtRunSeven) {
  const HistoryReport h = history(series(0.01, 7, 1.3, 1), "*", 0);
  ASSERT_EQ(h.stacks.size(), 1u);
  const StackHistory& s = h.stacks[0];
  EXPECT_EQ(s.stack, "0123456789ab");
  EXPECT_EQ(s.runs, 12);
  ASSERT_EQ(s.timed.size(), 1u);  // the warmup row is not timed
  const TimedCase& t = s.timed[0];
  EXPECT_EQ(t.case_id, "ops/matmul[64]");
  EXPECT_EQ(t.runs, 12);
  ASSERT_TRUE(t.step.has_value());
  EXPECT_EQ(t.step->run_id, 7);
  EXPECT_NEAR(t.step->before_median_ns, 1e6, 0.01e6);
  EXPECT_NEAR(t.step->after_median_ns, 1.3e6, 0.013e6);
  EXPECT_NEAR(t.step->change, 0.3, 0.03);
}

TEST(History, StepDownIsFound) {
  const HistoryReport h = history(series(0.01, 7, 0.8, 2), "*", 0);
  ASSERT_TRUE(h.stacks[0].timed[0].step.has_value());
  EXPECT_EQ(h.stacks[0].timed[0].step->run_id, 7);
  EXPECT_LT(h.stacks[0].timed[0].step->change, -0.15);
}

TEST(History, FlatNoisySeriesHasNoStep) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const HistoryReport h = history(series(0.02, 100, 1.0, seed), "*", 0);
    EXPECT_FALSE(h.stacks[0].timed[0].step.has_value()) << "seed " << seed;
  }
}

TEST(History, SingleOutlierIsNoStepUnlessLast) {
  std::vector<double> flat = {100, 101, 99, 100, 100, 150, 100, 101, 99};
  EXPECT_EQ(find_step(flat), std::nullopt);
  flat.back() = 150;  // the last run is out of the band: it may be the start of a step
  EXPECT_EQ(find_step(flat), flat.size() - 1);
  EXPECT_EQ(find_step({100, 200, 200}), std::nullopt);  // too few runs before it
}

TEST(History, LastNLimitsTheWindow) {
  // The step at run 7 is older than the last 4 runs: those are all at the new level.
  const HistoryReport h = history(series(0.01, 7, 1.3, 3), "*", 4);
  EXPECT_EQ(h.stacks[0].timed[0].runs, 4);
  EXPECT_FALSE(h.stacks[0].timed[0].step.has_value());
  EXPECT_EQ(h.stacks[0].runs, 12);  // runs and pass rate still cover every run
  // Runs 4..12: three runs before the step, the fewest find_step needs.
  const HistoryReport wider = history(series(0.01, 7, 1.3, 3), "*", 9);
  ASSERT_TRUE(wider.stacks[0].timed[0].step.has_value());
  EXPECT_EQ(wider.stacks[0].timed[0].step->run_id, 7);
}

TEST(History, PassRateOverMatchingChecksPerStackAndPlatform) {
  std::vector<RunData> runs = {run(1, 1e6, "pass"), run(2, 1e6, "fail"),
                               run(3, 1e6, "skip", "fedcba9876543210fedc"), run(4, 1e6, "xfail")};
  runs.push_back(run(5, 1e6, "pass"));
  runs.back().platform = "cpu-avx512";
  const HistoryReport all = history(runs, "*", 0);
  ASSERT_EQ(all.stacks.size(), 3u);
  EXPECT_EQ(all.stacks[0].runs, 3);  // runs 1, 2, 4
  EXPECT_EQ(all.stacks[0].first_run_id, 1);
  EXPECT_EQ(all.stacks[0].last_run_id, 4);
  EXPECT_EQ(all.stacks[0].results, 6);
  EXPECT_EQ(all.stacks[0].passed, 5);  // xfail counts as passed
  EXPECT_EQ(all.stacks[1].stack, "fedcba987654");
  EXPECT_EQ(all.stacks[1].results, 1);  // the skip is left out
  EXPECT_EQ(all.stacks[2].platform, "cpu-avx512");

  const HistoryReport softmax = history(runs, "ops/softmax", 0);  // a check id
  EXPECT_EQ(softmax.stacks[0].results, 3);
  EXPECT_NEAR(softmax.stacks[0].pass_rate, 2.0 / 3, 1e-12);
  EXPECT_TRUE(softmax.stacks[0].timed.empty());
  EXPECT_TRUE(std::isnan(softmax.stacks[1].pass_rate));

  const HistoryReport matmul = history(runs, "ops/matmul[[]6?]", 0);  // a case id; '[' is literal
  EXPECT_EQ(matmul.stacks[0].results, 0);
  const HistoryReport by_case = history(runs, "ops/matmul[6?]", 0);
  EXPECT_EQ(by_case.stacks[0].results, 3);
  EXPECT_EQ(by_case.stacks[0].timed.size(), 1u);
}

TEST(History, JsonAndText) {
  const HistoryReport h = history(series(0.01, 7, 1.3, 1), "ops/*", 0);
  const nlohmann::json j = h.to_json();
  EXPECT_EQ(j["check"], "ops/*");
  EXPECT_EQ(j["last"], 0);
  const auto& s = j["stacks"][0];
  for (const char* key :
       {"stack", "backend", "platform", "runs", "first_run_id", "last_run_id", "first_started_at",
        "last_started_at", "results", "passed", "pass_rate", "timed"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  EXPECT_EQ(s["pass_rate"], 1.0);
  const auto& t = s["timed"][0];
  for (const char* key : {"case_id", "phase", "name", "runs", "latest_median_ns", "step"}) {
    EXPECT_TRUE(t.contains(key)) << key;
  }
  EXPECT_EQ(t["step"]["run_id"], 7);
  for (const char* key : {"before_median_ns", "after_median_ns", "change"}) {
    EXPECT_TRUE(t["step"].contains(key)) << key;
  }
  EXPECT_TRUE(history(series(0.01, 100, 1, 1), "*", 0)
                  .to_json()["stacks"][0]["timed"][0]["step"]
                  .is_null());

  const std::string text = h.to_text(false);
  EXPECT_NE(text.find("history of checks matching 'ops/*'\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nstack 0123456789ab (cpu)  platform cpu\n"
                      "  12 runs (run 1 2024-06-01T02:00:00Z .. run 12 2024-06-12T02:00:00Z)\n"
                      "  pass rate 100.0% (24 of 24 results)\n"
                      "  1 timed case, 1 step\n"
                      "    slower  ops/matmul[64]  steady matmul  at run 7: "),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find('\033'), std::string::npos);
  EXPECT_NE(h.to_text(true).find("\033[31mslower"), std::string::npos);
  EXPECT_EQ(history({}, "*", 10).to_text(false),
            "history of checks matching '*', steps over the last 10 runs\nno complete runs\n");
}

}  // namespace
}  // namespace h0::diff

namespace h0::diff {
namespace {

// `n` runs of platform cpu: stack A up to run `change_at - 1`, stack B from it, the median
// times `factor` on stack B, with ±1% noise.
std::vector<store::RunData> across_stacks(int n, int change_at, double factor, uint32_t seed) {
  std::vector<store::RunData> runs;
  uint32_t state = seed;
  for (int id = 1; id <= n; ++id) {
    const bool b = id >= change_at;
    runs.push_back(run(id, 1e6 * (b ? factor : 1.0) * (1 + 0.01 * noise(&state)), "pass",
                       b ? "bbbbbbbbbbbbbbbbbbbb" : "aaaaaaaaaaaaaaaaaaaa"));
  }
  return runs;
}

TEST(HistoryChanges, AStepAtAStackChangeIsFoundWithBothStacks) {
  const HistoryReport h = history(across_stacks(20, 13, 1.3, 4), "*", 0);
  ASSERT_EQ(h.changes.size(), 1u);
  const ChangeReport& c = h.changes[0];
  EXPECT_EQ(c.platform, "cpu");
  EXPECT_EQ(c.case_id, "ops/matmul[64]");
  EXPECT_EQ(c.run_id, 13);
  EXPECT_EQ(c.previous_run_id, 12);
  EXPECT_EQ(c.stack_before, "aaaaaaaaaaaa");
  EXPECT_EQ(c.stack_after, "bbbbbbbbbbbb");
  EXPECT_EQ(c.runs_before, 12);
  EXPECT_EQ(c.runs_after, 8);
  EXPECT_NEAR(c.change, 0.3, 0.02);
  EXPECT_FALSE(c.newest);  // detectable nights ago
  EXPECT_EQ(h.new_slowdowns(), 0);
  EXPECT_NE(
      h.to_text(false).find("slower  cpu  ops/matmul[64]  steady matmul  at run 13 (after run 12, "
                            "stack aaaaaaaaaaaa -> bbbbbbbbbbbb)"),
      std::string::npos)
      << h.to_text(false);
  EXPECT_EQ(h.to_json()["changes"][0]["run_id"], 13);
}

// 16 runs, then 4 at 1.3x: 16 against 3 cannot reach p < 0.001 (the exact U test gives 2/969),
// 16 against 4 can (2/4845). The change is reported once: the night its fourth run came in.
TEST(HistoryChanges, TheNightTheStepBecomesDetectableIsNew) {
  const auto runs = across_stacks(20, 17, 1.3, 5);
  const HistoryReport tonight = history(runs, "*", 0);
  ASSERT_EQ(tonight.changes.size(), 1u);
  EXPECT_EQ(tonight.changes[0].run_id, 17);
  EXPECT_TRUE(tonight.changes[0].newest);
  EXPECT_EQ(tonight.new_slowdowns(), 1);
  EXPECT_NE(tonight.to_text(false).find("NEW"), std::string::npos);
  const HistoryReport last_night = history({runs.begin(), runs.end() - 1}, "*", 0);
  EXPECT_TRUE(last_night.changes.empty());
  auto later = runs;
  later.push_back(run(21, 1.3e6, "pass", "bbbbbbbbbbbbbbbbbbbb"));
  const HistoryReport next_night = history(later, "*", 0);
  ASSERT_EQ(next_night.changes.size(), 1u);
  EXPECT_FALSE(next_night.changes[0].newest);
  EXPECT_EQ(next_night.new_slowdowns(), 0);
}

TEST(HistoryChanges, NoiseAndAFasterStackAreNoSlowdown) {
  for (uint32_t seed = 1; seed <= 20; ++seed)
    EXPECT_TRUE(history(across_stacks(20, 100, 1.0, seed), "*", 0).changes.empty()) << seed;
  const HistoryReport faster = history(across_stacks(20, 17, 0.7, 6), "*", 0);
  ASSERT_EQ(faster.changes.size(), 1u);
  EXPECT_TRUE(faster.changes[0].newest);
  EXPECT_LT(faster.changes[0].change, -0.25);
  EXPECT_EQ(faster.new_slowdowns(), 0);
}

}  // namespace
}  // namespace h0::diff

namespace h0::diff {
namespace {

// The runs with a calibration row (the host loop) of 1 us, `factor` times that from run `from`.
std::vector<store::RunData> with_calibration(std::vector<store::RunData> runs, int64_t from,
                                             double factor) {
  for (auto& r : runs) {
    store::ProfileData cal;
    cal.phase = "calibration";
    cal.name = "host";
    cal.median_ns = r.id >= from ? 1000 * factor : 1000;
    r.results[0].profiles.push_back(cal);
  }
  return runs;
}

// The machine got 1.5x slower from run 13 (a noisy neighbour): the kernel and the host loop
// timed next to it slow alike, so the calibrated history has no change; without calibration
// rows the same medians show one.
TEST(HistoryChanges, AMachineSlowdownSeenByTheCalibrationIsNoChange) {
  std::vector<store::RunData> runs = with_calibration(across_stacks(20, 13, 1.5, 7), 13, 1.5);
  const HistoryReport calibrated = history(runs, "*", 0);
  EXPECT_TRUE(calibrated.changes.empty()) << calibrated.to_text(false);
  for (auto& r : runs) r.results[0].profiles.pop_back();
  const HistoryReport raw = history(runs, "*", 0);
  ASSERT_EQ(raw.changes.size(), 1u);
  EXPECT_FALSE(raw.changes[0].normalized);
}

}  // namespace
}  // namespace h0::diff

namespace h0::diff {
namespace {

// From run 17 the kernel is 2x slower while the host loop beside it is 1.5x slower: calibrated,
// the kernel changed +33%, but the machine itself moved more (+50%): reported as an unreliable
// machine, and no night fails on it.
TEST(HistoryChanges, AChangeSmallerThanTheMachinesOwnMoveIsAnUnreliableMachine) {
  const std::vector<store::RunData> runs = with_calibration(across_stacks(20, 17, 2.0, 8), 17, 1.5);
  const HistoryReport h = history(runs, "*", 0);
  ASSERT_EQ(h.changes.size(), 1u) << h.to_text(false);
  EXPECT_TRUE(h.changes[0].normalized);
  EXPECT_NEAR(h.changes[0].change, 1.0 / 3, 0.03);
  EXPECT_NEAR(h.changes[0].calibration_change, 0.5, 1e-9);
  EXPECT_TRUE(h.changes[0].unreliable);
  EXPECT_TRUE(h.changes[0].newest);
  EXPECT_EQ(h.new_slowdowns(), 0);
  EXPECT_NE(h.to_text(false).find("unreliable machine  cpu  ops/matmul[64]"), std::string::npos)
      << h.to_text(false);
}

}  // namespace
}  // namespace h0::diff
