// kind kv_capacity against the fake engine reporting its KV cache as vLLM 0.32 does (its /metrics
// vllm:cache_config_info labels, its "CPU KV cache size: N tokens" log line): the plan's tokens
// for the engine's KV memory agree when the dtype is the engine's; a wrong dtype or a smaller
// cache is a finding with both numbers; an engine that reports nothing is not exercised.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli_util.h"

namespace h0::test {
namespace {

class KvCapacityCli : public ::testing::Test {
 protected:
  // The fake engine reporting `info` (--kv-cache-info T,M,B; "" none), `kv_source` as written.
  std::string platform(const std::string& info, const std::string& kv_source = "") {
    const std::string path = dir_.file("kv.yaml");
    std::ofstream(path) << "platform: fake-kv\nbackend: reference\ndevice_memory: 24GiB\n"
                        << "service:\n  start: \"" << H0_FAKE_SERVER << " --mode ok --port {port}"
                        << (info.empty() ? "" : " --kv-cache-info " + info) << "\"\n"
                        << "  health: /health\n  startup_timeout: 5s\n  stop_grace: 1s\n"
                        << (kv_source.empty() ? "" : "  kv_source: " + kv_source + "\n");
    return path;
  }

  nlohmann::json run_case(const std::string& platform_file, const std::string& extra = "") {
    const std::string suite = dir_.file("kv-suite.yaml");
    std::ofstream(suite) << "suite: kv\nchecks:\n  - id: c\n    kind: kv_capacity\n    model: "
                         << source_path("configs/models/tiny-llama") << "\n"
                         << extra;
    const Result r =
        run_harness("run " + suite + " --platform " + platform_file + " --no-db --json " +
                    dir_.file("out.json") + " --service-logs " + dir_.file("logs"));
    std::ifstream in(dir_.file("out.json"));
    if (!in) {
      ADD_FAILURE() << r.out << r.err;
      return {};
    }
    const nlohmann::json c = nlohmann::json::parse(in)["cases"][0];
    EXPECT_EQ(r.code, c["status"] == "fail" ? 1 : 0) << r.out << r.err;
    return c;
  }

  TempDir dir_;
};

void expect_says(const nlohmann::json& c, const std::string& words) {
  EXPECT_NE(c["message"].get<std::string>().find(words), std::string::npos) << c["message"];
}

// vLLM 0.32 serving tiny-llama in f32 with VLLM_CPU_KVCACHE_SPACE=1: 1 GiB, 1,048,576 tokens,
// blocks of 128 (tests/peers/vllm_long.sh measured these).
const char* const kVllmTinyLlama = "1048576,1073741824,128";

TEST_F(KvCapacityCli, ThePlanHoldsAgainstTheEnginesReportInItsDtype) {
  const nlohmann::json f32 = run_case(platform(kVllmTinyLlama), "    kv_dtype: f32\n");
  EXPECT_EQ(f32["status"], "pass") << f32.dump(1);
  expect_says(f32,
              "the engine reports 1,048,576 KV tokens (vllm:cache_config_info "
              "kv_cache_size_tokens), the plan 1,048,576 from the engine's 1.0 GiB of KV "
              "memory at 1,024 B/token (f32, from the case's kv_dtype)");
  // Unstated, the dtype is the model's torch_dtype (bf16): half the bytes, twice the tokens.
  const nlohmann::json bf16 = run_case(platform(kVllmTinyLlama));
  EXPECT_EQ(bf16["status"], "fail");
  expect_says(bf16, "the plan 2,097,152 from");
  expect_says(bf16, "the engine's cache_dtype is 'auto'");
  expect_says(bf16, "they differ by 50.0 % (> 10 %)");
  // An engine that allocates 30 % less than the plan expects.
  const nlohmann::json small = run_case(platform("734003,1073741824,128"), "    kv_dtype: f32\n");
  EXPECT_EQ(small["status"], "fail");
  expect_says(small, "the engine reports 734,003 KV tokens");
  EXPECT_NEAR(small["metrics"]["relative_difference"].get<double>(), 0.3, 0.001);
}

TEST_F(KvCapacityCli, ALogLineIsReadAndNoReportIsNotExercised) {
  const nlohmann::json log = run_case(
      platform(kVllmTinyLlama, "\"log:KV cache size: ([0-9,]+) tokens\""), "    kv_dtype: f32\n");
  expect_says(log,
              "the engine reports 1,048,576 KV tokens (log: \"KV cache size: 1048576 tokens\")");
  // No memory in a log line: the whole plan on the platform's 24 GiB, a finding.
  expect_says(log, "the whole plan on 24.0 GiB");
  EXPECT_EQ(log["status"], "fail");
  const nlohmann::json none = run_case(platform(""));
  EXPECT_EQ(none["status"], "skip");
  expect_says(none, "not exercised: GET /metrics: ");
  const nlohmann::json off = run_case(platform(kVllmTinyLlama, "none"));
  EXPECT_EQ(off["status"], "skip");
  expect_says(off, "not exercised: the platform's service.kv_source is none");
}

TEST_F(KvCapacityCli, ABadKvSourceIsAnInputErrorAtItsPlace) {
  const std::string file = platform(kVllmTinyLlama, "logs");
  const std::string suite = dir_.file("kv-suite.yaml");
  std::ofstream(suite) << "suite: kv\nchecks:\n  - id: c\n    kind: kv_capacity\n    model: "
                       << source_path("configs/models/tiny-llama") << "\n";
  const Result r = run_harness("run " + suite + " --platform " + file + " --no-db");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("kv.yaml:9:14: bad kv_source 'logs': expected metrics, none, or "
                       "log:REGEX"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace h0::test
