// Op checks end to end through the runner: malformed op fields with their exact locations,
// determinism, and the faulty plugin's faults caught as the right status for the right case.
#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "compare/tolerance.h"
#include "run/runner.h"
#include "test_util.h"

namespace h0::checks {
namespace {

std::string write(const test::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

std::string platform_yaml(const std::string& backend_line) {
  return "platform: test\n" + backend_line + "\ncase_timeout: 60s\n";
}

// The message loading + preparing `suite_text` fails with ("" if none).
std::string prepare_error(const std::string& suite_text) {
  test::TempDir dir;
  const std::string suite_path = write(dir, "s.yaml", suite_text);
  const std::string platform_path = write(dir, "p.yaml", platform_yaml("backend: reference"));
  try {
    register_kinds_with_suite_parser();
    const auto s = suite::load_suite(suite_path);
    run::RunOptions o;
    o.run = false;
    o.dump_dir = dir.file("dump");
    run::run_suite(s, suite::load_platform(platform_path), o, nullptr);
  } catch (const InputError& e) {
    std::string m = e.what();
    return m.substr(m.find("s.yaml"));
  }
  return "";
}

TEST(OpCheck, MalformedFieldsNameTheirPlace) {
  const std::string head = "suite: t\nchecks:\n  - id: a\n    kind: op\n";
  EXPECT_EQ(prepare_error(head + "    op: rmsnrom\n    shape: [2, 8]\n"),
            "s.yaml:5:9: op 'rmsnrom': unknown op (expected one of matmul, linear, linear_widen, "
            "embedding, add, "
            "mul, rmsnorm, "
            "layernorm, rmsnorm_gated, rope, softmax, silu, sigmoid, gelu, swiglu, attention, "
            "paged_attention, lightning_indexer, "
            "sparse_attention, causal_conv1d, gated_delta_rule, gdn_gating, moe_gate, moe_experts, "
            "patch_embed, quantize, dequantize, dequantize_mxfp4, scaled_linear, argmax, sample)");
  EXPECT_EQ(prepare_error(head + "    op: rmsnorm\n    shape: [2, 8]\n    attrs: {eps: tiny}\n"),
            "s.yaml:7:18: op 'rmsnorm': attr 'eps' must be a number, got \"tiny\"");
  EXPECT_EQ(
      prepare_error(head + "    op: rmsnorm\n    shape: [2, 8]\n    attrs: {epsilon: 1.0e-6}\n"),
      "s.yaml:7:13: op 'rmsnorm': unknown attr 'epsilon' (expected eps, offset)");
  EXPECT_EQ(prepare_error(head + "    op: rope\n    shape: [2, 2, 8]\n    attrs: {style: llama}\n"),
            "s.yaml:7:20: op 'rope': attr 'style' must be one of neox|gptj, got \"llama\"");
  EXPECT_EQ(prepare_error(head + "    op: rmsnorm\n    shape: [2, 8, 3]\n"),
            "s.yaml:6:12: shape has 3 dims but rmsnorm takes at most 2 (T, D)");
  EXPECT_EQ(prepare_error(head + "    op: rmsnorm\n    shape: [2]\n"),
            "s.yaml:6:12: op 'rmsnorm': missing dim 'D'");
  EXPECT_EQ(prepare_error(head + "    op: rmsnorm\n    shape: [2, 8]\n    dtype: i32\n"),
            "s.yaml:7:12: dtype must be one of f64, f32, bf16, f16, got 'i32'");
  EXPECT_EQ(
      prepare_error(head + "    op: rmsnorm\n    shape: [2, 8]\n    inputs: {y: {normal: {}}}\n"),
      "s.yaml:7:14: op 'rmsnorm' has no input 'y'");
  EXPECT_EQ(
      prepare_error(head + "    op: rmsnorm\n    shape: [2, 8]\n    inputs: {x: {gauss: {}}}\n"),
      "s.yaml:7:17: unknown distribution 'gauss' (expected normal, uniform, ints, arange, "
      "permutation, topk_ids or constant)");
  EXPECT_EQ(prepare_error(head + "    op: linear\n    shape: [2, 8, 4]\n    with: [bias, scale]\n"),
            "s.yaml:7:18: op 'linear' has no optional operand 'scale'");
  EXPECT_EQ(
      prepare_error(head +
                    "    op: rmsnorm\n    shape: [2, 8]\n    tolerance: {cosine_minimum: 0.9}\n"),
      "s.yaml:7:16: unknown key 'cosine_minimum' (expected preset, rtol, atol or " +
          compare::threshold_keys() + ")");
  EXPECT_EQ(prepare_error(head + "    op: rmsnorm\n    shape: [2, 8]\n    fallback: maybe\n"),
            "s.yaml:7:15: fallback must be none, decompose or host, got 'maybe'");
  EXPECT_EQ(prepare_error(head + "    op: rmsnorm\n    shape: [2, 8]\n    perf_threshold: -1\n"),
            "s.yaml:7:21: perf_threshold must be a number >= 0 (0.05 = 5%)");
  EXPECT_EQ(prepare_error(head + "    shape: [2, 8]\n"), "s.yaml:3:5: kind op needs an `op` field");
  EXPECT_EQ(prepare_error(head + "    op: rmsnorm\n    shape: [2, 8]\n"), "");
}

const char* kSmallSuite = R"(suite: small
defaults: {golden: reference, repeats: 2, inputs: {seed: 3}}
checks:
  - {id: rmsnorm, kind: op, op: rmsnorm, shape: [4, 64]}
  - {id: rope, kind: op, op: rope, shape: [4, 2, 16], attrs: {style: gptj}}
  - {id: softmax, kind: op, op: softmax, shape: [4, 33]}
  - {id: attention, kind: op, op: attention, shape: [3, 7, 4, 2, 16]}
  - {id: linear, kind: op, op: linear, shape: [3, 64, 8]}
  - {id: add, kind: op, op: add, shape: [4, 16]}
)";

run::RunReport run_small(const std::string& backend_line, double timeout_s = 0) {
  test::TempDir dir;
  register_kinds_with_suite_parser();
  const auto s = suite::load_suite(write(dir, "s.yaml", kSmallSuite));
  const auto p = suite::load_platform(write(dir, "p.yaml", platform_yaml(backend_line)));
  run::RunOptions o;
  o.timeout_s = timeout_s;
  return run::run_suite(s, p, o, nullptr);
}

std::map<std::string, Status> statuses(const run::RunReport& r) {
  std::map<std::string, Status> out;
  for (const auto& c : r.cases) out[c.id] = c.result.status;
  return out;
}

TEST(OpCheck, ReferencePassesAndRunsAreIdentical) {
  const run::RunReport a = run_small("backend: reference"), b = run_small("backend: reference");
  ASSERT_EQ(a.cases.size(), 6u);
  for (size_t i = 0; i < a.cases.size(); ++i) {
    EXPECT_EQ(a.cases[i].result.status, Status::kPass)
        << a.cases[i].id << ": " << a.cases[i].result.message;
    for (const auto& [name, value] : a.cases[i].result.metrics) {
      if (name.find("ms") != std::string::npos || name == "gbps" || name == "gflops") continue;
      bool found = false;
      for (const auto& [n2, v2] : b.cases[i].result.metrics) {
        if (n2 == name) {
          found = true;
          EXPECT_EQ(value, v2) << a.cases[i].id << " " << name;
        }
      }
      EXPECT_TRUE(found) << name;
    }
  }
  EXPECT_EQ(a.stack["runtime"], "reference");
  EXPECT_FALSE(a.failed());
}

const char* kTargets[] = {"rmsnorm", "rope", "softmax", "attention", "linear"};

// Each accuracy fault on each target op fails exactly that case; add (never targeted) passes.
TEST(OpCheck, FaultyPluginAccuracyFaultsFailTheRightCase) {
  for (const char* fault : {"scale", "nan", "bf16_truncate"}) {
    for (const char* op : kTargets) {
      const run::RunReport r =
          run_small(std::string("backend: {lib: ") + H0_FAULTY_PLUGIN + ", options: {op: " + op +
                    ", fault: " + fault + ", magnitude: 0.01}}");
      for (const auto& [id, status] : statuses(r)) {
        EXPECT_EQ(status, id == op ? Status::kFail : Status::kPass)
            << fault << " on " << op << ": case " << id;
      }
      EXPECT_TRUE(r.failed());
    }
  }
}

// A crash or a hang costs the targeted case only; the run goes on in a new worker.
TEST(OpCheck, FaultyPluginCrashAndHangAreIsolated) {
  for (const char* op : {"rope", "attention"}) {
    const run::RunReport crash = run_small(std::string("backend: {lib: ") + H0_FAULTY_PLUGIN +
                                           ", options: {op: " + op + ", fault: crash}}");
    for (const auto& [id, status] : statuses(crash))
      EXPECT_EQ(status, id == op ? Status::kCrash : Status::kPass) << id;
    for (const auto& c : crash.cases) {
      if (c.id == op) {
        EXPECT_EQ(c.result.message, "the platform's process killed by signal 6 (Aborted)");
      }
    }
    const run::RunReport hang = run_small(std::string("backend: {lib: ") + H0_FAULTY_PLUGIN +
                                              ", options: {op: " + op + ", fault: hang}}",
                                          2.0);
    for (const auto& [id, status] : statuses(hang))
      EXPECT_EQ(status, id == op ? Status::kTimeout : Status::kPass) << id;
  }
}

// `slow` changes no number: accuracy passes; the slowdown is for the cross-run diff to find.
TEST(OpCheck, FaultyPluginSlowKeepsResultsCorrect) {
  const run::RunReport r = run_small(std::string("backend: {lib: ") + H0_FAULTY_PLUGIN +
                                     ", options: {op: softmax, fault: slow, factor: 1.3}}");
  for (const auto& [id, status] : statuses(r)) EXPECT_EQ(status, Status::kPass) << id;
}

}  // namespace
}  // namespace h0::checks
