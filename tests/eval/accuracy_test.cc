#include "eval/accuracy.h"

#include <gtest/gtest.h>

#include "diff/statistics.h"

namespace h0::eval {
namespace {

// n items, the reference right on the first `ref_right`; the head as the reference except that
// `lost` of its right items are wrong and `gained` of its wrong items are right.
struct Pair {
  std::vector<ItemResult> head;
  std::map<std::string, ItemResult> ref;
};
Pair make(int n, int ref_right, int lost, int gained) {
  Pair p;
  for (int i = 0; i < n; ++i) {
    ItemResult r;
    r.id = "item-" + std::to_string(i);
    r.correct = i < ref_right;
    r.answer = r.correct ? "right" : "wrong";
    ItemResult h = r;
    if (i < lost) h.correct = false, h.answer = "wrong";
    if (i >= ref_right && i < ref_right + gained) h.correct = true, h.answer = "right";
    p.ref[r.id] = r;
    p.head.push_back(h);
  }
  return p;
}

GateSpec drop_gate() {
  GateSpec g;
  g.max_drop = 0.02;
  g.alpha = 0.05;
  return g;
}

TEST(Gate, PairedTestCatchesADropTheUnpairedOneMisses) {
  const Pair p = make(200, 100, 8, 0);  // 0.50 -> 0.46
  const Comparison c = compare(p.head, p.ref, drop_gate());
  EXPECT_EQ(c.n, 200);
  EXPECT_EQ(c.lost, 8);
  EXPECT_NEAR(c.delta, -0.04, 1e-12);
  EXPECT_NEAR(c.mcnemar_p, 0.0078125, 1e-12);
  EXPECT_GT(c.unpaired_p, 0.4);  // an unpaired comparison of the two scores sees nothing
  EXPECT_EQ(c.flipped.size(), 8u);
  const Verdict v = judge(c, drop_gate(), true, 200, c.head_right);
  EXPECT_EQ(v.outcome, "fail") << v.message;
  EXPECT_NE(v.message.find("score dropped 0.040"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("McNemar exact p = 0.008"), std::string::npos) << v.message;
}

TEST(Gate, TwoWayFlipsAreNoDropButNotAgreement) {
  const Pair p = make(200, 100, 6, 6);
  GateSpec g = drop_gate();
  const Comparison c = compare(p.head, p.ref, g);
  EXPECT_EQ(c.delta, 0);
  EXPECT_EQ(c.mcnemar_p, 1);
  EXPECT_NEAR(c.agreement, 0.94, 1e-12);
  EXPECT_NE(judge(c, g, true, 200, c.head_right).outcome, "fail");
  g.min_agreement = 1.0;
  const Verdict v = judge(c, g, true, 200, c.head_right);
  EXPECT_EQ(v.outcome, "fail");
  EXPECT_NE(v.message.find("12 items answered differently (item-0, item-1"), std::string::npos)
      << v.message;
}

TEST(Gate, IdenticalAnswersPassOnlyWithEnoughItems) {
  const GateSpec g = drop_gate();
  const Pair many = make(200, 120, 0, 0);
  const Comparison c = compare(many.head, many.ref, g);
  EXPECT_EQ(c.agreement, 1);
  EXPECT_EQ(judge(c, g, true, 200, c.head_right).outcome, "pass");
  // 20 items that all agree cannot rule out a 2-point drop: the Wilson bound of 0 lost of 20.
  const Pair few = make(20, 12, 0, 0);
  const Comparison f = compare(few.head, few.ref, g);
  EXPECT_NEAR(f.drop_bound, diff::wilson_interval(0, 20, 0.05).hi, 1e-12);
  const Verdict v = judge(f, g, true, 20, f.head_right);
  EXPECT_EQ(v.outcome, "inconclusive");
  EXPECT_EQ(v.message.rfind("inconclusive: n too small: 20 items allow a drop of up to 0.161", 0),
            0u)
      << v.message;
}

TEST(Gate, NoReferenceIsNeverASilentPass) {
  const Pair p = make(50, 30, 0, 0);
  const Comparison c = compare(p.head, {}, drop_gate());
  EXPECT_EQ(c.n, 0);
  const Verdict v = judge(c, drop_gate(), false, 50, 30);
  EXPECT_EQ(v.outcome, "inconclusive");
  EXPECT_NE(v.message.find("no reference"), std::string::npos);
  GateSpec floor;
  floor.min_score = 0.7;
  EXPECT_EQ(judge(c, floor, false, 50, 30).outcome, "fail");  // 0.6 < 0.7
  floor.min_score = 0.5;
  EXPECT_EQ(judge(c, floor, false, 50, 30).outcome, "pass");
}

TEST(Gate, UnansweredItemsAreLeftOutOfThePairs) {
  Pair p = make(10, 5, 0, 0);
  p.head[0].error = "timeout";
  p.ref.erase("item-9");
  const Comparison c = compare(p.head, p.ref, drop_gate());
  EXPECT_EQ(c.n, 8);
}

}  // namespace
}  // namespace h0::eval
