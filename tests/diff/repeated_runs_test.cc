// diff_repeated_runs: timings over several runs a side, one calibrated median per run.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "diff/diff.h"

namespace h0::diff {
namespace {

// A passed run `id` on `platform`, and a passed result `case_id` for it.
store::RunData passed_run(int64_t id, const char* platform) {
  store::RunData r;
  r.id = id;
  r.platform = platform;
  r.status = "pass";
  return r;
}
store::ResultData passed_result(const char* case_id) {
  store::ResultData res;
  res.case_id = res.check_id = case_id;
  res.status = "pass";
  return res;
}

// A run with one timed case "matmul" (steady median `median_ns`, and a calibration row of
// `calibration_ns` when > 0) and a plain case "softmax" with `status`.
store::RunData run(int64_t id, double median_ns, double calibration_ns = 0,
                   const std::string& status = "pass") {
  store::RunData r = passed_run(id, "cpu");
  store::ResultData timed = passed_result("matmul");
  store::ProfileData p;
  p.phase = "steady";
  p.name = "matmul";
  p.median_ns = median_ns;
  timed.profiles = {p};
  if (calibration_ns > 0) {
    store::ProfileData cal;
    cal.phase = "calibration";
    cal.name = "host";
    cal.median_ns = calibration_ns;
    cal.samples_ns = {calibration_ns};
    timed.profiles.push_back(cal);
  }
  store::ResultData plain;
  plain.case_id = plain.check_id = "softmax";
  plain.status = status;
  r.results = {timed, plain};
  return r;
}

std::vector<store::RunData> runs(int64_t first_id, const std::vector<double>& medians_ns) {
  std::vector<store::RunData> out;
  for (size_t i = 0; i < medians_ns.size(); ++i)
    out.push_back(run(first_id + int64_t(i), medians_ns[i]));
  return out;
}

TEST(RepeatedRuns, SameStackIsUnchanged) {
  const DiffReport r =
      diff_repeated_runs(runs(1, {100, 101, 99}), runs(4, {100.5, 99.5, 101}), {}, false);
  ASSERT_EQ(r.perf.size(), 1u);
  EXPECT_EQ(r.perf[0].verdict, "unchanged");
  EXPECT_EQ(r.perf[0].test, "welch");
  EXPECT_EQ(r.perf[0].base_runs, 3u);
  EXPECT_FALSE(r.has_regression());
}

TEST(RepeatedRuns, ASlowerStackIsARegression) {
  const DiffReport r =
      diff_repeated_runs(runs(1, {100, 101, 99}), runs(4, {130, 131, 129.5}), {}, false);
  ASSERT_EQ(r.perf.size(), 1u);
  const PerfChange& p = r.perf[0];
  EXPECT_EQ(p.verdict, "regression");
  EXPECT_NEAR(p.change, 0.302, 0.005);
  EXPECT_LT(p.p_value, 0.001);
  EXPECT_NEAR(p.noise, 101.0 / 99 - 1, 1e-9);
  EXPECT_EQ(p.head_median_ns, 130);
  EXPECT_TRUE(r.has_regression());
  EXPECT_NE(r.to_text(false).find("(3 vs 3 runs, welch, noise"), std::string::npos)
      << r.to_text(false);
}

// The base side's own runs spread by 25%: a 15% change is within its noise, whatever the test.
TEST(RepeatedRuns, AChangeWithinTheBaseSidesNoiseIsNoRegression) {
  const DiffReport r =
      diff_repeated_runs(runs(1, {90, 112.5, 100}), runs(4, {115, 116, 114}), {}, false);
  ASSERT_EQ(r.perf.size(), 1u);
  EXPECT_NEAR(r.perf[0].threshold, 0.25, 1e-9);
  EXPECT_EQ(r.perf[0].verdict, "unchanged");
}

// Interleaved rounds share the machine's state: the rounds move together by ±30%, the head is
// 10% slower in each. Paired, the rounds' differences are tight and the slowdown is clear.
TEST(RepeatedRuns, PairedRoundsCancelWhatTheRoundsShare) {
  const std::vector<double> level = {1.0, 1.3, 0.8, 1.2};
  std::vector<double> b, h;
  const double jitter[] = {1.002, 0.998, 1.001, 0.999};
  for (size_t i = 0; i < level.size(); ++i) {
    b.push_back(100 * level[i]);
    h.push_back(110 * level[i] * jitter[i]);
  }
  const DiffReport paired = diff_repeated_runs(runs(1, b), runs(5, h), {}, true);
  ASSERT_EQ(paired.perf.size(), 1u);
  EXPECT_EQ(paired.perf[0].test, "paired");
  EXPECT_EQ(paired.perf[0].verdict, "regression") << paired.to_text(false);
  EXPECT_LT(paired.perf[0].p_value, 0.001);
  const DiffReport unpaired = diff_repeated_runs(runs(1, b), runs(5, h), {}, false);
  EXPECT_EQ(unpaired.perf[0].verdict, "unchanged");
  EXPECT_GT(unpaired.perf[0].p_value, 0.05);
}

// The host loop next to the kernel ran 40% slower on the head side: the calibrated kernel looks
// 29% faster, but the machine moved more than that, so the verdict says so instead.
TEST(RepeatedRuns, ACalibrationThatMovedMoreThanTheEffectIsAnUnreliableMachine) {
  std::vector<store::RunData> b, h;
  for (int i = 0; i < 3; ++i) {
    b.push_back(run(1 + i, 100 + i, 1000 + i));
    h.push_back(run(4 + i, 100 + i, 1400 + i));
  }
  const DiffReport r = diff_repeated_runs(b, h, {}, false);
  ASSERT_EQ(r.perf.size(), 1u);
  EXPECT_TRUE(r.perf[0].normalized);
  EXPECT_NEAR(r.perf[0].calibration_change, 0.4, 0.01);
  EXPECT_EQ(r.perf[0].verdict, "unreliable machine");
  EXPECT_EQ(r.summary.perf_unreliable, 1);
  EXPECT_FALSE(r.has_regression());
  EXPECT_NE(r.to_text(false).find("unreliable machine  matmul"), std::string::npos)
      << r.to_text(false);
}

// Statuses stay exact: the newest run of each side decides them.
TEST(RepeatedRuns, StatusesComeFromTheNewestRunOfEachSide) {
  auto head = runs(4, {100, 101, 99});
  head.back().results[1].status = "fail";
  const DiffReport r = diff_repeated_runs(runs(1, {100, 101, 99}), head, {}, false);
  EXPECT_EQ(r.summary.regressions, 1);
  EXPECT_TRUE(r.has_regression());
  EXPECT_EQ(r.head.id, 6);
  const DiffReport one = diff_repeated_runs(runs(1, {100}), runs(2, {130}), {}, false);
  EXPECT_EQ(one.perf[0].verdict, "not enough samples");
}

}  // namespace
}  // namespace h0::diff

