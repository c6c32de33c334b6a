#include "eval/task.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "test_util.h"

namespace h0::eval {
namespace {

std::string write(const test::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

// The InputError's "where: what" of loading `text`, "" when it loads.
std::string load_error(const std::string& text) {
  test::TempDir dir;
  const std::string path = write(dir, "t.jsonl", text);
  try {
    load_task(path);
  } catch (const InputError& e) {
    std::string where = e.where();
    where.replace(0, path.size(), "t.jsonl");
    return where + ": " + e.message();
  }
  return "";
}

TEST(Task, HeaderAndItemsOfEveryScorer) {
  test::TempDir dir;
  const Task mc = load_task(
      write(dir, "mc.jsonl",
            "# scorer: multiple_choice\n# template: \"Q: {question}\\nA:\"\n"
            "# licence: CC0-1.0\n"
            "{\"id\": \"a\", \"question\": \"2+2?\", \"choices\": [\"3\", \"4\"], \"answer\": 1}\n"
            "{\"id\": \"b\", \"question\": \"sky?\", \"choices\": [\"red\", \"blue\", \"green\"], "
            "\"answer\": \"B\"}\n"
            "{\"question\": \"sun?\", \"choices\": [\"hot\", \"cold\"], \"answer\": \"hot\"}\n"));
  EXPECT_EQ(mc.spec.scorer, Scorer::kMultipleChoice);
  EXPECT_EQ(mc.spec.licence, "CC0-1.0");
  EXPECT_EQ(mc.spec.name, "mc");
  ASSERT_EQ(mc.items.size(), 3u);
  EXPECT_EQ(mc.items[0].prompt, "Q: 2+2?\nA:");
  EXPECT_EQ(mc.items[0].continuations, (std::vector<std::string>{" 3", " 4"}));
  EXPECT_EQ(mc.items[0].gold, 1);
  EXPECT_EQ(mc.items[1].gold, 1);  // a letter
  EXPECT_EQ(mc.items[2].gold, 0);  // a choice's text
  EXPECT_EQ(mc.items[2].id, "line 6");
  EXPECT_EQ(mc.sha256.size(), 64u);

  // GSM8K's "#### answer", few-shot examples solved before each prompt.
  const Task gen = load_task(write(dir, "gsm.jsonl",
                                   "# scorer: generate\n# extract: last_number\n# fewshot: 1\n"
                                   "# template: \"Q: {question}\\nA:\"\n"
                                   "{\"question\": \"1+1\", \"answer\": \"one and one #### 2\"}\n"
                                   "{\"question\": \"2+3\", \"answer\": \"so #### 5\"}\n"));
  ASSERT_EQ(gen.items.size(), 1u);
  EXPECT_EQ(gen.items[0].prompt, "Q: 1+1\nA: 2\n\nQ: 2+3\nA:");
  EXPECT_EQ(normalize_answer(gen.items[0].target), "5");

  // Suite-side keys win over the header.
  YAML::Node over = YAML::Load("{scorer: logprob_target, target_template: ' <{answer}>'}");
  const Task lp = load_task(write(dir, "lp.jsonl", "{\"question\": \"x\", \"answer\": 7}\n"), over,
                            "suite.yaml");
  EXPECT_EQ(lp.spec.scorer, Scorer::kLogprobTarget);
  EXPECT_EQ(lp.items[0].continuations, (std::vector<std::string>{" <7>"}));
}

TEST(Task, MalformedFilesFailAtTheirLine) {
  EXPECT_EQ(
      load_error("# scorer: generate\n{\"question\": \"a\", \"answer\": \"1\"}\n{\"question\": \n"),
      "t.jsonl:3: not a JSON object: {\"question\": ");
  EXPECT_EQ(load_error("{\"question\": \"a\", \"answer\": \"1\"}\n{\"question\": \"b\"}\n"),
            "t.jsonl:2: the item has no \"answer\" (its answer)");
  EXPECT_EQ(load_error(
                "# template: \"{question} {context}\"\n{\"question\": \"a\", \"answer\": \"1\"}\n"),
            "t.jsonl:2: the template names {context}, which this item does not have");
  EXPECT_EQ(
      load_error("# scorer: ranking\n{\"question\": \"a\", \"answer\": \"1\"}\n"),
      "t.jsonl:1: scorer must be one of: multiple_choice, generate, logprob_target; got 'ranking'");
  EXPECT_EQ(load_error("# scorer: multiple_choice\n{\"question\": \"a\", \"choices\": [\"x\", "
                       "\"y\"], \"answer\": 5}\n"),
            "t.jsonl:2: answer 5 is not a choice index in [0, 2)");
  EXPECT_EQ(load_error("# tempalte: x\n{\"question\": \"a\", \"answer\": \"1\"}\n").substr(0, 35),
            "t.jsonl:1: unknown task key 'tempal");
  EXPECT_EQ(load_error("{\"id\": 1, \"question\": \"a\", \"answer\": \"1\"}\n{\"id\": 1, "
                       "\"question\": \"b\", \"answer\": \"2\"}\n"),
            "t.jsonl:2: duplicate item id \"1\"");
  EXPECT_EQ(load_error("# extract: \"regex:([a-\"\n{\"question\": \"a\", \"answer\": \"1\"}\n")
                .substr(0, 36),
            "t.jsonl:1: extract: bad regex /([a-/");
  EXPECT_EQ(load_error("# fewshot: 1\n{\"question\": \"a\", \"answer\": \"1\"}\n"),
            "t.jsonl: no items to score (1 items, fewshot 1)");
  EXPECT_EQ(load_error(""), "t.jsonl: no items to score (0 items, fewshot 0)");
}

TEST(Task, AnswersAreExtractedAndNormalized) {
  TaskSpec spec;
  EXPECT_EQ(normalize_answer("  The  Answer. "), "the answer");
  EXPECT_EQ(normalize_answer("1,234.50"), "1234.5");
  EXPECT_EQ(normalize_answer("+7"), "7");
  spec.extract = "last_number";
  EXPECT_EQ(extract_answer(spec, "3 apples and 4 more make 1,207."), "1207");
  EXPECT_EQ(extract_answer(spec, "no number here"), "");
  spec.extract = "regex";
  spec.regex = R"(\[([^\]]*)\])";
  spec.compiled.emplace(spec.regex);
  EXPECT_EQ(extract_answer(spec, "sure: [RIVER] ok"), "river");
  EXPECT_EQ(extract_answer(spec, "RIVER"), "");
  spec.extract = "exact";
  EXPECT_EQ(extract_answer(spec, " Paris "), "paris");
}

TEST(Task, ShippedTasksLoadWithTheirLicence) {
  for (const char* name : {"arithmetic", "facts", "copying", "format"}) {
    const Task t = load_task(test::source_path(std::string("suites/tasks/") + name + ".jsonl"));
    EXPECT_FALSE(t.spec.licence.empty()) << name;
    EXPECT_GT(t.items.size(), 40u) << name;
    EXPECT_LE(t.items.size(), 200u) << name;
  }
}

}  // namespace
}  // namespace h0::eval
