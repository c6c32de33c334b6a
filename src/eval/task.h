// A task for `kind: eval`: items in JSONL (one JSON object a line) and how to score them, from
// the file's header (leading `#` lines holding YAML) and/or the suite's case, the suite winning.
//
//   # scorer: multiple_choice        multiple_choice | generate | logprob_target
//   # template: "Q: {question}\nA:"  the prompt; {field} is the item's field (a string or number)
//   # licence: CC0-1.0
//   {"id": "q1", "question": "...", "choices": ["...", "..."], "answer": 1}
//
// lm-evaluation-harness style files (question / choices / answer; GSM8K's "... #### 42") read
// as they are. Scoring:
//   multiple_choice  each choice's continuation (choice_template, " {choice}") after the prompt
//                    is scored by the sum of its token logprobs; the highest is the prediction.
//                    `answer`: the choice's index, its letter (A, B, ...) or its text.
//   generate         greedy completion (max_tokens, stop), the answer extracted (extract:
//                    exact | last_number | regex, its first group or else the match) and compared
//                    with the target after normalization (trimmed, lower case, spaces collapsed,
//                    a final period dropped; numbers without thousands separators).
//   logprob_target   the logprob of the reference continuation (target_template, " {answer}");
//                    correct when every token of it is the greedy one.
// Few-shot examples (`fewshot: K`) are the file's first K items, shown solved before each
// prompt and not scored. Every error names the file and line (InputError, exit 2).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace h0::eval {

enum class Scorer { kMultipleChoice, kGenerate, kLogprobTarget };
const char* scorer_name(Scorer s);

struct TaskSpec {
  Scorer scorer = Scorer::kGenerate;
  std::string name;     // default: the file's stem
  std::string licence;  // as the header states it ("" when it does not)
  std::string prompt_template = "{question}";
  std::string choices_field = "choices";
  std::string choice_template = " {choice}";
  std::string answer_field = "answer";
  std::string target_template = " {answer}";  // logprob_target's continuation
  std::string extract = "exact";              // exact | last_number | regex
  std::string regex;                          // extract: regex
  std::optional<std::regex> compiled;
  int64_t max_tokens = 32;
  std::vector<std::string> stop;
  int64_t fewshot = 0;
  std::string fewshot_separator = "\n\n";
  std::string id_field = "id";
};

struct Item {
  std::string id;  // the id field, else "line N"
  int line = 0;
  nlohmann::json fields;
  std::string prompt;                      // few-shot examples + the rendered template
  std::vector<std::string> continuations;  // multiple_choice: one per choice; logprob_target: one
  int64_t gold = -1;                       // multiple_choice: the right choice
  std::string target;                      // generate: the expected answer (as written)
};

struct Task {
  std::string path, sha256;
  TaskSpec spec;
  std::vector<Item> items;  // the scored ones, in file order
};

// The header and suite keys (for the kind's schema and for errors).
const std::vector<std::string>& spec_keys();

// Reads `path`. `overrides` (a YAML mapping, may be undefined) holds spec keys from the suite
// file `overrides_file`, which win over the header. Throws InputError.
Task load_task(const std::string& path, const YAML::Node& overrides = YAML::Node(),
               const std::string& overrides_file = "");

// The answer `spec` extracts from a completion ("" when none), and the normal form answers
// are compared in.
std::string extract_answer(const TaskSpec& spec, const std::string& completion);
std::string normalize_answer(const std::string& s);

}  // namespace h0::eval
