// `harness run` against a scripted fake OpenAI server (tests/service/fake_openai_server.cc)
// started by the platform's `service:` section: every way a service goes wrong is a failing
// case with its evidence, the run goes on and nothing hangs; a server that is nondeterministic
// under concurrency fails the determinism check; the API key is sent and never kept.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli_util.h"

namespace h0::test {
namespace {

namespace fs = std::filesystem;

class ServiceCli : public ::testing::Test {
 protected:
  // A platform whose service is the fake server in `mode` (extra flags appended).
  std::string platform(const std::string& mode, const std::string& extra = "",
                       const std::string& service_extra = "") {
    const std::string path = dir_.file("fake-" + mode + ".yaml");
    std::ofstream(path)
        << "platform: fake-" << mode << "\nbackend: reference\nisolation: process\n"
        << "service:\n  start: \"" << H0_FAKE_SERVER << " --port {port} --mode " << mode << extra
        << "\"\n"
        << "  health: /health\n  startup_timeout: 2s\n  stop_grace: 1s\n  request_timeout: 2s\n"
        << service_extra;
    return path;
  }

  // A suite of the named checks (YAML text of `checks:` entries).
  std::string suite(const std::string& checks) {
    const std::string path = dir_.file("suite.yaml");
    std::ofstream(path) << "suite: fake\nchecks:\n" << checks;
    return path;
  }

  // Runs the suite, JSON into out.json; returns the cases by id.
  nlohmann::json run(const std::string& suite_path, const std::string& platform_path, Result* r,
                     const std::string& extra = "") {
    *r = run_harness("run " + suite_path + " --platform " + platform_path + " --no-db --json " +
                     dir_.file("out.json") + " --service-logs " + dir_.file("logs") + " " + extra);
    nlohmann::json by_id = nlohmann::json::object();
    std::ifstream in(dir_.file("out.json"));
    if (!in) return by_id;
    const nlohmann::json run_json = nlohmann::json::parse(in);
    for (const auto& c : run_json["cases"]) by_id[c["id"].get<std::string>()] = c;
    return by_id;
  }

