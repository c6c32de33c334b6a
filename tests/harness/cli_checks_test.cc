// `harness run`, `list`, `op` and `coverage` end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "checks/input_synth.h"
#include "harness/cli_util.h"
#include "io/safetensors_reader.h"
#include "io/safetensors_writer.h"
#include "ops/op.h"

namespace h0 {
namespace {

using test::run_harness;

TEST(CliChecks, ListExpandsTheMatrixAndFilters) {
  const auto all = run_harness("list suites/ops.yaml");
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("rmsnorm[dtype=bf16,shape=7x4096]\n"), std::string::npos);
  const auto some = run_harness("list suites/ops.yaml --filter 'rmsnorm[*-*bf16*' --json");
  const auto j = nlohmann::json::parse(some.out);
  EXPECT_EQ(j["cases"], (std::vector<std::string>{
                            "rmsnorm[dtype=f32,shape=1x64]", "rmsnorm[dtype=f32,shape=7x4096]",
                            "rmsnorm[dtype=f16,shape=1x64]", "rmsnorm[dtype=f16,shape=7x4096]"}));
}

TEST(CliChecks, RunWritesJsonAndFailsOnAFault) {
  test::TempDir dir;
  std::ofstream(dir.file("faulty.yaml"))
      << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
      << ", options: {op: softmax, fault: scale, magnitude: 0.01}}\n";
  const auto r = run_harness("run suites/ops.yaml --filter 'softmax[*:add[*' --platform " +
                             dir.file("faulty.yaml") + " --json " + dir.file("out.json"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("FAIL    softmax[dtype=f32,shape=4x32x64]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS    add[dtype=f32,shape=7x4096]"), std::string::npos) << r.out;
  std::ifstream in(dir.file("out.json"));
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["run"]["platform"], "faulty");
  EXPECT_EQ(j["counts"]["fail"], 3);
  EXPECT_EQ(j["counts"]["pass"], 3);
  for (const auto& c : j["cases"]) {
    EXPECT_EQ(c["status"], c["check"] == "softmax" ? "fail" : "pass") << c["id"];
    EXPECT_EQ(c["details"]["route"], "native");
    EXPECT_FALSE(c["profile"].empty());
  }
}

// A platform that never returns costs its case only, killed at --timeout, said in seconds as
// given ("within 1 s", not "within 1.000000 s").
TEST(CliChecks, AHangingOpIsKilledAtTheTimeout) {
  test::TempDir dir;
  std::ofstream(dir.file("hang.yaml")) << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
                                       << ", options: {op: softmax, fault: hang}}\n";
  const auto r = run_harness(
      "run suites/ops.yaml --filter 'softmax[dtype=f32,shape=4x32x64]' "
      "--no-db --timeout 1 --platform " +
      dir.file("hang.yaml"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("TIMEOUT softmax[dtype=f32,shape=4x32x64]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no answer within 1 s; killed"), std::string::npos) << r.out;
}

TEST(CliChecks, RunRejectsAMalformedSuiteBeforeRunning) {
  test::TempDir dir;
  std::ofstream(dir.file("s.yaml"))
      << "suite: s\nchecks:\n  - {id: a, kind: op, op: rmsnorm, shape: [2, 8], attrs: {eps: x}}\n";
  const auto r = run_harness("run " + dir.file("s.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "harness: error: " + dir.file("s.yaml") +
                       ":3:64: op 'rmsnorm': attr 'eps' must be a number, got \"x\"\n");
  EXPECT_EQ(r.out, "");
}

// The replay tool: the same inputs through two platforms, outputs compared by `harness compare`.
TEST(CliChecks, OpReplaysInputsOnAnyPlatform) {
  test::TempDir dir;
  const auto x = checks::synthesize({{"normal", {{"std", 2}}}}, tensor::DType::kF32, {5, 64}, 1, 0);
  const auto w = checks::synthesize({{"uniform", {{"low", 0.5}, {"high", 1.5}}}},
                                    tensor::DType::kF32, {64}, 1, 1);
  io::write_safetensors(dir.file("in.safetensors"), {{"in0", x}, {"in1", w}});
  const std::string in = " --inputs " + dir.file("in.safetensors") + " --attrs '{\"eps\": 1e-5}'";
  const auto ref =
      run_harness("op rmsnorm" + in + " --platform configs/platforms/reference.yaml --out " +
                  dir.file("ref.safetensors"));
  ASSERT_EQ(ref.code, 0) << ref.err;
  EXPECT_NE(ref.out.find("rmsnorm on reference (native)"), std::string::npos) << ref.out;
  const auto cpu =
      run_harness("op rmsnorm" + in + " --out " + dir.file("cpu.safetensors") + " --json");
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_EQ(nlohmann::json::parse(cpu.out)["backend"], "cpu");
  const auto cmp =
      run_harness("compare " + dir.file("cpu.safetensors") + " " + dir.file("ref.safetensors"));
  EXPECT_EQ(cmp.code, 0) << cmp.out;
  const auto out = io::SafetensorsFile::open(dir.file("cpu.safetensors"));
  EXPECT_EQ(out.metadata().at("op"), "rmsnorm");
  EXPECT_EQ(out.get("out0").shape(), (tensor::Shape{5, 64}));

  const auto missing = run_harness("op rmsnorm --inputs " + dir.file("ref.safetensors") +
                                   " --out " + dir.file("x.safetensors"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no tensor 'in0' or 'x' (input 0 of rmsnorm); it holds 'out0'"),
            std::string::npos)
      << missing.err;
  const auto f64 =
      run_harness("op rmsnorm" + in + " --out " + dir.file("y.safetensors") + " --fallback none");
  EXPECT_EQ(f64.code, 0);  // f32 is native on cpu
}

// The replay docs/cli.md describes: a case `run --dump-cases` wrote (its inputs by operand name,
// x and w) through `op`, its output matching the case's golden.
TEST(CliChecks, OpReplaysACaseRunDumpCasesWrote) {
  test::TempDir dir;
  const auto dumped = run_harness(
      "run suites/ops.yaml --filter 'rmsnorm[dtype=f32,shape=1x64]' "
      "--dump-cases " +
      dir.file("cases") + " --no-run");
  ASSERT_EQ(dumped.code, 0) << dumped.err;
  std::ifstream in(dir.file("cases/cases.json"));
  const auto c = nlohmann::json::parse(in)["cases"].at(0);
  ASSERT_EQ(c["inputs"], (std::vector<std::string>{"x", "w"}));
  const auto r = run_harness(
      "op rmsnorm --inputs " + dir.file("cases/" + c["inputs_file"].get<std::string>()) +
      " --attrs '" + c["attrs"].dump() + "' --out " + dir.file("out.safetensors"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto x =
      io::SafetensorsFile::open(dir.file("cases/" + c["inputs_file"].get<std::string>()));
  const auto y = io::SafetensorsFile::open(dir.file("out.safetensors")).get("out0");
  EXPECT_EQ(y.shape(), x.get("x").shape());
  // rmsnorm by hand on the dumped x and w: the op read the named tensors, not zeros.
  const auto xs = x.get("x"), ws = x.get("w");
  double ss = 0;
  for (int64_t i = 0; i < 64; ++i) ss += double(xs.data_as<float>()[i]) * xs.data_as<float>()[i];
  const double inv = 1 / std::sqrt(ss / 64 + 1e-5);
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_NEAR(y.data_as<float>()[i], xs.data_as<float>()[i] * inv * ws.data_as<float>()[i], 1e-4);
}

// A model's needs are the ops the executor binds for its architecture (model::model_ops): the
// tiny Qwen3-MoE runs no dense MLP (no swiglu) and no vision tower; a family the executor does
// not model gets the whole catalogue and a note saying why.
TEST(CliChecks, CoverageShowsRoutesAndAModelsNeeds) {
  const auto r = run_harness("coverage --json --model configs/models/tiny-qwen3-moe");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["model_dtype"], "bf16");
  std::set<std::string> ops;
  for (const auto& row : j["ops"]) {
    ops.insert(row["op"]);
    EXPECT_EQ(row["model"], "native") << row["op"];
    EXPECT_EQ(row["f64"], "host") << row["op"];  // cpu has no f64 kernels: the host reference
  }
  EXPECT_EQ(
      ops, (std::set<std::string>{"add", "argmax", "embedding", "linear", "moe_experts", "moe_gate",
                                  "paged_attention", "rmsnorm", "rope", "sample"}));
  const auto unmodelled = run_harness("coverage --json --model tests/data/models/tiny-olmo2");
  ASSERT_EQ(unmodelled.code, 0) << unmodelled.err;
  EXPECT_NE(unmodelled.err.find("family olmo2 is not modelled by the executor"), std::string::npos)
      << unmodelled.err;
  EXPECT_EQ(nlohmann::json::parse(unmodelled.out)["ops"].size(),
            ops::all_ops().size());  // every op of the catalogue;
  const auto table = run_harness("coverage --platform configs/platforms/reference.yaml");
  EXPECT_NE(table.out.find("backend reference (built-in)"), std::string::npos);
}

}  // namespace
}  // namespace h0
