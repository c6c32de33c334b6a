#include "diff/diff.h"

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

// n timings around `center` ns, spread uniformly over ±`spread` (relative), from a 32-bit LCG
// (Numerical Recipes constants) so every platform gets the same numbers.
std::vector<double> samples(double center, double spread, int n, uint32_t seed) {
  std::vector<double> out;
  uint32_t state = seed;
  for (int i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    const double unit = static_cast<double>(state) / 4294967296.0;  // [0, 1)
    out.push_back(center * (1 + spread * (2 * unit - 1)));
  }
  return out;
}

ResultData result(const std::string& case_id, const std::string& status) {
  ResultData r;
  r.case_id = case_id;
  r.check_id = case_id.substr(0, case_id.find('['));
  r.kind = "op";
  r.status = status;
  return r;
}

ProfileData steady(const std::string& name, std::vector<double> samples_ns, double median_ns = 0) {
  ProfileData p;
  p.phase = "steady";
  p.name = name;
  p.count = static_cast<int64_t>(samples_ns.size());
  p.median_ns = median_ns;
  p.samples_ns = std::move(samples_ns);
  return p;
}

RunData run(int64_t id, std::vector<ResultData> results) {
  RunData r;
  r.id = id;
  r.uuid = "uuid-" + std::to_string(id);
  r.suite = "ops-core";
  r.platform = "cpu";
  r.stack.fingerprint = id == 1 ? "aaaaaaaaaaaaaaaaaaaa" : "bbbbbbbbbbbbbbbbbbbb";
  r.stack.backend = "cpu";
  r.status = "pass";
  r.labels = {{"nightly", "2024-06-0" + std::to_string(id)}};
  r.results = std::move(results);
  return r;
}

const StatusChange* find_status(const DiffReport& d, const std::string& case_id) {
  for (const auto& c : d.statuses) {
    if (c.case_id == case_id) return &c;
  }
  return nullptr;
}

