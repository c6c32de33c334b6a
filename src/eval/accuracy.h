// Per-item results of a task run and the accuracy gate against a reference's per-item results
// on the same items: score with its Wilson interval, agreement (share of items with the same
// answer), the paired comparison (exact McNemar on the discordant items, a seeded paired
// bootstrap of the score delta) and the unpaired z-test for contrast.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace h0::eval {

struct ItemResult {
  std::string id;
  std::string answer;  // multiple_choice: the chosen index; generate: the extracted answer;
                       // logprob_target: "greedy" or "not greedy"
  bool correct = false;
  std::vector<double> choice_logprobs;  // multiple_choice: each choice's summed logprob
  std::optional<double> logprob;        // logprob_target: the continuation's summed logprob
  std::string text;                     // generate: the completion (the text of its token ids
                                        // where the engine returned them)
  std::string
      engine_text;    // generate: the engine's own text, when it differs from `text` only
                      // where its detokenizer settles incomplete UTF-8 (compare/served_text.h)
  std::string error;  // no answer: why (after the retries)
  int attempts = 0;   // requests sent for the item, retries included

  nlohmann::json to_json() const;
  static ItemResult from_json(const nlohmann::json& j);  // throws nlohmann errors on bad shape
};

// The gate: each part applies only when given (a case with no gate at all gets max_drop 0.02,
// alpha 0.05).
struct GateSpec {
  std::optional<double> max_drop;       // the score may fall this much below the reference's
  double alpha = 0.05;                  // significance of the paired test, and 1 - confidence
  std::optional<double> min_agreement;  // share of items answered as the reference did
  std::optional<double> min_score;      // the score's own floor (without a reference too)
  // generate: share of items whose whole completion equals the reference's (on a random tiny
  // model most answers are empty on both sides: the completions are what can differ).
  std::optional<double> min_output_agreement;
  // Loglikelihood scorers: the largest |logprob - reference logprob| of a choice or target.
  std::optional<double> max_logprob_diff;
  bool inconclusive_fails = false;  // inconclusive: fail instead of skip
  int bootstrap_resamples = 10000;
  uint32_t bootstrap_seed = 0;
};

struct Comparison {
  int64_t n = 0;  // items both sides answered
  int64_t head_right = 0, ref_right = 0;
  int64_t gained = 0, lost = 0;  // right only on the head side / only on the reference's
  int64_t same_answer = 0;
  int64_t with_text = 0, same_text = 0;  // generate: items both sides completed, equal completions
  double score = 0, ref_score = 0, delta = 0;  // delta = score - ref_score
  double agreement = 0;
  double output_agreement = 1;  // same_text / with_text (1 when no item has a completion)
  double max_logprob_diff = 0;  // over choices and targets
  std::string worst_logprob_item;
  double mcnemar_p = 1, unpaired_p = 1;
  double delta_lo = 0, delta_hi = 0;  // paired bootstrap, 1 - alpha
  // The largest drop the data allow at 1 - alpha: the larger of the bootstrap's and the Wilson
  // bound of the lost items' share less the gained items' share.
  double drop_bound = 0;
  std::vector<std::string> flipped;       // ids whose answer differs from the reference's
  std::vector<std::string> text_differs;  // generate: ids whose completion differs
};

// Pairs `head` with `ref` by item id (items missing on either side or without an answer are left
// out of n).
Comparison compare(const std::vector<ItemResult>& head,
                   const std::map<std::string, ItemResult>& ref, const GateSpec& gate);

struct Verdict {
  std::string outcome;  // "pass", "fail", "inconclusive"
  std::string message;
};
Verdict judge(const Comparison& c, const GateSpec& gate, bool has_reference, int64_t answered,
              int64_t right);

}  // namespace h0::eval