  TempDir dir_;
};

const char* kText =
    "  - id: text\n    kind: e2e_text\n    model: configs/models/tiny-llama\n    prompt: hello\n"
    "    max_tokens: 8\n    expect: {min_tokens: 1}\n";
const char* kStreamed =
    "  - id: streamed\n    kind: e2e_text\n    model: configs/models/tiny-llama\n    prompt: "
    "hello\n"
    "    stream: true\n    max_tokens: 8\n    expect: {min_tokens: 1}\n";
const char* kPlan =
    "  - id: plan\n    kind: plan\n    model: configs/models/tiny-llama\n    device_memory: 8GiB\n";

TEST_F(ServiceCli, AHealthyServicePassesStreamedAndNot) {
  Result r;
  auto cases =
      run(suite(std::string(
                    "  - id: service\n    kind: service\n    model: configs/models/tiny-llama\n") +
                kText),
          platform("ok"), &r);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(cases["service"]["status"], "pass") << cases.dump(1);
  EXPECT_EQ(cases["text"]["status"], "pass") << cases.dump(1);
  EXPECT_NE(cases["text"]["message"].get<std::string>().find("streamed == not streamed"),
            std::string::npos);
  EXPECT_TRUE(cases["text"]["metrics"].contains("ttft_ms")) << cases["text"].dump(1);
}

TEST_F(ServiceCli, AServiceThatNeverBecomesHealthyFailsItsCasesAndTheRunGoesOn) {
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  auto cases =
      run(suite(std::string(
                    "  - id: service\n    kind: service\n    model: configs/models/tiny-llama\n") +
                kText + kPlan),
          platform("never_healthy"), &r);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(cases["service"]["status"], "fail");
  EXPECT_NE(cases["service"]["message"].get<std::string>().find("not healthy"), std::string::npos)
      << cases.dump(1);
  EXPECT_EQ(cases["text"]["status"], "fail");
  EXPECT_NE(cases["text"]["message"].get<std::string>().find("the service is not running"),
            std::string::npos);
  EXPECT_EQ(cases["plan"]["status"], "pass");  // the run went on
}

TEST_F(ServiceCli, EveryBrokenResponseIsAClearFailure) {
  const std::pair<const char*, const char*> modes[] = {
      {"die_mid_stream", ""},         {"malformed_sse", "protocol"}, {"http_500", "http_error 500"},
      {"http_429", "http_error 429"}, {"slow_tokens", "timeout"},    {"no_done", "protocol"}};
  for (const auto& [mode, words] : modes) {
    SCOPED_TRACE(mode);
    Result r;
    const auto t0 = std::chrono::steady_clock::now();
    auto cases = run(suite(std::string(kStreamed) + kPlan), platform(mode), &r);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_EQ(cases["streamed"]["status"], "fail") << cases.dump(1);
    EXPECT_NE(cases["streamed"]["message"].get<std::string>().find(words), std::string::npos)
        << cases["streamed"].dump(1);
    EXPECT_EQ(cases["plan"]["status"], "pass");
  }
}

TEST_F(ServiceCli, DeterminismCatchesAServerThatChangesUnderConcurrency) {
  const std::string check =
      "  - id: determinism\n    kind: determinism\n    model: configs/models/tiny-llama\n    "
      "prompt: hello\n"
      "    max_tokens: 8\n    repeats: 2\n    concurrency: 3\n    rounds: 1\n";
  Result r;
  auto cases = run(suite(check), platform("ok"), &r);
  EXPECT_EQ(cases["determinism"]["status"], "pass") << cases.dump(1);
  cases = run(suite(check), platform("nondeterministic"), &r);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(cases["determinism"]["status"], "fail") << cases.dump(1);
  const std::string message = cases["determinism"]["message"];
  EXPECT_NE(message.find("round 1"), std::string::npos) << message;
  EXPECT_NE(message.find("position 3"), std::string::npos) << message;
  EXPECT_EQ(cases["determinism"]["details"]["first_difference"], 3);
}

TEST_F(ServiceCli, LoadReportsPercentilesAndGoodput) {
  const std::string check =
      "  - id: load\n    kind: e2e_load\n    model: configs/models/tiny-llama\n    prompt: hello\n"
      "    max_tokens: 8\n    requests: 12\n    concurrency: 4\n    slo: {ttft_ms: 5000, tpot_ms: "
      "1000}\n"
      "    min_goodput: 0.9\n"
      "  - id: poisson\n    kind: e2e_load\n    model: configs/models/tiny-llama\n    prompt: "
      "hello\n"
      "    max_tokens: 4\n    requests: 6\n    rate: 50\n    slo: {ttft_ms: 0.001}\n    "
      "min_goodput: 0.5\n";
  Result r;
  auto cases = run(suite(check), platform("ok"), &r);
  EXPECT_EQ(cases["load"]["status"], "pass") << cases.dump(1);
  for (const char* m : {"ttft_p50_ms", "ttft_p99_ms", "tpot_p90_ms", "itl_p99_ms", "e2e_p50_ms",
                        "output_tokens_per_s", "goodput_fraction"}) {
    EXPECT_TRUE(cases["load"]["metrics"].contains(m)) << m;
  }
  EXPECT_DOUBLE_EQ(cases["load"]["metrics"]["goodput_fraction"].get<double>(), 1.0);
  // An SLO no request can meet: goodput 0, below min_goodput.
  EXPECT_EQ(cases["poisson"]["status"], "fail");
  EXPECT_NE(cases["poisson"]["message"].get<std::string>().find("below min_goodput"),
            std::string::npos);
}

TEST_F(ServiceCli, TheApiKeyIsSentAndKeptNowhere) {
  const std::string key = "sk-h0-test-5f1e0c9a7d";
  const std::string auth = dir_.file("auth.txt");
  const std::string p = platform("ok", " --auth-file " + auth, "  api_key_env: H0_TEST_API_KEY\n");
  const std::string s = suite(
      std::string("  - id: service\n    kind: service\n    model: configs/models/tiny-llama\n") +
      kText + kStreamed);
  const Result r = run_harness("run " + s + " --platform " + p + " --db " + dir_.file("r.db") +
                                   " --json " + dir_.file("out.json") + " --junit " +
                                   dir_.file("out.xml") + " --service-logs " + dir_.file("logs"),
                               "H0_TEST_API_KEY=" + key + " ");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(read_file(auth).find("Bearer " + key), std::string::npos)
      << "the server did not receive the key";
  std::string everything = r.out + r.err + read_file(dir_.file("out.json")) +
                           read_file(dir_.file("out.xml")) + read_file(dir_.file("r.db"));
  for (const auto& e : fs::recursive_directory_iterator(dir_.file("logs")))
    everything += read_file(e.path().string());
  EXPECT_EQ(everything.find(key), std::string::npos) << "the API key was written somewhere";
  EXPECT_NE(everything.find("fake"), std::string::npos);  // the outputs were read at all
}

}  // namespace
}  // namespace h0::test
