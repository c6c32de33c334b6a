#include "eval/loglikelihood.h"

#include <algorithm>
#include <climits>

#include "base/utf8.h"

namespace h0::eval {
namespace {

// Adds token `t` to `s`: its logprob, and whether it is its position's best.
bool add_token(const service::TokenInfo& t, EchoScore* s) {
  if (!t.logprob) return false;
  s->logprob += *t.logprob;
  ++s->tokens;
  double best = *t.logprob;
  for (const auto& [text, lp] : t.top) best = std::max(best, lp);
  if (*t.logprob < best - 1e-9) s->greedy = false;
  return true;
}

}  // namespace

TokenizedPair tokenize_pair(const tokenizer::Tokenizer& tok, std::string_view context,
                            std::string_view continuation) {
  const std::string whole = std::string(context) + std::string(continuation);
  const std::vector<int32_t> with = tok.encode(whole, true), content = tok.encode(whole, false);
  // Where the text's own ids sit among the ones the template adds (a BOS before them).
  size_t at = 0;
  while (at + content.size() <= with.size() &&
         !std::equal(content.begin(), content.end(), with.begin() + long(at)))
    ++at;
  if (at + content.size() > with.size()) at = 0;  // the template rewrote them: count as they are
  TokenizedPair p;
  p.ids.assign(with.begin(), with.end());
  size_t bytes = 0, first = content.size();
  for (size_t t = 0; t < content.size(); ++t) {
    bytes += tok.id_to_bytes(content[t]).size();
    if (bytes > context.size() && first == content.size()) first = t;
  }
  p.begin = at + first;
  p.end = at + content.size();
  return p;
}

EchoScore score_echo_tokens(const service::Result& r, const TokenizedPair& pair, int64_t generated,
                            const tokenizer::Tokenizer& tok) {
  EchoScore s;
  const int64_t listed = int64_t(r.tokens.size()) - std::max<int64_t>(generated, 0);
  if (r.tokens.empty() || listed <= 0) {
    s.cannot = "its echo gave no logprobs for the prompt";
    return s;
  }
  const int64_t n = int64_t(pair.end - pair.begin), after = int64_t(pair.ids.size() - pair.end);
  int64_t first = int64_t(pair.begin);  // the continuation's first token among those listed
  if (listed != int64_t(pair.ids.size())) {
    first = listed - after - n;
    const auto differs = [&](int64_t k) {
      const service::TokenInfo& t = r.tokens[size_t(first + k)];
      const int64_t ours = pair.ids[pair.begin + size_t(k)];
      if (t.id) return *t.id != ours;
      const std::string text = tok.decode(std::vector<int32_t>{int32_t(ours)}, true);
      return text.find(kReplacementCharacter) == std::string::npos && t.text != text;
    };
    bool same = first >= 0;
    for (int64_t k = 0; same && k < n; ++k) same = !differs(k);
    if (!same) {
      s.cannot = "its echo lists " + std::to_string(listed) + " prompt tokens where the model's " +
                 "tokenizer makes " + std::to_string(pair.ids.size()) +
                 ", and its last ones are not the continuation's (the engine tokenizes the " +
                 "prompt differently)";
      return s;
    }
    s.note = "the continuation located from the end: the echo lists " + std::to_string(listed) +
             " prompt tokens, the model's tokenizer makes " + std::to_string(pair.ids.size());
  }
  for (int64_t k = 0; k < n; ++k) {
    if (!add_token(r.tokens[size_t(first + k)], &s)) {
      s.cannot =
          "the continuation's token at position " + std::to_string(first + k) + " has no logprob";
      return s;
    }
  }
  if (s.tokens == 0) s.cannot = "the continuation has no tokens";
  return s;
}

EchoScore score_echo_offsets(const service::Result& r, std::string_view context,
                             std::string_view continuation) {
  EchoScore s;
  const int64_t ctx = int64_t(utf8_characters(context));
  const int64_t end = ctx + int64_t(utf8_characters(continuation));
  const auto& t = r.tokens;
  if (t.empty() ||
      !std::all_of(t.begin(), t.end(), [](const auto& x) { return x.text_offset.has_value(); })) {
    s.cannot = "its echo gave no logprobs with text offsets for the prompt";
    return s;
  }
  for (size_t i = 0; i < t.size(); ++i) {
    const int64_t start = *t[i].text_offset;
    const int64_t stop = i + 1 < t.size() ? *t[i + 1].text_offset : INT64_MAX;
    if (start >= end) break;  // the generated token
    if (stop <= ctx) continue;
    if (!add_token(t[i], &s)) {
      s.cannot = "the continuation's token at offset " + std::to_string(start) + " has no logprob";
      return s;
    }
  }
  if (s.tokens == 0) s.cannot = "no prompt token of the continuation came back";
  return s;
}

}  // namespace h0::eval
