// The served load's capture of the engine's own profile (service.profiler): against the fake
// engine with vLLM's profiler endpoints, whose stop writes a trace the real vLLM 0.32 wrote
// (tests/data/traces/vllm_cpu_tiny_llama_run*): the load's result holds the engine's kernels by
// phase, stored with the run, and two runs on one stack diff clean; an engine without a profiler
// is said so, and the load still stands.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli_util.h"

namespace h0::test {
namespace {

class EngineProfileCli : public ::testing::Test {
 protected:
  // The fake engine; with `trace`, its /stop_profile writes that trace into the profile dir.
  std::string platform(const std::string& trace) {
    std::filesystem::create_directories(dir_.file("prof"));
    const std::string path = dir_.file("p.yaml");
    std::ofstream(path) << "platform: fake-vllm\nbackend: reference\n"
                        << "service:\n  start: \"" << H0_FAKE_SERVER << " --mode ok --port {port}"
                        << (trace.empty() ? ""
                                          : " --profile-trace " + source_path(trace) +
                                                " --profile-dir " + dir_.file("prof"))
                        << "\"\n  health: /health\n  startup_timeout: 5s\n  stop_grace: 1s\n"
                        << "  profiler: {dir: " << dir_.file("prof") << ", wait: 10s}\n";
    return path;
  }

  // The load case, stored in the test's store; its case JSON.
  nlohmann::json run_load(const std::string& platform_file) {
    const std::string suite = dir_.file("load.yaml");
    std::ofstream(suite) << "suite: load\nchecks:\n  - id: load\n    kind: e2e_load\n    model: "
                         << source_path("configs/models/tiny-llama")
                         << "\n    prompt: hello\n    max_tokens: 8\n    requests: 4\n"
                         << "    concurrency: 2\n";
    const Result r = run_harness("run " + suite + " --platform " + platform_file + " --db " +
                                 dir_.file("r.db") + " --label stack=a --json " +
                                 dir_.file("out.json") + " --service-logs " + dir_.file("logs"));
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    std::ifstream in(dir_.file("out.json"));
    return nlohmann::json::parse(in)["cases"][0];
  }

  TempDir dir_;
};

TEST_F(EngineProfileCli, TheLoadStoresTheEnginesKernelsAndTwoRunsOfOneStackDiffClean) {
  const nlohmann::json c1 =
      run_load(platform("tests/data/traces/vllm_cpu_tiny_llama_run1.json.gz"));
  ASSERT_EQ(c1["status"], "pass") << c1.dump(1);
  const nlohmann::json& p = c1["details"]["engine_profile"];
  EXPECT_EQ(p["stream"], "host") << p.dump(1);
  EXPECT_EQ(p["decode_steps"], 44);
  EXPECT_EQ(p["prefill_steps"], 4);
  EXPECT_EQ(p["engine"]["vllm_version"], "0.32.0");
  EXPECT_EQ(p["top"][0]["name"], "_C::onednn_mm");
  const auto rows = run_shell("sqlite3 " + dir_.file("r.db") +
                              " \"select count(*) from profiles where phase = "
                              "'steady/engine-decode'\"");
  EXPECT_GT(std::stoi(rows.out), 30) << rows.err;

  const nlohmann::json c2 =
      run_load(platform("tests/data/traces/vllm_cpu_tiny_llama_run2.json.gz"));
  ASSERT_EQ(c2["status"], "pass");
  const Result d = run_harness("diff --json --db " + dir_.file("r.db") + " --base 1 --head 2");
  const nlohmann::json diff = nlohmann::json::parse(d.out);
  int engine_rows = 0;
  for (const auto& row : diff["performance"]) {
    if (row["phase"].get<std::string>().rfind("steady/engine", 0) != 0) continue;
    ++engine_rows;
    EXPECT_NE(row["verdict"], "regression") << row.dump();
    EXPECT_NE(row["verdict"], "improvement") << row.dump();
  }
  EXPECT_GT(engine_rows, 60);
}

TEST_F(EngineProfileCli, AnEngineWithoutAProfilerIsSaidSoAndTheLoadStands) {
  const nlohmann::json c = run_load(platform(""));
  EXPECT_EQ(c["status"], "pass") << c.dump(1);
  EXPECT_NE(c["details"]["engine_profile"]["error"].get<std::string>().find(
                "not started: POST /start_profile"),
            std::string::npos)
      << c["details"].dump(1);
}

}  // namespace
}  // namespace h0::test
