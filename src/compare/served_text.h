// Whether an engine's text is the text of its token ids, modulo how an incremental detokenizer
// settles incomplete UTF-8 at either end. A one-shot decode (transformers' `decode`, the goldens)
// writes U+FFFD for bytes that do not form a character. An incremental detokenizer (vLLM's, the
// `tokenizers` DecodeStream) emits a token's text only once everything so far decodes to whole
// characters, so:
//   - the start: text the prompt's tail held back (the prompt's text ends in an incomplete
//     character) comes out with the first output token, before the output's own text;
//   - the end: an incomplete character at the end of the output — with the tokens since the text
//     last decoded to whole characters — is never emitted.
// Seen on vLLM 0.32 (docs/engines.md "Real engines"). The ids decide; these differences are
// reported as notes with their bytes, never silently, and any other difference is one.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace h0::compare {

struct SettledText {
  bool same = false;  // the same text, modulo the ends as above
  std::string note;   // what differed at the ends, with the bytes; "" when the texts are equal
};

// `got` (the engine's text of `output_ids`, which followed `prompt_ids`) against `expected` (a
// one-shot decode of the same output, e.g. the golden's text). With `tok`, `got` must be the
// decode of prompt + output (special tokens skipped) from a point at or after the output's start
// — before it only when the prompt's text ends in an incomplete character — to the output's end
// or to where its text last decoded to whole characters; nothing else. Without `tok` (or without
// output ids), only runs of U+FFFD at either end of either text may differ.
SettledText settle_text(std::string_view got, std::string_view expected,
                        const tokenizer::Tokenizer* tok, std::span<const int64_t> prompt_ids,
                        std::span<const int64_t> output_ids);

// "e4 b8" for the bytes "\xe4\xb8": how a note shows bytes that are no text.
std::string hex_bytes(std::string_view bytes);

}  // namespace h0::compare
