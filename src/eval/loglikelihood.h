// Where a loglikelihood request's continuation lies among the tokens an engine echoes, located by
// tokens, not by characters: vLLM 0.32 lists the BOS token with its text at text_offset 0 and
// counts its characters in every later offset while its echoed text omits it, so a continuation
// found by character offset sums the wrong tokens (docs/engines.md "Real engines").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "service/client.h"
#include "tokenizer/tokenizer.h"

namespace h0::eval {

// context + continuation as a server encodes a text prompt (the tokenizer's full encode, its
// special tokens added), and the continuation's tokens [begin, end) among them: those whose
// bytes end past the context, so a token straddling the boundary counts to the continuation —
// golden/tools/gen_eval.py's rule (transformers' offset_mapping).
struct TokenizedPair {
  std::vector<int64_t> ids;
  size_t begin = 0, end = 0;
};
TokenizedPair tokenize_pair(const tokenizer::Tokenizer& tok, std::string_view context,
                            std::string_view continuation);

struct EchoScore {
  double logprob = 0;  // the continuation's tokens' logprobs, summed
  bool greedy = true;  // each of them its position's most likely token
  int64_t tokens = 0;
  std::string cannot;  // why the response cannot be scored; "" when it was
  std::string note;    // how it was located, when the echo lists another number of tokens
};

// From an echo response (echo, logprobs, `generated` tokens after the prompt) of the prompt
// `pair.ids` (sent as ids, or as text the engine tokenized): its prompt tokens are the response's
// tokens less the last `generated`. Listing as many as pair.ids, the continuation is at
// [pair.begin, pair.end) among them. Listing another number (llama.cpp's server leaves the BOS
// out), it is located from the end, lm-eval's way, and must be the same tokens there: the same
// ids where the echo names them ("token_id:N"), else the same text (`tok` decodes ours; a token
// that is part of a character is not compared); else the engine tokenizes differently, and that
// is said.
EchoScore score_echo_tokens(const service::Result& r, const TokenizedPair& pair, int64_t generated,
                            const tokenizer::Tokenizer& tok);

// Without the model's tokenizer: the tokens whose text reaches past the context by text_offset
// (characters of the echoed text, as OpenAI counts them; a token straddling the boundary counts
// to the continuation), ending at the first generated token. Wrong on an engine whose offsets
// count a special token the echoed text omits.
EchoScore score_echo_offsets(const service::Result& r, std::string_view context,
                             std::string_view continuation);

}  // namespace h0::eval
