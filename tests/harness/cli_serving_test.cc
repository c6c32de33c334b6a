// `harness run suites/serving.yaml` against the fake serving engine (tests/service/fake_serving.h):
// a correct engine passes every feature with its guard seen; each fault of the engine fails
// exactly its feature's case, naming the request and the first differing token; an engine that
// shows no evidence of a feature, or a platform without the variant that turns it on, gets "not
// exercised" (a skip), never a pass. Also the conversation layer's structured output.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "harness/cli_util.h"

namespace h0::test {
namespace {

class ServingCli : public ::testing::Test {
 protected:
  // The fake engine in `mode` as the base service and, unless `variants` is false, the three
  // variants that turn on chunked prefill (chunks of 32), a small KV pool and speculative decoding.
  std::string platform(const std::string& mode, bool variants = true) {
    const std::string fake = std::string(H0_FAKE_SERVER) + " --port {port} --mode " + mode +
                             " --tokenizer {model}/tokenizer.json";
    const std::string path = dir_.file("serving-" + mode + ".yaml");
    std::ofstream out(path);
    out << "platform: fake-" << mode << "\nbackend: reference\nisolation: process\n"
        << "service:\n  start: \"" << fake << "\"\n"
        << "  health: /health\n  startup_timeout: 5s\n  stop_grace: 1s\n  request_timeout: 20s\n";
    if (variants) {
      out << "  variants:\n"
          << "    chunked_prefill: {start: \"" << fake
          << " --prefill-chunk 32\", prefill_chunk: 32}\n"
          << "    preemption: {start: \"" << fake << " --kv-tokens 600\"}\n"
          << "    spec_decode: {start: \"" << fake << " --spec-tokens 3\"}\n";
    }
    return path;
  }

  // The shipped serving suite, run on `platform_path`; the cases by id (the model's name cut).
  nlohmann::json run(const std::string& platform_path, Result* r) {
    *r = run_harness("run " + source_path("suites/serving.yaml") + " --platform " + platform_path +
                     " --no-db --json " + dir_.file("out.json") + " --service-logs " +
                     dir_.file("logs"));
    nlohmann::json by_feature = nlohmann::json::object();
    std::ifstream in(dir_.file("out.json"));
    if (!in) return by_feature;
    const nlohmann::json run_json = nlohmann::json::parse(in);
    for (const auto& c : run_json["cases"]) {
      const std::string id = c["id"];
      by_feature[id.substr(id.find('/') + 1)] = c;
    }
    return by_feature;
  }

