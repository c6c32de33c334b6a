// The conversation layer's rendering, reasoning and tool_choice auto checks (kinds chat_template,
// reasoning, tool_agreement) against the fake serving engine (tests/service/fake_serving.h) on the
// tiny-qwen3-chat fixture: a correct engine passes with what it exercised counted; each fault of
// the conversation layer fails the check it should, naming the case and the difference.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "harness/cli_util.h"

namespace h0::test {
namespace {

const char* const kModel = "tests/data/chat-models/tiny-qwen3-chat";

class ConversationCli : public ::testing::Test {
 protected:
  // The fake engine in `mode`, replaying the fixture's rendering goldens, as a thinking model.
  std::string fake(const std::string& mode) const {
    return std::string(H0_FAKE_SERVER) + " --mode " + mode + " --tokenizer " +
           source_path(std::string(kModel) + "/tokenizer.json") + " --chat-goldens " +
           source_path("golden/chat/tiny-qwen3-chat") + " --reasoning";
  }

  // `flags`: more of the fake's flags (--strict).
  std::string platform(const std::string& mode, const std::string& flags = "") {
    const std::string path = dir_.file("conv-" + mode + ".yaml");
    std::ofstream(path) << "platform: fake-" << mode << "\nbackend: reference\nisolation: process\n"
                        << "service:\n  start: \"" << fake(mode) << flags << " --port {port}\"\n"
                        << "  health: /health\n  startup_timeout: 5s\n  stop_grace: 1s\n"
                        << "  request_timeout: 20s\n";
    return path;
  }

  // One case of `kind` on the fixture, `extra` lines added to it; its JSON result.
  nlohmann::json run_case(const std::string& kind, const std::string& mode,
                          const std::string& extra = "", const std::string& flags = "") {
    const std::string suite = dir_.file("suite-" + kind + ".yaml");
    std::ofstream(suite) << "suite: conv\nchecks:\n  - id: c\n    kind: " << kind
                         << "\n    model: " << source_path(kModel) << "\n"
                         << extra;
    const Result r =
        run_harness("run " + suite + " --platform " + platform(mode, flags) + " --no-db --json " +
                    dir_.file("out.json") + " --service-logs " + dir_.file("logs"));
    std::ifstream in(dir_.file("out.json"));
    if (!in) {
      ADD_FAILURE() << r.out << r.err;
      return {};
    }
    const nlohmann::json run_json = nlohmann::json::parse(in);
    const nlohmann::json c = run_json["cases"][0];
    EXPECT_EQ(r.code, c["status"] == "fail" ? 1 : 0) << r.out << r.err;  // a skip fails nothing
    return c;
  }

