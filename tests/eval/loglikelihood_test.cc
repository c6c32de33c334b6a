// A loglikelihood continuation located by tokens in an engine's echo. vLLM 0.32 lists the BOS
// token with its text at text_offset 0 and counts its 17 characters in every later offset while
// its echoed text omits it: by character offsets the continuation's sum takes the wrong tokens,
// by tokens it takes the right ones.
#include "eval/loglikelihood.h"

#include <gtest/gtest.h>

#include "base/utf8.h"

namespace h0::eval {
namespace {

const tokenizer::Tokenizer& tiny_llama() {
  static const auto tok = tokenizer::Tokenizer::from_file(
      std::string(H0_SOURCE_DIR) + "/configs/models/tiny-llama/tokenizer.json");
  return tok;
}

// The echo of `pair.ids` as vLLM returns it: every prompt token with its text and offset (the
// first without a logprob), token i's logprob -(i + 1) / 8, then one generated token. With
// `bos_in_offsets`, the BOS is listed with its text and its characters counted in later offsets.
service::Result echo(const TokenizedPair& pair, bool bos_in_offsets) {
  const tokenizer::Tokenizer& tok = tiny_llama();
  service::Result r;
  r.outcome = service::Outcome::kOk;
  int64_t offset = 0;
  for (size_t i = 0; i <= pair.ids.size(); ++i) {
    const int32_t id = i < pair.ids.size() ? int32_t(pair.ids[i]) : 42;  // 42: the generated one
    service::TokenInfo t;
    const bool special = tok.is_special(id);
    t.text = special ? *tok.id_to_token(id) : tok.decode(std::vector<int32_t>{id}, true);
    t.text_offset = offset;
    if (i > 0) t.logprob = -double(i + 1) / 8;
    if (t.logprob) t.top.push_back({t.text, *t.logprob});
    offset += int64_t(special && !bos_in_offsets ? 0 : utf8_characters(t.text));
    r.tokens.push_back(t);
  }
  r.completion_tokens = 1;
  return r;
}

double expected_sum(const TokenizedPair& pair) {
  double sum = 0;
  for (size_t i = pair.begin; i < pair.end; ++i) sum += -double(i + 1) / 8;
  return sum;
}

TEST(Loglikelihood, TheContinuationsTokensAreThoseEndingPastTheContext) {
  const tokenizer::Tokenizer& tok = tiny_llama();
  const std::string context = "The capital of France is", continuation = " Paris";
  const TokenizedPair p = tokenize_pair(tok, context, continuation);
  const std::vector<int32_t> with = tok.encode(context + continuation, true);
  EXPECT_EQ(p.ids, std::vector<int64_t>(with.begin(), with.end()));
  ASSERT_TRUE(tok.bos_id().has_value());
  EXPECT_EQ(p.ids.front(), *tok.bos_id());
  EXPECT_EQ(p.begin, 1 + tok.encode(context, false).size());
  EXPECT_EQ(p.end, p.ids.size());
  // A token that straddles the boundary is the continuation's.
  const TokenizedPair straddle = tokenize_pair(tok, "The capital of France is Par", "is");
  EXPECT_LT(straddle.begin, straddle.end);
  std::string continuation_text;
  for (size_t i = straddle.begin; i < straddle.end; ++i)
    continuation_text += tok.id_to_bytes(int32_t(straddle.ids[i]));
  EXPECT_TRUE(continuation_text.ends_with("is")) << continuation_text;
  EXPECT_GE(continuation_text.size(), 2u);
}

TEST(Loglikelihood, ABosInTheEchoOffsetsCannotShiftTheContinuation) {
  const std::string context = "The capital of France is", continuation = " Paris";
  const TokenizedPair p = tokenize_pair(tiny_llama(), context, continuation);
  const double want = expected_sum(p);
  for (const bool bos : {false, true}) {
    const EchoScore s = score_echo_tokens(echo(p, bos), p, 1, tiny_llama());
    ASSERT_EQ(s.cannot, "") << bos;
    EXPECT_DOUBLE_EQ(s.logprob, want) << bos;
    EXPECT_EQ(s.tokens, int64_t(p.end - p.begin));
    EXPECT_TRUE(s.greedy);
  }
  // By character offsets: right where the offsets count the echoed text only, wrong with vLLM's.
  EXPECT_DOUBLE_EQ(score_echo_offsets(echo(p, false), context, continuation).logprob, want);
  EXPECT_NE(score_echo_offsets(echo(p, true), context, continuation).logprob, want);
}

// llama.cpp's server leaves the BOS out of its echo (the first listed token then has no logprob):
// located from the end, the same tokens sum the same; an engine whose last tokens are others is
// said to tokenize differently.
TEST(Loglikelihood, AnEchoWithoutTheBosIsLocatedFromTheEnd) {
  const TokenizedPair p = tokenize_pair(tiny_llama(), "The capital of France is", " Paris");
  const double want = expected_sum(p);
  service::Result r = echo(p, false);
  r.tokens.erase(r.tokens.begin());  // no BOS
  r.tokens[0].logprob.reset();
  EchoScore s = score_echo_tokens(r, p, 1, tiny_llama());
  ASSERT_EQ(s.cannot, "");
  EXPECT_DOUBLE_EQ(s.logprob, want);
  EXPECT_NE(s.note.find("located from the end: the echo lists"), std::string::npos) << s.note;
  // By ids ("token_id:N" parsed), as vLLM names them: one other id is another tokenization.
  for (size_t i = 0; i + 1 < r.tokens.size(); ++i) r.tokens[i].id = p.ids[i + 1];
  r.tokens.back().id = 42;  // the generated one
  EXPECT_EQ(score_echo_tokens(r, p, 1, tiny_llama()).cannot, "");
  r.tokens[r.tokens.size() - 2].id = 7;  // the continuation's last token
  s = score_echo_tokens(r, p, 1, tiny_llama());
  EXPECT_NE(s.cannot.find("its last ones are not the continuation's"), std::string::npos)
      << s.cannot;
  // By text where the echo names no ids: a token of other text is another tokenization too.
  for (auto& t : r.tokens) t.id.reset();
  r.tokens[r.tokens.size() - 2].text = "xyz";
  EXPECT_NE(score_echo_tokens(r, p, 1, tiny_llama()).cannot, "");
  EXPECT_NE(score_echo_tokens(service::Result{}, p, 1, tiny_llama()).cannot, "");
}

}  // namespace
}  // namespace h0::eval