  TempDir dir_;
};

const char* const kFeatures[] = {"prefix_cache", "decode_prefill", "batch",      "chunked_prefill",
                                 "preemption",   "integrity",      "spec_decode"};

TEST_F(ServingCli, ACorrectEngineExercisesAndPassesEveryFeature) {
  Result r;
  const nlohmann::json cases = run(platform("serving"), &r);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  for (const char* f : kFeatures) EXPECT_EQ(cases[f]["status"], "pass") << f << cases[f].dump(1);
  // Each pass names the engine's evidence that the feature was used.
  auto says = [&](const char* f, const char* words) {
    EXPECT_NE(cases[f]["message"].get<std::string>().find(words), std::string::npos)
        << f << ": " << cases[f]["message"];
  };
  says("prefix_cache", "usage.prompt_tokens_details.cached_tokens");
  says("batch", " by vllm:num_requests_running");
  EXPECT_GE(cases["batch"]["metrics"]["max_running"].get<double>(), 2);
  says("chunked_prefill", "chunks of 32");
  says("preemption", "vllm:num_preemptions_total +");
  says("spec_decode", "acceptance rate");
  EXPECT_GT(cases["spec_decode"]["metrics"]["mean_accepted_length"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(cases["decode_prefill"]["metrics"]["kl_mean"].get<double>(), 0);
}

struct Fault {
  const char* mode;
  const char* feature;  // the one case that fails
  const char* words;    // in its message: the request and the first differing token
};

void PrintTo(const Fault& f, std::ostream* os) { *os << f.mode; }

class ServingFault : public ServingCli, public ::testing::WithParamInterface<Fault> {};

TEST_P(ServingFault, FailsExactlyItsFeature) {
  const Fault f = GetParam();
  Result r;
  const nlohmann::json cases = run(platform(f.mode), &r);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  for (const char* feature : kFeatures) {
    const std::string want = feature == std::string(f.feature) ? "fail" : "pass";
    EXPECT_EQ(cases[feature]["status"], want) << feature << cases[feature].dump(1);
  }
  EXPECT_NE(cases[f.feature]["message"].get<std::string>().find(f.words), std::string::npos)
      << cases[f.feature]["message"];
}

INSTANTIATE_TEST_SUITE_P(
    Faults, ServingFault,
    ::testing::Values(
        Fault{"stale_prefix", "prefix_cache",
              "the warm request (the prefix cache hit) differs "
              "from the cold one: token ids differ at position 2"},
        Fault{"batch_slot", "batch",
              "differs from the probe alone: token ids differ at position 3"},
        Fault{"chunk_off_by_one", "chunked_prefill",
              "prefilled in chunks of 32 differs from the base service's answer: token ids differ "
              "at position 0"},
        Fault{"preempt_position", "preemption",
              "differs from its solo run: token ids differ at position 4"},
        Fault{"lying_usage", "integrity", "usage.completion_tokens 17 but 16 tokens came back"},
        Fault{"decode_drift", "decode_prefill",
              "decoded logprobs differ from the same tokens re-prefilled"}),
    [](const ::testing::TestParamInfo<Fault>& p) { return std::string(p.param.mode); });

TEST_F(ServingCli, WhatTheEngineDoesNotShowIsNotExercisedNeverPassed) {
  // The plain fake: no usage.prompt_tokens_details, no /metrics, no echo logprobs; and no variants.
  Result r;
  const nlohmann::json cases = run(platform("ok", false), &r);
  for (const char* f : {"prefix_cache", "chunked_prefill", "preemption", "spec_decode"}) {
    EXPECT_EQ(cases[f]["status"], "skip") << f << cases[f].dump(1);
    EXPECT_EQ(cases[f]["message"].get<std::string>().rfind("not exercised: ", 0), 0)
        << cases[f]["message"];
  }
  EXPECT_NE(cases["prefix_cache"]["message"].get<std::string>().find("/metrics"), std::string::npos)
      << cases["prefix_cache"]["message"];
  EXPECT_NE(cases["chunked_prefill"]["message"].get<std::string>().find(
                "has no 'chunked_prefill' variant"),
            std::string::npos)
      << cases["chunked_prefill"]["message"];
  EXPECT_NE(cases["decode_prefill"]["status"], "pass") << cases["decode_prefill"].dump(1);
}

// The conversation layer (suites/conversation.yaml): a guided engine's answers validate, its
// invalid schema is a 400 and its required / named tool calls are valid and stream the same;
// guided decoding that drops a required property, an engine that ignores response_format, and a
// tool-call parser whose streamed arguments lose a character each fail their part, naming the item.
TEST_F(ServingCli, TheConversationLayerCatchesEachFaultInItsPart) {
  auto run_conversation = [&](const std::string& mode) {
    const Result r =
        run_harness("run " + source_path("suites/conversation.yaml") + " --platform " +
                    platform(mode, false) + " --filter 'tiny-llama/*' --no-db --json " +
                    dir_.file("conv.json") + " --service-logs " + dir_.file("logs"));
    std::ifstream in(dir_.file("conv.json"));
    nlohmann::json by_kind = nlohmann::json::object();
    const nlohmann::json run_json = nlohmann::json::parse(in);
    for (const auto& c : run_json["cases"]) by_kind[c["kind"].get<std::string>()] = c;
    EXPECT_EQ(r.code, by_kind["structured_output"]["status"] == "pass" &&
                              by_kind["tool_calls"]["status"] == "pass"
                          ? 0
                          : 1);
    return by_kind;
  };
  auto says = [](const nlohmann::json& c, const std::string& words) {
    EXPECT_NE(c["message"].get<std::string>().find(words), std::string::npos) << c["message"];
  };
  nlohmann::json good = run_conversation("serving");
  EXPECT_EQ(good["structured_output"]["status"], "pass") << good.dump(1);
  EXPECT_EQ(good["structured_output"]["metrics"]["valid"], 5);
  EXPECT_EQ(good["structured_output"]["metrics"]["refused"], 1);
  EXPECT_EQ(good["tool_calls"]["status"], "pass") << good.dump(1);
  EXPECT_EQ(good["tool_calls"]["metrics"]["valid"], 3);

  nlohmann::json guided = run_conversation("guided_invalid");
  EXPECT_EQ(guided["structured_output"]["status"], "fail");
  says(guided["structured_output"],
       "enum-object: the complete answer does not validate: /: Missing required property 'answer'");
  EXPECT_EQ(guided["tool_calls"]["status"], "pass");

  nlohmann::json split = run_conversation("tool_args_split");
  EXPECT_EQ(split["structured_output"]["status"], "pass");
  EXPECT_EQ(split["tool_calls"]["status"], "fail");
  says(split["tool_calls"], "named-weather: call 0 streamed is get_weather(");

  nlohmann::json ignored = run_conversation("ignores_constraints");
  EXPECT_EQ(ignored["structured_output"]["status"], "fail");
  says(ignored["structured_output"],
       "enum-object: the complete answer does not validate: not JSON");
  EXPECT_EQ(ignored["tool_calls"]["status"], "fail");
  says(ignored["tool_calls"], "named-weather: no tool call");
}

// `harness serve` does no guided decoding and calls no tools: it refuses both with a 400 that
// names the field (never free text that looks constrained), and the checks say "not exercised".
TEST_F(ServingCli, TheEmbeddedServerRefusesWhatItDoesNotDo) {
  const Result r = run_harness("run " + source_path("suites/conversation.yaml") + " --platform " +
                               source_path("configs/platforms/cpu.yaml") +
                               " --filter 'tiny-llama/*' --no-db --json " +
                               dir_.file("embedded.json") + " --service-logs " + dir_.file("logs"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  std::ifstream in(dir_.file("embedded.json"));
  const nlohmann::json run_json = nlohmann::json::parse(in);
  ASSERT_EQ(run_json["cases"].size(), 2u);
  for (const auto& c : run_json["cases"]) {
    EXPECT_EQ(c["status"], "skip") << c.dump(1);
    const std::string message = c["message"];
    EXPECT_EQ(message.rfind("not exercised: the engine refuses ", 0), 0u) << message;
    EXPECT_NE(message.find("not supported by harness serve"), std::string::npos) << message;
  }
}

TEST_F(ServingCli, AMisspelledFeatureOrVariantIsAnInputErrorAtItsPlace) {
  const std::string suite = dir_.file("bad.yaml");
  std::ofstream(suite) << "suite: bad\nchecks:\n  - id: a\n    kind: serving\n"
                       << "    feature: prefix_cach\n    model: configs/models/tiny-llama\n";
  Result r = run_harness("run " + suite + " --platform " + platform("serving") + " --no-db");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.yaml:5:14: unknown feature 'prefix_cach' (expected one of: "
                       "prefix_cache, decode_prefill, batch,"),
            std::string::npos)
      << r.err;
  std::ofstream(suite) << "suite: bad\nchecks:\n  - id: a\n    kind: serving\n"
                       << "    feature: batch\n    service: nope\n"
                       << "    model: configs/models/tiny-llama\n";
  r = run_harness("run " + suite + " --platform " + platform("serving") + " --no-db");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.yaml:6:14: the platform file "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("has no service variant 'nope'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace h0::test