  TempDir dir_;
};

void expect_says(const nlohmann::json& c, const std::string& words) {
  EXPECT_NE(c["message"].get<std::string>().find(words), std::string::npos) << c["message"];
}

TEST_F(ConversationCli, RenderingEqualsTransformersAndADroppedSystemPromptIsNamed) {
  const nlohmann::json good = run_case("chat_template", "serving");
  EXPECT_EQ(good["status"], "pass") << good.dump(1);
  EXPECT_EQ(good["metrics"]["equal"], 9);
  expect_says(good, "9 of 9 renderings equal transformers' token for token");
  const nlohmann::json bad = run_case("chat_template", "template_drops_system");
  EXPECT_EQ(bad["status"], "fail");
  // The first golden with a system prompt, its first differing token named on both sides.
  expect_says(bad, "no_generation_prompt: token ");
  expect_says(bad, " in transformers' rendering (\"You are");
  // Goldens without a system prompt still render equal.
  int equal = 0;
  for (const auto& row : bad["details"]["cases"]) equal += row["verdict"] == "equal";
  EXPECT_EQ(equal, 6) << bad["details"]["cases"].dump(1);
}

TEST_F(ConversationCli, TheReasoningSplitIsTheTemplatesAndAnOffByOneSplitFails) {
  const nlohmann::json good = run_case("reasoning", "serving");
  EXPECT_EQ(good["status"], "pass") << good.dump(1);
  expect_says(good,
              "3 of 3 answers split as the template defines, plain and streamed (split at "
              "</think> 1, cut inside reasoning 1, thinking off 1)");
  const nlohmann::json bad = run_case("reasoning", "reasoning_off_by_one");
  EXPECT_EQ(bad["status"], "fail");
  expect_says(bad, "think-budget: the reasoning is ");
  // A cut answer and thinking off have no split to move.
  EXPECT_EQ(bad["metrics"]["cut"], 1);
  EXPECT_EQ(bad["metrics"]["off"], 1);
}

// A second fake engine as the reference endpoint, on a free port; killed with the test.
class Reference {
 public:
  Reference(const std::string& command, const TempDir& dir) {
    const std::string port_file = dir.file("ref.port"), pid_file = dir.file("ref.pid");
    std::system((command + " --port 0 --port-file " + port_file + " > " + dir.file("ref.log") +
                 " 2>&1 & echo $! > " + pid_file)
                    .c_str());
    for (int i = 0; i < 500 && url_.empty(); ++i) {
      const std::string port = read_file(port_file);
      if (!port.empty() && port.back() == '\n')
        url_ = "http://127.0.0.1:" + port.substr(0, port.size() - 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = std::atoi(read_file(pid_file).c_str());
  }
  ~Reference() {
    if (pid_ > 0) kill(pid_, SIGKILL);
  }
  const std::string& url() const { return url_; }

 private:
  std::string url_;
  int pid_ = 0;
};

TEST_F(ConversationCli, ToolChoiceAutoAgreesWithTheSameEngineAndEachFaultDropsItsScore) {
  const Reference ref(fake("serving"), dir_);
  ASSERT_FALSE(ref.url().empty());
  const std::string reference = "    reference: " + ref.url() + "\n";
  const nlohmann::json same = run_case("tool_agreement", "serving", reference);
  EXPECT_EQ(same["status"], "pass") << same.dump(1);
  EXPECT_EQ(same["metrics"]["trigger_agreement"], 1.0);
  EXPECT_EQ(same["metrics"]["tool_call_f1"], 1.0);
  EXPECT_EQ(same["metrics"]["schema_accuracy"], 1.0);
  EXPECT_EQ(same["metrics"]["reference_calls"], 3);  // the items that name a function
  expect_says(same, "trigger_agreement 1.000 [");
  // A parser that misses the calls: the trigger agreement and F1 drop, the disagreeing items
  // listed.
  const nlohmann::json miss = run_case("tool_agreement", "auto_tool_miss", reference);
  EXPECT_EQ(miss["status"], "fail");
  EXPECT_EQ(miss["metrics"]["trigger_agreement"], 0.5);
  EXPECT_EQ(miss["metrics"]["tool_call_f1"], 0.0);
  expect_says(miss, "trigger_agreement 0.500 is below its gate 0.950");
  expect_says(miss, "weather-named (no call: ");
  // Calls whose arguments miss what the schema requires: the schema accuracy drops, F1 does not.
  const nlohmann::json invalid = run_case("tool_agreement", "auto_args_invalid", reference);
  EXPECT_EQ(invalid["status"], "fail");
  EXPECT_EQ(invalid["metrics"]["tool_call_f1"], 1.0);
  EXPECT_EQ(invalid["metrics"]["schema_accuracy"], 0.0);
  expect_says(invalid, "schema_accuracy 0.000 is below its gate 0.950");
}

// A case's `request` fields go into each of its requests (a thinking template's tool calls and
// structured output are sent with thinking off): an engine that takes no chat_template_kwargs
// (FastAPI with extra="forbid", as transformers serve) refuses them, and says which.
TEST_F(ConversationCli, ACasesRequestFieldsAreSentWithEachItem) {
  const std::string thinking_off =
      "    request: {chat_template_kwargs: {enable_thinking: false}}\n";
  EXPECT_EQ(run_case("tool_calls", "serving", "", " --strict")["status"], "pass");
  for (const char* kind : {"tool_calls", "structured_output"}) {
    const nlohmann::json c = run_case(kind, "serving", thinking_off, " --strict");
    EXPECT_EQ(c["status"], "skip") << kind;
    expect_says(c, "Unexpected fields in the request: ");
    expect_says(c, "chat_template_kwargs");
  }
  const std::string suite = dir_.file("bad.yaml");
  std::ofstream(suite) << "suite: bad\nchecks:\n  - id: a\n    kind: tool_calls\n"
                       << "    model: " << source_path(kModel) << "\n    request: [1]\n";
  const Result r = run_harness("run " + suite + " --platform " + platform("serving") + " --no-db");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.yaml:6:14: request: expected a mapping of request body fields"),
            std::string::npos)
      << r.err;
}

// A model with a vision tower: goldens with images in a conversation (a system prompt, a second
// image in a later turn) go out with each image file as a data: URL; harness serve expands each
// image as transformers' processor does, token for token. A golden whose image is missing is an
// input error naming the golden file and the image.
TEST_F(ConversationCli, ImagesInAConversationRenderAsTransformersExpandsThem) {
  const std::string suite = dir_.file("images.yaml");
  std::ofstream(suite) << "suite: images\nchecks:\n  - id: c\n    kind: chat_template\n"
                       << "    model: " << source_path("configs/models/tiny-llava") << "\n";
  Result r = run_harness("run " + suite + " --platform " +
                         source_path("configs/platforms/cpu.yaml") + " --no-db --json " +
                         dir_.file("images.json") + " --service-logs " + dir_.file("logs"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  std::ifstream in(dir_.file("images.json"));
  const nlohmann::json c = nlohmann::json::parse(in)["cases"][0];
  EXPECT_EQ(c["status"], "pass") << c.dump(1);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : c["details"]["cases"]) rows[row["case"]] = row;
  for (const char* name : {"image_system", "image_history"}) {
    EXPECT_EQ(rows[name]["verdict"], "equal") << rows[name].dump();
    EXPECT_EQ(rows[name]["engine_tokens"], rows[name]["tokens"]);
  }
  // The history's two images: 2 × image_seq_length (16) of the 92 tokens.
  EXPECT_EQ(rows["image_history"]["tokens"], 92);

  const std::string goldens = dir_.file("goldens");
  std::filesystem::create_directories(goldens);
  std::ifstream golden(source_path("golden/chat/tiny-llava/image_system.json"));
  nlohmann::ordered_json g = nlohmann::ordered_json::parse(golden);
  g["request"]["messages"][1]["content"][0]["image_url"]["url"] = "golden/models/images/none.png";
  std::ofstream(goldens + "/image_system.json") << g.dump();
  std::ofstream(suite) << "suite: images\nchecks:\n  - id: c\n    kind: chat_template\n"
                       << "    model: " << source_path("configs/models/tiny-llava") << "\n"
                       << "    goldens: " << goldens << "\n";
  r = run_harness("run " + suite + " --platform " + source_path("configs/platforms/cpu.yaml") +
                  " --no-db");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(goldens + "/image_system.json: image 'golden/models/images/none.png' not "
                                 "found (looked for "),
            std::string::npos)
      << r.err;
}

TEST_F(ConversationCli, AToolAgreementCaseNeedsAReferenceUrl) {
  const std::string suite = dir_.file("bad.yaml");
  std::ofstream(suite) << "suite: bad\nchecks:\n  - id: a\n    kind: tool_agreement\n"
                       << "    model: " << source_path(kModel)
                       << "\n    reference: localhost:8000\n";
  const Result r = run_harness("run " + suite + " --platform " + platform("serving") + " --no-db");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.yaml:6:16: reference: expected the reference endpoint's http(s) URL"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace h0::test
