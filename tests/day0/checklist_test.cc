// The Day-0 checklist as library code: its gates (needs, after, --keep-going, --dry-run, a family
// the executor does not model), its verdict, its run record, and the cases the op stage builds
// for a model's shapes — without running the binary.
#include "day0/checklist.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "checks/check.h"
#include "checks/coverage.h"
#include "suite/platform.h"
#include "test_util.h"

namespace h0::day0 {
namespace {

StageResult passes(Context&) { return {StageStatus::kPass, "fine", {}, {}}; }
StageResult fails(Context&) { return {StageStatus::kFail, "broken", {}, {}}; }
StageResult unmodelled(Context&) { return {StageStatus::kNotModelled, "not modelled", {}, {}}; }
StageResult not_applicable(Context&) {
  return {StageStatus::kNotApplicable, "not applicable: a text-only model", {}, {}};
}
StageResult throws(Context&) { throw InputError("model.safetensors", "bad header:\n  tensor x"); }
StageResult with_cases(Context&) {
  run::CaseOutcome ok{"m/a", "m/a", "op", {}, {}};
  ok.result.status = Status::kPass;
  run::CaseOutcome skipped{"m/b", "m/b", "op", {}, {}};
  skipped.result.status = Status::kSkip;
  skipped.result.message = "no golden";
  return judge({ok, skipped}, "op cases");
}
bool never(const Context&) { return false; }

struct Fixture {
  Options options;
  suite::Platform platform = suite::load_platform(test::source_path("configs/platforms/cpu.yaml"));
  Context ctx{options, platform};
};

std::map<std::string, StageResult> by_id(const Checklist& c) {
  std::map<std::string, StageResult> out;
  for (const auto& s : c.stages) out[s.stage.id] = s.result;
  return out;
}

TEST(Checklist, NeedsBlockAndGatesWaitForKeepGoing) {
  Fixture f;
  const std::vector<Stage> table = {
      {"a", "A", &fails, {}, {}, false},
      {"b", "B", &passes, {"a"}, {}, false},       // needs a: blocked whatever --keep-going says
      {"c", "C", &passes, {}, {"a"}, false},       // after a: blocked unless --keep-going
      {"d", "D", &passes, {}, {}, false, &never},  // not in this checklist
  };
  Checklist c = run_checklist(f.ctx, table);
  ASSERT_EQ(c.stages.size(), 3u);
  auto s = by_id(c);
  EXPECT_EQ(s["b"].status, StageStatus::kBlocked);
  EXPECT_EQ(s["b"].summary, "blocked: a did not pass");
  EXPECT_EQ(s["c"].status, StageStatus::kBlocked);
  EXPECT_EQ(std::string(c.verdict()), "not_established");

  f.options.keep_going = true;
  s = by_id(run_checklist(f.ctx, table));
  EXPECT_EQ(s["b"].status, StageStatus::kBlocked);
  EXPECT_EQ(s["c"].status, StageStatus::kPass);
}

TEST(Checklist, AnUnmodelledFamilyGatesNothingAndIsEstablishedAtTheServiceLevel) {
  Fixture f;
  const std::vector<Stage> table = {
      {"config", "config", &passes, {}, {}, false},
      {"layer", "layers", &unmodelled, {"config"}, {}, true},
      {"service", "service", &passes, {"config"}, {"layer"}, true},
  };
  const Checklist c = run_checklist(f.ctx, table);
  EXPECT_EQ(by_id(c)["service"].status, StageStatus::kPass);
  EXPECT_FALSE(c.ready());
  EXPECT_TRUE(c.service_level());
  EXPECT_EQ(std::string(c.verdict()), "service_level");

  f.options.dry_run = true;  // what needs the weights does not run
  const Checklist dry = run_checklist(f.ctx, table);
  EXPECT_EQ(by_id(dry)["service"].status, StageStatus::kNotRun);
  EXPECT_EQ(std::string(dry.verdict()), "not_established");
}

// A stage that does not apply is no pass: counted apart, gating nothing, recorded as a skip with
// its own stage status; a checklist of nothing but such stages establishes nothing.
TEST(Checklist, ANotApplicableStageIsCountedApartAndGatesNothing) {
  Fixture f;
  const std::vector<Stage> table = {
      {"config", "config", &passes, {}, {}, false},
      {"image", "image path", &not_applicable, {"config"}, {}, false},
      {"service", "service", &passes, {"config"}, {"image"}, false},
  };
  const Checklist c = run_checklist(f.ctx, table);
  EXPECT_EQ(by_id(c)["service"].status, StageStatus::kPass);
  EXPECT_EQ(c.passed, 2);
  EXPECT_EQ(c.not_applicable, 1);
  EXPECT_EQ(c.applicable(), 2);
  EXPECT_TRUE(c.ready());
  EXPECT_EQ(std::string(stage_status_name(StageStatus::kNotApplicable)), "not_applicable");
  const run::RunReport r = run_record(f.ctx, c, {}, 1);
  ASSERT_EQ(r.cases.size(), 4u);  // three stages and the verdict
  EXPECT_EQ(r.cases[1].result.status, Status::kSkip);
  EXPECT_EQ(r.cases[1].result.details["stage_status"], "not_applicable");
  EXPECT_EQ(r.cases[3].result.status, Status::kPass);
  EXPECT_EQ(r.cases[3].result.message,
            "Day-0 readiness established: 2 of 2 applicable stages passed; 1 not applicable");

  const Checklist none = run_checklist(f.ctx, {{"image", "image", &not_applicable, {}, {}, false}});
  EXPECT_FALSE(none.ready());
  EXPECT_EQ(std::string(none.verdict()), "not_established");
}

TEST(Checklist, AStageThatThrowsFailsWithTheErrorOnOneLine) {
  Fixture f;
  std::vector<size_t> heard;
  const Checklist c = run_checklist(f.ctx, {{"load", "load", &throws, {}, {}, false}},
                                    [&](size_t i, const StageRun&) { heard.push_back(i); });
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_EQ(c.stages[0].result.status, StageStatus::kFail);
  EXPECT_EQ(c.stages[0].result.summary, "model.safetensors: bad header: tensor x");
  EXPECT_EQ(heard, std::vector<size_t>{0});
}

TEST(Checklist, TheRunRecordHoldsEveryCheckAndEveryStage) {
  Fixture f;
  f.options.model = "models/m";
  const Checklist c = run_checklist(f.ctx, {{"ops", "op accuracy", &with_cases, {}, {}, false},
                                            {"x", "X", &fails, {}, {}, false}});
  EXPECT_EQ(c.stages[0].result.summary, "2 op cases, 0 failed, 1 skipped (m/b: no golden)");
  const run::RunReport r = run_record(f.ctx, c, {{"runtime", "host"}}, 1.5);
  EXPECT_EQ(r.suite_name, "day0");
  EXPECT_EQ(r.suite_file, "day0:models/m");
  std::vector<std::string> ids;
  for (const auto& o : r.cases) ids.push_back(o.id);
  EXPECT_EQ(ids,
            (std::vector<std::string>{"ops/m/a", "ops/m/b", "stage/ops", "stage/x", "verdict"}));
  EXPECT_EQ(r.cases[4].result.status, Status::kFail);
  EXPECT_EQ(r.cases[4].kind, "day0_verdict");
  EXPECT_EQ(r.cases[4].result.message,
            "Day-0 readiness NOT established: 1 of 2 stages passed; not passed: x (fail)");
  EXPECT_EQ(r.cases[3].result.details["number"], 2);
  EXPECT_EQ(r.cases[2].result.status, Status::kPass);
  EXPECT_EQ(r.cases[3].result.status, Status::kFail);
  EXPECT_EQ(r.cases[3].kind, "day0_stage");
  EXPECT_EQ(r.cases[3].result.details["verdict"], "not_established");
  EXPECT_EQ(r.cases[3].result.details["title"], "X");
  EXPECT_TRUE(r.failed());
}

TEST(Checklist, JudgeIsNotRunWhenNothingWasCompared) {
  EXPECT_EQ(judge({}, "layer cases").status, StageStatus::kNotRun);
  run::CaseOutcome skipped{"s", "s", "op", {}, {}};
  skipped.result.status = Status::kSkip;
  EXPECT_EQ(judge({skipped}, "op cases").status, StageStatus::kNotRun);
}

TEST(ParseMesh, DefaultsDpAndRefusesAnythingElse) {
  const plan::ParallelPlan p = parse_mesh("tp=8,pp=2,ep=16");
  EXPECT_EQ(p.tp, 8);
  EXPECT_EQ(p.pp, 2);
  EXPECT_EQ(p.ep, 16);
  EXPECT_EQ(p.dp, 2);  // ep 16 over tp 8
  EXPECT_EQ(parse_mesh("").tp, 1);
  for (const char* bad : {"tp=0", "tq=2", "tp", "tp=2x", "tp=2,,pp=1"})
    EXPECT_THROW(parse_mesh(bad), InputError) << bad;
}

// The op cases at tiny-llama's shapes, built as nodes: a valid suite, in the model's dtype, with
// the attrs the executor runs (numbers as numbers, not strings).
TEST(ModelShapeChecks, AreAValidSuiteAtTheModelsShapes) {
  Fixture f;
  f.ctx.model_name = "tiny-llama";
  f.ctx.arch = model::load_any_architecture(test::source_path("configs/models/tiny-llama"));
  f.ctx.model_ops = checks::ops_of_model(*f.ctx.arch);
  f.ctx.model_dtype = tensor::DType::kBF16;
  const std::vector<YAML::Node> checks = model_shape_checks(f.ctx);
  checks::register_kinds_with_suite_parser();
  const suite::Suite s = suite::suite_of_checks("day0-op-shapes", "day0 op cases", checks);
  std::map<std::string, const suite::CheckSpec*> by;
  for (const auto& c : s.checks) by[c.id] = &c;
  ASSERT_TRUE(by.count("tiny-llama/shapes/rmsnorm"));
  ASSERT_TRUE(by.count("tiny-llama/shapes/rope"));
  ASSERT_TRUE(by.count("tiny-llama/shapes/paged_attention"));
  const YAML::Node& rms = by["tiny-llama/shapes/rmsnorm"]->node;
  EXPECT_EQ(rms["dtype"].Scalar(), "bf16");
  EXPECT_EQ(rms["golden"].Scalar(), "reference");
  const nlohmann::json shape = suite::yaml_to_json("", rms["shape"]);
  EXPECT_EQ(shape, nlohmann::json({16, f.ctx.arch->text.hidden_size}));
  const nlohmann::json attrs = suite::yaml_to_json("", rms["attrs"]);
  ASSERT_TRUE(attrs.contains("eps")) << attrs;
  EXPECT_TRUE(attrs["eps"].is_number()) << attrs;
  const nlohmann::json inputs =
      suite::yaml_to_json("", by["tiny-llama/shapes/rope"]->node["inputs"]);
  EXPECT_EQ(inputs["positions"]["arange"]["step"], 1);
  size_t linears = 0;
  for (const auto& c : s.checks) linears += c.id.rfind("tiny-llama/shapes/linear/", 0) == 0;
  EXPECT_GE(linears, 2u);  // q/k/v/o and the MLP's projections, by distinct shape
}

// At DeepSeek-V3's width (its released config): the MLA latent norms' widths, the fp8 projections
// at a prefill's 16 tokens and a decode step's one, paged attention for one query after the
// prompt, and moe_experts with its table cut to what 512 MiB of bf16 experts hold (8 of 256: each
// at the model's [7168, 2048]), the cut said in the id.
TEST(ModelShapeChecks, AtARealWidthDecodeSizesLatentNormsAndABoundedExpertTable) {
  Fixture f;
  f.ctx.model_name = "deepseek-v3";
  f.ctx.arch =
      model::load_any_architecture(test::source_path("tests/data/configs/deepseek-v3.json"));
  f.ctx.model_ops = checks::ops_of_model(*f.ctx.arch);
  f.ctx.model_dtype = tensor::DType::kBF16;
  checks::register_kinds_with_suite_parser();
  const suite::Suite s =
      suite::suite_of_checks("day0-op-shapes", "day0 op cases", model_shape_checks(f.ctx));
  std::map<std::string, nlohmann::json> shape;
  for (const auto& c : s.checks) shape[c.id] = suite::yaml_to_json("", c.node["shape"]);
  const std::string p = "deepseek-v3/shapes/";
  EXPECT_EQ(shape[p + "rmsnorm/1536"], nlohmann::json({16, 1536}));  // q_a_layernorm
  EXPECT_EQ(shape[p + "rmsnorm/512"], nlohmann::json({16, 512}));    // kv_a_layernorm
  EXPECT_EQ(shape[p + "scaled_linear/7168x1536"], nlohmann::json({16, 7168, 1536}));
  EXPECT_EQ(shape[p + "scaled_linear/1x7168x1536"], nlohmann::json({1, 7168, 1536}));
  EXPECT_EQ(shape[p + "paged_attention/decode"], nlohmann::json({1, 17, 128, 128, 192, 128, 16}));
  EXPECT_EQ(shape[p + "moe_experts/8-of-256-experts"], nlohmann::json({16, 7168, 2048, 8, 8}));
  EXPECT_EQ(shape[p + "moe_experts/8-of-256-experts/decode"],
            nlohmann::json({1, 7168, 2048, 8, 8}));
  EXPECT_EQ(shape.count(p + "moe_experts"), 0u);  // never the whole table
}

}  // namespace
}  // namespace h0::day0