namespace h0::diff {
namespace {

// A run whose served load has an engine profile: phase steady/engine-decode with kernels "mm"
// (40 % of the step), "attn" (20 %), "norm", "act" (15 % each) and "copy" (10 %), every kernel
// `scale` times the base's and "mm" `mm_scale` times more (each within ±0.8 % of that, run by
// run), and the step's "(step)" row.
store::RunData engine_run(int64_t id, double scale, double mm_scale = 1) {
  store::RunData r = passed_run(id, "vllm");
  store::ResultData load = passed_result("tiny-llama/load");
  const auto row = [](const char* name, double median_ns) {
    store::ProfileData p;
    p.phase = "steady/engine-decode";
    p.name = name;
    p.median_ns = median_ns;
    p.count = 100;
    p.total_ns = median_ns * 100;
    for (int i = 0; i < 8; ++i) p.samples_ns.push_back(median_ns * (1 + 0.001 * i));
    return p;
  };
  double step = 0;
  int k = 0;
  for (const auto& [name, ns] : std::vector<std::pair<const char*, double>>{
           {"mm", 400 * mm_scale}, {"attn", 200}, {"norm", 150}, {"act", 150}, {"copy", 100}}) {
    const double jitter = 1 + 0.004 * double((id * 7 + ++k * 3) % 5 - 2);  // each kernel its own
    load.profiles.push_back(row(name, ns * scale * jitter));
    step += ns * scale * jitter;
  }
  load.profiles.push_back(row("(step)", step));
  r.results = {load};
  return r;
}

const PerfChange* find(const DiffReport& r, const std::string& name) {
  for (const auto& p : r.perf)
    if (p.name == name) return &p;
  return nullptr;
}

// Three runs a side. A stack 1.3x slower for every kernel alike moves no kernel against the
// engine's own calibration, but its step is 1.3x slower beyond the runs' spread: named as the
// phase's (step). Runs of one stack whose steps spread 2.5x (this VM's vLLM: 1.5 to 4.1 ms a
// decode step) bound what can be seen: nothing is named. One kernel 1.3x slower is named, and
// only it: its step moved by its share, which the kernel explains.
TEST(RepeatedRuns, AnEngineSlowerForEveryKernelIsASlowerStep) {
  const std::vector<store::RunData> base = {engine_run(1, 1), engine_run(2, 1.01),
                                            engine_run(3, 0.99)};
  const DiffReport uniform = diff_repeated_runs(
      base, {engine_run(4, 1.3), engine_run(5, 1.31), engine_run(6, 1.29)}, {}, false);
  ASSERT_NE(find(uniform, "(step)"), nullptr);
  EXPECT_EQ(find(uniform, "(step)")->verdict, "regression");
  EXPECT_NEAR(find(uniform, "(step)")->change, 0.30, 0.01);
  for (const char* k : {"mm", "attn", "norm", "act", "copy"})
    EXPECT_EQ(find(uniform, k)->verdict, "unchanged") << k;

  const DiffReport noisy =
      diff_repeated_runs({engine_run(1, 1), engine_run(2, 2.5), engine_run(3, 1.1)},
                         {engine_run(4, 2.4), engine_run(5, 1.05), engine_run(6, 2.6)}, {}, false);
  EXPECT_FALSE(noisy.has_regression()) << noisy.to_text(false);

  const DiffReport one = diff_repeated_runs(
      base, {engine_run(4, 1, 1.3), engine_run(5, 1.01, 1.3), engine_run(6, 0.99, 1.3)}, {}, false);
  EXPECT_EQ(find(one, "mm")->verdict, "regression") << one.to_text(false);
  for (const char* k : {"attn", "norm", "act", "copy"})
    EXPECT_EQ(find(one, k)->verdict, "unchanged") << k;
  // 40 % of the step, 30 % slower: the step moved, but by the kernel named, so it is not named.
  EXPECT_NEAR(find(one, "(step)")->change, 0.12, 0.01);
  EXPECT_EQ(find(one, "(step)")->verdict, "unchanged");
}

}  // namespace
}  // namespace h0::diff
