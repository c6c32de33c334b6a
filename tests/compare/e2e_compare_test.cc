// Judging e2e responses against goldens: exact ids and text, vLLM's check_logprobs_close
// (parting at a near tie is allowed once), and two responses of one request.
#include "compare/e2e_compare.h"

#include <gtest/gtest.h>

#include "tokenizer/unicode_text.h"

namespace h0::compare {
namespace {

service::Result response(std::vector<int64_t> ids, std::string text,
                         std::string finish = "length") {
  service::Result r;
  r.outcome = service::Outcome::kOk;
  r.token_ids = std::move(ids);
  r.text = std::move(text);
  r.finish_reason = std::move(finish);
  return r;
}

// Per-token logprobs: the chosen id with logprob `lp`, and `top` as "token_id:N" entries.
void add_token(service::Result* r, int64_t id, double lp,
               const std::vector<std::pair<int64_t, double>>& top) {
  service::TokenInfo t;
  t.id = id;
  t.logprob = lp;
  for (const auto& [tid, tlp] : top) t.top.push_back({"token_id:" + std::to_string(tid), tlp});
  r->tokens.push_back(t);
}

nlohmann::json golden() {
  return {{"token_ids", {5, 6, 7, 8}},
          {"text", "abcd"},
          {"finish_reason", "length"},
          {"logprobs",
           {{{"id", 5}, {"logprob", -0.1}, {"top", {{5, -0.1}, {9, -3.0}}}},
            {{"id", 6}, {"logprob", -0.5}, {"top", {{6, -0.5}, {1, -0.50001}}}},
            {{"id", 7}, {"logprob", -0.2}, {"top", {{7, -0.2}, {2, -4.0}}}},
            {{"id", 8}, {"logprob", -0.3}, {"top", {{8, -0.3}, {3, -5.0}}}}}}};
}

TEST(E2eCompare, ExactNamesTheFirstDifference) {
  EXPECT_TRUE(compare_exact(golden(), response({5, 6, 7, 8}, "abcd")).pass);
  const ResponseVerdict v = compare_exact(golden(), response({5, 6, 9, 8}, "abxd"));
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.first_difference, 2);
  EXPECT_NE(v.message.find("position 2"), std::string::npos) << v.message;
  EXPECT_FALSE(compare_exact(golden(), response({5, 6, 7}, "abc")).pass);  // shorter
  EXPECT_FALSE(compare_exact(golden(), response({5, 6, 7, 8}, "abcd", "stop")).pass);
  const ResponseVerdict text_only = compare_exact(golden(), response({}, "abcd"));
  EXPECT_TRUE(text_only.pass);
  EXPECT_NE(text_only.message.find("compared the text"), std::string::npos) << text_only.message;
  EXPECT_FALSE(compare_exact(golden(), response({}, "abce")).pass);
}

// Texts that part inside a multi-byte character: the message quotes whole characters only (a
// cut UTF-8 sequence in a result once aborted the case's worker when it was written as JSON).
TEST(E2eCompare, MessagesNeverSplitACharacter) {
  nlohmann::json g = {{"token_ids", nlohmann::json::array()},
                      {"text",
                       "ab\xE5\x8D\x81"
                       "cd"}};  // ab十cd
  const ResponseVerdict v = compare_exact(g, response({},
                                                      "ab\xE5\x8D\x82"
                                                      "cd"));  // ab卂cd
  EXPECT_FALSE(v.pass);
  EXPECT_FALSE(tokenizer::find_invalid_utf8(v.message).has_value()) << v.message;
  EXPECT_NO_THROW((void)nlohmann::json(v.message).dump());
  const ResponseVerdict r =
      compare_responses(response({}, "x\xE5\x8D\x81"), response({}, "x\xE5\x8D\x82"));
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(tokenizer::find_invalid_utf8(r.message).has_value()) << r.message;
}

// Without ids in the response, the model's tokenizer names the golden token where the texts part.
TEST(E2eCompare, TextOnlyNamesTheGoldenTokenWhereTheTextsPart) {
  const auto tok = tokenizer::Tokenizer::from_file(std::string(H0_SOURCE_DIR) +
                                                   "/configs/models/tiny-llama/tokenizer.json");
  const std::vector<int32_t> ids = tok.encode("The capital of France is Paris", false);
  ASSERT_GE(ids.size(), 5u);
  nlohmann::json g = {{"token_ids", std::vector<int64_t>(ids.begin(), ids.end())},
                      {"text", tok.decode(ids, true)},
                      {"finish_reason", "length"}};
  std::vector<int32_t> changed = ids;
  changed[4] = ids[4] == 100 ? 101 : 100;
  const ResponseVerdict v = compare_exact(g, response({}, tok.decode(changed, true)), &tok);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.first_difference, 4) << v.message;
  EXPECT_NE(v.message.find("at token 4 (byte"), std::string::npos) << v.message;
  EXPECT_TRUE(compare_exact(g, response({}, tok.decode(ids, true)), &tok).pass);
}

