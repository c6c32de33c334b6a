// The serving checks' judgements (compare/serving_compare.h): two answers the same within a
// logprob bound, and the KL divergence of two top-k logprob lists.
#include "compare/serving_compare.h"

#include <gtest/gtest.h>

#include <cmath>

namespace h0::compare {
namespace {

service::Result answer(std::vector<int64_t> ids, std::vector<double> logprobs) {
  service::Result r;
  r.outcome = service::Outcome::kOk;
  r.token_ids = ids;
  for (size_t i = 0; i < ids.size(); ++i) {
    service::TokenInfo t;
    t.text = " t" + std::to_string(ids[i]);
    t.id = ids[i];
    t.logprob = logprobs[i];
    r.text += t.text;
    r.tokens.push_back(t);
  }
  return r;
}

TEST(SameAnswer, TokensMustMatchAndLogprobsStayWithinTheBound) {
  const service::Result ref = answer({5, 6, 7}, {-0.1, -0.2, -0.3});
  EXPECT_TRUE(same_answer(ref, answer({5, 6, 7}, {-0.1, -0.205, -0.3}), 0.01).pass);
  const ResponseVerdict drift = same_answer(ref, answer({5, 6, 7}, {-0.1, -0.25, -0.3}), 0.01);
  EXPECT_FALSE(drift.pass);
  EXPECT_EQ(drift.first_difference, 1);
  EXPECT_NE(drift.message.find("token 1 ' t6' (id 6)"), std::string::npos) << drift.message;
  EXPECT_NEAR(drift.max_logprob_diff, 0.05, 1e-12);
  const ResponseVerdict other = same_answer(ref, answer({5, 9, 7}, {-0.1, -0.2, -0.3}), 1);
  EXPECT_FALSE(other.pass);
  EXPECT_EQ(other.first_difference, 1);
}

TEST(TopKKl, ZeroForTheSameListsAndGrowsWithTheDifference) {
  const TopLogprobs p = {{"a", std::log(0.6)}, {"b", std::log(0.3)}, {"c", std::log(0.05)}};
  EXPECT_NEAR(top_k_kl(p, p), 0, 1e-12);
  const TopLogprobs near = {{"a", std::log(0.59)}, {"b", std::log(0.31)}, {"c", std::log(0.05)}};
  const TopLogprobs far = {{"a", std::log(0.3)}, {"b", std::log(0.6)}, {"c", std::log(0.05)}};
  EXPECT_GT(top_k_kl(p, near), 0);
  EXPECT_LT(top_k_kl(p, near), 1e-3);
  EXPECT_GT(top_k_kl(p, far), 0.1);
  // Exact on full distributions: KL((0.6, 0.3, 0.1) || (0.3, 0.6, 0.1)).
  const TopLogprobs full_p = {{"a", std::log(0.6)}, {"b", std::log(0.3)}, {"c", std::log(0.1)}};
  const TopLogprobs full_q = {{"a", std::log(0.3)}, {"b", std::log(0.6)}, {"c", std::log(0.1)}};
  EXPECT_NEAR(top_k_kl(full_p, full_q), 0.6 * std::log(2.0) + 0.3 * std::log(0.5), 1e-9);
}

TEST(TopKKl, ATokenOnlyOneListHasGetsTheOthersLeftoverMass) {
  const TopLogprobs p = {{"a", std::log(0.7)}, {"b", std::log(0.2)}};
  const TopLogprobs q = {{"a", std::log(0.7)}, {"c", std::log(0.2)}};
  const double kl = top_k_kl(p, q);
  EXPECT_GT(kl, 0.05);  // b and c swapped their mass
  EXPECT_TRUE(std::isfinite(kl));
}

}  // namespace
}  // namespace h0::compare
