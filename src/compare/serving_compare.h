// What the serving-feature checks (checks/serving_check.cc) judge two answers by: the same
// greedy tokens, and each chosen token's logprob within a bound, so that a feature (a prefix-cache
// hit, a batch, a prefill chunk, a preemption, speculative decoding) changed nothing the model
// computes; and the KL divergence of two top-k logprob lists, SGLang's decode-vs-prefill rule.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compare/e2e_compare.h"
#include "service/client.h"

namespace h0::compare {

// `got` against `ref` (the same request, the feature off or alone): token ids and text as
// compare_responses, then at each position both carry a logprob, |got - ref| <= atol. The
// message names the position, both tokens and the logprobs. max_logprob_diff: over the
// positions compared.
ResponseVerdict same_answer(const service::Result& ref, const service::Result& got, double atol);

using TopLogprobs = std::vector<std::pair<std::string, double>>;  // token text, logprob

// KL(p || q) between two top-k distributions over the union of their tokens: a token missing
// from one list gets the least of that list's mass not in it (1 - its listed probabilities) and
// its smallest listed probability; the rest of each distribution (outside the union) is one
// more term. 0 for identical lists; >= 0.
double top_k_kl(const TopLogprobs& p, const TopLogprobs& q);

// MLPerf LoadGen TEST06's rules on one response: usage.completion_tokens counts the tokens that
// came back (their ids), no token follows an end token (`ends`; unless `ignore_eos`), the finish
// reason agrees with the length (`length` only at `max_tokens`; an end token last means `stop`
// unless `ignore_eos`), and
// usage.prompt_tokens is the prompt's length (`prompt_tokens`; -1: the engine's own
// prompt_token_ids, when it returned them). What breaks the first rule that fails, "" when none
// does. `compared` counts the rules that could be judged; `not_compared` says which could not.
std::string integrity_problem(const service::Result& r, int64_t max_tokens,
                              const std::set<int64_t>& ends, bool ignore_eos, int64_t prompt_tokens,
                              int* compared = nullptr,
                              std::vector<std::string>* not_compared = nullptr);

}  // namespace h0::compare