TEST(Diff, StatusFlipKinds) {
  const RunData base = run(1, {result("a", "pass"), result("b", "xfail"), result("c", "fail"),
                               result("d", "crash"), result("e", "pass"), result("f", "skip"),
                               result("g", "fail"), result("h", "pass"), result("gone", "pass")});
  const RunData head = run(2, {result("a", "fail"), result("b", "timeout"), result("c", "pass"),
                               result("d", "xfail"), result("e", "skip"), result("f", "pass"),
                               result("g", "error"), result("h", "pass"), result("fresh", "fail")});
  const DiffReport d = diff_runs(base, head, {});
  const std::pair<const char*, const char*> expected[] = {
      {"a", "regression"}, {"b", "regression"}, {"c", "fixed"},
      {"d", "fixed"},      {"e", "changed"},    {"f", "changed"},
      {"g", "changed"},    {"fresh", "new"},    {"gone", "removed"}};
  for (const auto& [id, kind] : expected) {
    const StatusChange* c = find_status(d, id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_EQ(c->kind, kind) << id;
  }
  EXPECT_EQ(find_status(d, "h"), nullptr);
  EXPECT_EQ(find_status(d, "gone")->base_status, "pass");
  EXPECT_EQ(find_status(d, "gone")->head_status, "");
  EXPECT_EQ(find_status(d, "fresh")->head_status, "fail");
  EXPECT_EQ(d.summary.compared, 8);
  EXPECT_EQ(d.summary.regressions, 2);
  EXPECT_EQ(d.summary.fixed, 2);
  EXPECT_EQ(d.summary.changed, 3);
  EXPECT_EQ(d.summary.added, 1);
  EXPECT_EQ(d.summary.removed, 1);
  EXPECT_TRUE(d.has_regression());
  // Head order first, then what only base had.
  EXPECT_EQ(d.statuses.back().case_id, "gone");
}

TEST(Diff, FailingStatuses) {
  for (const char* s : {"fail", "error", "crash", "timeout"}) EXPECT_TRUE(is_failing(s)) << s;
  for (const char* s : {"pass", "skip", "xfail", "xpass"}) EXPECT_FALSE(is_failing(s)) << s;
  // A name this build does not know counts as failing, as JUnit always treated it (base/status.h:
  // one rule; diff used to call it not failing).
  for (const char* s : {"", "other"}) EXPECT_TRUE(is_failing(s)) << s;
}

TEST(Diff, FixedAloneIsNoRegression) {
  const DiffReport d = diff_runs(run(1, {result("a", "fail")}), run(2, {result("a", "pass")}), {});
  EXPECT_FALSE(d.has_regression());
}

TEST(Diff, MetricErrorNames) {
  EXPECT_EQ(metric_error("max_abs_err", 0.5), 0.5);
  EXPECT_EQ(metric_error("logits.rmse", 0.25), 0.25);
  EXPECT_EQ(metric_error("layer.3.max_ulp", 4), 4);
  EXPECT_DOUBLE_EQ(*metric_error("cosine", 0.75), 0.25);
  EXPECT_DOUBLE_EQ(*metric_error("logits.ratio_rel_lt_1e-3", 0.875), 0.125);
  // The serving checks': a speculator accepting fewer drafts, decode drifting from prefill.
  EXPECT_DOUBLE_EQ(*metric_error("acceptance_rate", 0.8), 0.2);
  EXPECT_EQ(metric_error("kl_mean", 1e-4), 1e-4);
  EXPECT_EQ(metric_error("max_logprob_diff", 0.01), 0.01);
  EXPECT_EQ(metric_error("mean_accepted_length", 3.0), std::nullopt);
  EXPECT_EQ(metric_error("top1_agreement", 1.0), std::nullopt);
  EXPECT_EQ(metric_error("max_abs_err_extra", 1.0), std::nullopt);
}

TEST(Diff, MetricDriftWithFactorAndFloor) {
  ResultData b = result("op", "pass"), h = result("op", "pass");
  b.metrics = {{"max_abs_err", 1e-3}, {"rmse", 1e-4},     {"mismatch_count", 0},
               {"nan_mismatch", 0},   {"cosine", 0.9999}, {"out.max_rel_err", 1e-9},
               {"top1_agreement", 1}};
  h.metrics = {{"max_abs_err", 2.5e-3},      // 2.5x: drift
               {"rmse", 1.9e-4},             // 1.9x: within the factor
               {"mismatch_count", 3},        // from 0: above the floor
               {"nan_mismatch", 1.5e-6},     // from 0, but under 2 x floor
               {"cosine", 0.9990},           // 1 - cosine: 1e-4 -> 1e-3
               {"out.max_rel_err", 1.5e-6},  // under factor x floor (floor 1e-6)
               {"top1_agreement", 0}};       // not an error metric diff judges
  const DiffReport d = diff_runs(run(1, {b}), run(2, {h}), {});
  ASSERT_EQ(d.drifts.size(), 3u);
  EXPECT_EQ(d.drifts[0].metric, "max_abs_err");
  EXPECT_NEAR(d.drifts[0].factor, 2.5, 1e-12);
  EXPECT_EQ(d.drifts[1].metric, "mismatch_count");
  EXPECT_NEAR(d.drifts[1].factor, 3e6, 1e-3);  // against the floor
  EXPECT_EQ(d.drifts[2].metric, "cosine");
  EXPECT_NEAR(d.drifts[2].base_error, 1e-4, 1e-12);
  EXPECT_NEAR(d.drifts[2].head_error, 1e-3, 1e-12);
  EXPECT_EQ(d.summary.metric_drift, 3);
  EXPECT_TRUE(d.has_regression());

  DiffOptions loose;
  loose.metric_factor = 10;
  loose.metric_floor = 10;  // mismatch_count 3 is now under the floor
  const DiffReport l = diff_runs(run(1, {b}), run(2, {h}), loose);
  EXPECT_TRUE(l.drifts.empty());
  EXPECT_FALSE(l.has_regression());
}

TEST(Diff, MetricTurningNanIsDrift) {
  ResultData b = result("op", "pass"), h = result("op", "fail");
  b.metrics = {{"max_abs_err", 1e-3}};
  h.metrics = {{"max_abs_err", std::nan("")}};
  const DiffReport d = diff_runs(run(1, {b}), run(2, {h}), {});
  ASSERT_EQ(d.drifts.size(), 1u);
  EXPECT_TRUE(std::isinf(d.drifts[0].factor));
}

// base and head each with one steady row "k" of the given samples.
DiffReport perf_diff(std::vector<double> base_ns, std::vector<double> head_ns,
                     const std::string& head_details = "{}", const DiffOptions& options = {}) {
  ResultData b = result("op", "pass"), h = result("op", "pass");
  b.profiles = {steady("k", std::move(base_ns))};
  h.profiles = {steady("k", std::move(head_ns))};
  h.details_json = head_details;
  return diff_runs(run(1, {b}), run(2, {h}), options);
}

TEST(Diff, PerfRegressionOnShiftedSamples) {
  const DiffReport d = perf_diff(samples(1e6, 0.03, 20, 1), samples(1.2e6, 0.03, 20, 2));
  ASSERT_EQ(d.perf.size(), 1u);
  const PerfChange& p = d.perf[0];
  EXPECT_EQ(p.verdict, "regression");
  EXPECT_NEAR(p.change, 0.2, 0.03);
  EXPECT_LT(p.p_value, 1e-6);
  EXPECT_EQ(p.base_samples, 20u);
  EXPECT_EQ(p.threshold, 0.05);
  EXPECT_EQ(d.summary.perf_regressions, 1);
  EXPECT_TRUE(d.has_regression());

  const DiffReport faster = perf_diff(samples(1.2e6, 0.03, 20, 3), samples(1e6, 0.03, 20, 4));
  EXPECT_EQ(faster.perf[0].verdict, "improvement");
  EXPECT_EQ(faster.summary.perf_improvements, 1);
  EXPECT_FALSE(faster.has_regression());
}

TEST(Diff, LargeChangeWithoutSignificanceIsNotFlagged) {
  // Medians 100 -> 130 (+30%), but the samples overlap: scipy's exact p is 1.0.
  const DiffReport d = perf_diff({100, 60, 150, 90, 200}, {130, 50, 210, 80, 190});
  EXPECT_NEAR(d.perf[0].change, 0.3, 1e-12);
  EXPECT_GT(d.perf[0].p_value, 0.05);
  EXPECT_EQ(d.perf[0].verdict, "unchanged");
  EXPECT_FALSE(d.has_regression());
}

TEST(Diff, SignificantSmallChangeIsNotFlagged) {
  const DiffReport d = perf_diff(samples(1e6, 0.001, 20, 5), samples(1.02e6, 0.001, 20, 6));
  EXPECT_NEAR(d.perf[0].change, 0.02, 0.003);
  EXPECT_LT(d.perf[0].p_value, 1e-6);
  EXPECT_EQ(d.perf[0].verdict, "unchanged");
  EXPECT_EQ(d.summary.perf_unchanged, 1);
}

TEST(Diff, NotEnoughSamples) {
  const DiffReport d = perf_diff(samples(1e6, 0.01, 4, 7), samples(2e6, 0.01, 20, 8));
  EXPECT_EQ(d.perf[0].verdict, "not enough samples");
  EXPECT_TRUE(std::isnan(d.perf[0].p_value));
  EXPECT_EQ(d.summary.perf_not_enough_samples, 1);
  EXPECT_FALSE(d.has_regression());
  EXPECT_TRUE(d.to_json()["performance"][0]["p_value"].is_null());

  DiffOptions few;
  few.min_samples = 4;
  EXPECT_EQ(
      perf_diff(samples(1e6, 0.01, 4, 7), samples(2e6, 0.01, 4, 8), "{}", few).perf[0].verdict,
      "regression");
}

TEST(Diff, PerCheckThresholdOverride) {
  const auto base = samples(1e6, 0.03, 20, 9), slower = samples(1.2e6, 0.03, 20, 10);
  const DiffReport tolerant = perf_diff(base, slower, R"({"perf_threshold": 0.5})");
  EXPECT_EQ(tolerant.perf[0].threshold, 0.5);
  EXPECT_EQ(tolerant.perf[0].verdict, "unchanged");

  const DiffReport strict = perf_diff(samples(1e6, 0.001, 20, 11), samples(1.02e6, 0.001, 20, 12),
                                      R"({"perf_threshold": 0.01})");
  EXPECT_EQ(strict.perf[0].verdict, "regression");

  // Not a number, or not JSON: the option's threshold.
  EXPECT_EQ(perf_diff(base, slower, R"({"perf_threshold": "x"})").perf[0].threshold, 0.05);
  EXPECT_EQ(perf_diff(base, slower, "not json").perf[0].verdict, "regression");
}

TEST(Diff, OnlySteadyRowsOnBothSidesAreCompared) {
  ResultData b = result("op", "pass"), h = result("op", "pass");
  b.profiles = {steady("k", {}, 100), steady("only_base", {}, 100)};
  h.profiles = {steady("k", {}, 150), steady("only_head", {}, 100)};
  ProfileData warmup = steady("k", {}, 1000);
  warmup.phase = "warmup";
  b.profiles.push_back(warmup);
  h.profiles.push_back(warmup);
  h.profiles.back().median_ns = 5000;
  const DiffReport d = diff_runs(run(1, {b}), run(2, {h}), {});
  ASSERT_EQ(d.perf.size(), 1u);
  EXPECT_EQ(d.perf[0].name, "k");
  EXPECT_EQ(d.perf[0].base_median_ns, 100);  // no samples: the stored median
  EXPECT_EQ(d.perf[0].head_median_ns, 150);
}

TEST(Diff, GeomeanOverSteadyRows) {
  ResultData b1 = result("a", "pass"), h1 = result("a", "pass");
  ResultData b2 = result("b", "pass"), h2 = result("b", "pass");
  b1.profiles = {steady("k", {}, 100)};
  h1.profiles = {steady("k", {}, 200)};  // x2
  b2.profiles = {steady("k", {}, 800), steady("steady_decode", {}, 10)};
  b2.profiles[1].phase = "steady/decode";
  h2.profiles = {steady("k", {}, 900), b2.profiles[1]};  // x1.125, x1
  h2.profiles[1].median_ns = 10;
  const DiffReport d = diff_runs(run(1, {b1, b2}), run(2, {h1, h2}), {});
  EXPECT_EQ(d.summary.perf_rows, 3);
  EXPECT_NEAR(d.summary.geomean_ratio, std::cbrt(2.0 * 1.125), 1e-12);

  const DiffReport none =
      diff_runs(run(1, {result("a", "pass")}), run(2, {result("a", "pass")}), {});
  EXPECT_TRUE(std::isnan(none.summary.geomean_ratio));
  EXPECT_TRUE(none.to_json()["summary"]["geomean_ratio"].is_null());
}

// A diff with one of everything.
DiffReport everything() {
  ResultData b_reg = result("ops/reg", "pass"), h_reg = result("ops/reg", "fail");
  h_reg.message = "3 of 100 elements outside tolerance";
  ResultData b_drift = result("ops/drift", "pass"), h_drift = result("ops/drift", "pass");
  b_drift.metrics = {{"max_abs_err", 1e-3}};
  h_drift.metrics = {{"max_abs_err", 5e-3}};
  ResultData b_perf = result("ops/perf", "pass"), h_perf = result("ops/perf", "pass");
  b_perf.profiles = {steady("matmul[64x64]", samples(1e6, 0.02, 10, 13))};
  h_perf.profiles = {steady("matmul[64x64]", samples(1.5e6, 0.02, 10, 14))};
  return diff_runs(
      run(1, {b_reg, result("ops/fix", "error"), b_drift, b_perf, result("ops/old", "pass")}),
      run(2, {h_reg, result("ops/fix", "pass"), h_drift, h_perf, result("ops/new", "pass")}), {});
}

TEST(Diff, JsonFieldNames) {
  const nlohmann::json j = everything().to_json();
  for (const char* key : {"base", "head", "options", "statuses", "metric_drift", "performance",
                          "summary", "has_regression"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key :
       {"id", "uuid", "suite", "platform", "stack", "backend", "started_at", "status", "labels"}) {
    EXPECT_TRUE(j["head"].contains(key)) << key;
  }
  EXPECT_EQ(j["base"]["stack"], "aaaaaaaaaaaa");
  EXPECT_EQ(j["head"]["labels"]["nightly"], "2024-06-02");
  EXPECT_EQ(j["statuses"][0], (nlohmann::json{{"case_id", "ops/reg"},
                                              {"kind", "regression"},
                                              {"base_status", "pass"},
                                              {"head_status", "fail"},
                                              {"message", "3 of 100 elements outside tolerance"}}));
  for (const char* key :
       {"case_id", "metric", "base", "head", "base_error", "head_error", "factor"}) {
    EXPECT_TRUE(j["metric_drift"][0].contains(key)) << key;
  }
  for (const char* key : {"case_id", "phase", "name", "base_median_ns", "head_median_ns", "change",
                          "p_value", "base_samples", "head_samples", "threshold", "verdict"}) {
    EXPECT_TRUE(j["performance"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["performance"][0]["verdict"], "regression");
  const auto& s = j["summary"];
  EXPECT_EQ(s["compared"], 4);
  EXPECT_EQ(s["regressions"], 1);
  EXPECT_EQ(s["fixed"], 1);
  EXPECT_EQ(s["changed"], 0);
  EXPECT_EQ(s["new"], 1);
  EXPECT_EQ(s["removed"], 1);
  EXPECT_EQ(s["metric_drift"], 1);
  EXPECT_EQ(s["perf_regressions"], 1);
  EXPECT_EQ(s["perf_improvements"], 0);
  EXPECT_EQ(s["perf_unchanged"], 0);
  EXPECT_EQ(s["perf_not_enough_samples"], 0);
  EXPECT_EQ(s["perf_rows"], 1);
  EXPECT_TRUE(s["geomean_ratio"].is_number());
  EXPECT_EQ(j["options"]["min_samples"], 5);
  EXPECT_EQ(j["has_regression"], true);
}

TEST(Diff, TextSections) {
  const std::string text = everything().to_text(false);
  EXPECT_NE(
      text.find("base run 1  platform cpu  stack aaaaaaaaaaaa (cpu)  labels nightly=2024-06-01\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("head run 2  platform cpu  stack bbbbbbbbbbbb (cpu)"), std::string::npos);
  EXPECT_NE(
      text.find(
          "\nregressions (1)\n  ops/reg  pass -> fail  3 of 100 elements outside tolerance\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("\nfixed (1)\n  ops/fix  error -> pass\n"), std::string::npos);
  EXPECT_NE(text.find("\nnew (1)\n  ops/new  pass\n"), std::string::npos);
  EXPECT_NE(text.find("\nremoved (1)\n  ops/old  was pass\n"), std::string::npos);
  EXPECT_NE(text.find("\nmetric drift (1)\n  ops/drift  max_abs_err  0.001 -> 0.005  (error x5)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nperformance (1 slower, 0 faster, 0 unchanged, 0 with too few samples)\n"
                      "  slower  ops/perf  steady matmul[64x64]  "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("geomean head/base over 1 steady row: "), std::string::npos);
  EXPECT_NE(text.find("REGRESSION\n"), std::string::npos);
  EXPECT_EQ(text.find("changed ("), std::string::npos);
  EXPECT_EQ(text.find('\033'), std::string::npos);
  EXPECT_NE(everything().to_text(true).find("\033[31m"), std::string::npos);
}

TEST(Diff, TextOfIdenticalRunsHasNoSections) {
  ResultData r = result("ops/a", "pass");
  r.profiles = {steady("k", samples(1e6, 0.02, 10, 15))};
  const std::string text = diff_runs(run(1, {r}), run(2, {r}), {}).to_text(false);
  for (const char* section :
       {"regressions (", "fixed (", "new (", "removed (", "metric drift (", "performance ("}) {
    EXPECT_EQ(text.find(section), std::string::npos) << section;
  }
  EXPECT_NE(text.find("geomean head/base over 1 steady row: 1.0000 (+0.0%)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("1 case compared: 0 regressions, 0 fixed"), std::string::npos);
  EXPECT_NE(text.find(": OK\n"), std::string::npos);
}

TEST(Diff, FormatNs) {
  EXPECT_EQ(format_ns(512), "512 ns");
  EXPECT_EQ(format_ns(1234567), "1.235 ms");
  EXPECT_EQ(format_ns(2.5e9), "2.5 s");
  EXPECT_EQ(format_ns(42000), "42 us");
}

// An eval case answered item by item on both sides: 200 items, half right in base; the head
// loses `lost` of the right ones and gains `gained` of the wrong ones.
ResultData eval_result(int lost, int gained) {
  ResultData r = result("tiny/facts", "pass");
  r.kind = "eval";
  for (int i = 0; i < 200; ++i) {
    bool right = i < 100;
    if (i < lost) right = false;
    if (i >= 100 && i < 100 + gained) right = true;
    r.eval_items.push_back(
        {"q" + std::to_string(i), right == (i < 100) ? "a" : "b", right, "", -1, "{}"});
  }
  return r;
}

TEST(DiffAccuracy, ASignificantDropOfItemsIsARegressionNamingThem) {
  const DiffReport d = diff_runs(run(1, {eval_result(0, 0)}), run(2, {eval_result(8, 0)}), {});
  ASSERT_EQ(d.accuracy.size(), 1u);
  const AccuracyChange& a = d.accuracy[0];
  EXPECT_EQ(a.items, 200);
  EXPECT_EQ(a.lost, 8);
  EXPECT_NEAR(a.p_value, 0.0078125, 1e-12);
  EXPECT_EQ(a.verdict, "regression");
  EXPECT_EQ(a.flipped.size(), 8u);
  EXPECT_EQ(a.flipped[0], "q0");
  EXPECT_TRUE(d.has_regression());
  EXPECT_EQ(d.to_json()["summary"]["accuracy_regressions"], 1);
  const std::string text = d.to_text(false);
  EXPECT_NE(text.find("regression  tiny/facts  0.500 -> 0.460 on 200 items, 8 lost, 0 gained"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("answers changed: q0, q1"), std::string::npos) << text;
}

TEST(DiffAccuracy, FlipsBothWaysAreListedButNoRegression) {
  const DiffReport d = diff_runs(run(1, {eval_result(0, 0)}), run(2, {eval_result(4, 4)}), {});
  ASSERT_EQ(d.accuracy.size(), 1u);
  EXPECT_EQ(d.accuracy[0].verdict, "unchanged");
  EXPECT_EQ(d.accuracy[0].flipped.size(), 8u);
  EXPECT_FALSE(d.has_regression());
  // Three items lost of 200: not significant (p = 0.25), not a regression.
  EXPECT_EQ(
      diff_runs(run(1, {eval_result(0, 0)}), run(2, {eval_result(3, 0)}), {}).accuracy[0].verdict,
      "unchanged");
}

}  // namespace
}  // namespace h0::diff
