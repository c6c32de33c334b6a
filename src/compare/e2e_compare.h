// Judging one response of an e2e check against its golden (transformers' greedy `generate`):
// exactly (token ids and text), or as vLLM's check_logprobs_close does (outputs may part at a
// near tie: at the first differing position each side's token must be in the other's top
// logprobs, and nothing after it is compared), or by an expected substring / regex.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "service/client.h"
#include "tokenizer/tokenizer.h"

namespace h0::compare {

struct ResponseVerdict {
  bool pass = true;
  std::string message;  // why it failed, or a note on a pass (e.g. "parted at a near tie at 7")
  int64_t first_difference = -1;  // token position where output and golden first differ; -1 none
  double max_logprob_diff = 0;    // over the positions compared (logprobs mode)
};

// Token ids (when the server returned them) and text equal to the golden's; the finish reason too.
// With the same ids the text may differ only where the engine's detokenizer settles incomplete
// UTF-8 at either end (compare/served_text.h; `tok`, the model's tokenizer, checks the bytes),
// which is noted in the message; without ids in the response the text decides (only U+FFFD runs
// at its ends may differ), and `tok` names the golden token where the texts part.
ResponseVerdict compare_exact(const nlohmann::json& golden, const service::Result& r,
                              const tokenizer::Tokenizer* tok = nullptr);
// check_logprobs_close, plus |logprob - golden logprob| <= atol at every matched position.
ResponseVerdict compare_logprobs(const nlohmann::json& golden, const service::Result& r,
                                 double atol);
// The prompt as the service tokenized it (vLLM's prompt_token_ids, when returned) against the
// golden's: a difference is the chat template's or the tokenizer's.
ResponseVerdict compare_prompt(const nlohmann::json& golden, const service::Result& r);
// Two responses of one request (streamed vs not, alone vs batched): same ids and text.
ResponseVerdict compare_responses(const service::Result& a, const service::Result& b);

}  // namespace h0::compare
