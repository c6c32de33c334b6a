// Day-0 on the families whose architecture the harness reads exactly but whose new layers the
// executor does not run yet (Architecture::executor_gap): a tiny DeepSeek-V3.2 checkpoint
// written by transformers (golden/tools/gen_tiny_hf_models.py). The config, coverage,
// memory plan, load and op stages run and pass — the counts equal transformers' num_parameters(),
// the checkpoint's tensors equal the inventory — the executor stages say why they did not run,
// never ✓, and the embedded service's refusal reaches the service stage's message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/cli_util.h"

namespace h0 {
namespace {

using test::run_harness;
using test::stages_of;

struct Hybrid {
  const char* name;
  int64_t hf_parameters;  // printed by gen_tiny_hf_models.py (transformers' own count)
  const char* gap;        // what the stages that need the executor say it does not run
  std::vector<std::string> own_ops;  // the catalogue ops of its new layers, in the coverage stage
};

class Day0Hybrid : public ::testing::TestWithParam<Hybrid> {};

TEST_P(Day0Hybrid, ExecutorStagesSayWhyTheRestRun) {
  const Hybrid& h = GetParam();
  test::TempDir dir;
  const auto r = run_harness("day0 --json --no-db --model " + test::source_path(std::string("tests/data/models/") + h.name) +
                             " --out " + dir.file("out"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;  // the embedded service cannot serve it: not established
  auto stages = stages_of(r.out);
  EXPECT_EQ(stages["config"]["details"]["parameters"].get<int64_t>(), h.hf_parameters);
  for (const char* id : {"config", "coverage", "memory_plan", "load", "op_accuracy"}) {
    EXPECT_EQ(stages[id]["status"], "pass") << id << ": " << stages[id]["summary"];
  }
  for (const std::string& op : h.own_ops) {
    EXPECT_EQ(stages["coverage"]["details"]["routes"].value(op, ""), "native") << op;
  }
  for (const char* id : {"layer_accuracy", "model"}) {
    EXPECT_EQ(stages[id]["status"], "not_modelled") << id;
    EXPECT_NE(stages[id]["summary"].get<std::string>().find(h.gap), std::string::npos) << stages[id]["summary"];
  }
  EXPECT_EQ(stages["service"]["status"], "fail");
  EXPECT_NE(stages["service"]["summary"].get<std::string>().find(h.gap), std::string::npos) << stages["service"]["summary"];
}

INSTANTIATE_TEST_SUITE_P(
    Families, Day0Hybrid,
    ::testing::Values(Hybrid{"tiny-deepseek-v32", 217056, "the executor does not run its lightning indexer",
                             {"lightning_indexer", "sparse_attention", "layernorm"}}),
    [](const auto& param_info) {
      std::string n = param_info.param.name;
      for (char& c : n) c = c == '-' ? '_' : c;
      return n;
    });

}  // namespace
}  // namespace h0