TEST(E2eCompare, LogprobsAllowOnePartingAtANearTie) {
  service::Result same = response({5, 6, 7, 8}, "abcd");
  add_token(&same, 5, -0.1, {{5, -0.1}});
  add_token(&same, 6, -0.5001, {{6, -0.5}});
  add_token(&same, 7, -0.2, {{7, -0.2}});
  add_token(&same, 8, -0.3, {{8, -0.3}});
  ResponseVerdict v = compare_logprobs(golden(), same, 0.01);
  EXPECT_TRUE(v.pass) << v.message;
  EXPECT_NEAR(v.max_logprob_diff, 1e-4, 1e-9);
  EXPECT_FALSE(compare_logprobs(golden(), same, 1e-5).pass);  // the logprob itself off by 1e-4

  // Parted at position 1 onto the golden's runner-up, which has ours in its top: a pass.
  service::Result tie = response({5, 1, 4, 4}, "a?..");
  add_token(&tie, 5, -0.1, {{5, -0.1}});
  add_token(&tie, 1, -0.5, {{1, -0.5}, {6, -0.50001}});
  add_token(&tie, 4, -0.1, {{4, -0.1}});
  add_token(&tie, 4, -0.1, {{4, -0.1}});
  v = compare_logprobs(golden(), tie, 0.01);
  EXPECT_TRUE(v.pass) << v.message;
  EXPECT_EQ(v.first_difference, 1);

  // Parted where the golden's token is not in our top: a failure naming the position.
  service::Result wrong = response({5, 6, 2, 8}, "ab?d");
  add_token(&wrong, 5, -0.1, {{5, -0.1}});
  add_token(&wrong, 6, -0.5, {{6, -0.5}});
  add_token(&wrong, 2, -0.1, {{2, -0.1}, {3, -2.0}});
  add_token(&wrong, 8, -0.3, {{8, -0.3}});
  v = compare_logprobs(golden(), wrong, 0.01);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.first_difference, 2);
  EXPECT_NE(v.message.find("not in ours"), std::string::npos) << v.message;

  EXPECT_FALSE(
      compare_logprobs(golden(), response({5, 6, 7, 8}, "abcd"), 0.01).pass);  // no logprobs came
}

TEST(E2eCompare, ResponsesOfOneRequest) {
  EXPECT_TRUE(compare_responses(response({1, 2, 3}, "xyz"), response({1, 2, 3}, "xyz")).pass);
  const ResponseVerdict v =
      compare_responses(response({1, 2, 3}, "xyz"), response({1, 2, 4}, "xyw"));
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.first_difference, 2);
  EXPECT_FALSE(compare_responses(response({}, "xyz"), response({}, "xy")).pass);
}

}  // namespace
}  // namespace h0::compare
