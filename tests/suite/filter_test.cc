// Case filters: gtest-style positive and negative glob patterns over whole case ids.
#include "suite/filter.h"

#include <gtest/gtest.h>

namespace h0::suite {
namespace {

TEST(Glob, MatchesTheWholeId) {
  EXPECT_TRUE(glob_match("rmsnorm", "rmsnorm"));
  EXPECT_FALSE(glob_match("rmsnorm", "rmsnorm[dtype=f32]"));
  EXPECT_FALSE(glob_match("norm", "rmsnorm"));
  EXPECT_TRUE(glob_match("*norm*", "rmsnorm[dtype=f32]"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("", ""));
  EXPECT_FALSE(glob_match("", "a"));
  EXPECT_FALSE(glob_match("?", ""));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_TRUE(glob_match("a*b*c", "a__b__b__c"));
  EXPECT_FALSE(glob_match("a*b*c", "a__b__b__"));
  EXPECT_TRUE(glob_match("**a**", "bab"));
}

TEST(Glob, BracketsAndPunctuationAreLiteral) {
  EXPECT_TRUE(glob_match("rmsnorm[dtype=bf16,shape=7x4096]", "rmsnorm[dtype=bf16,shape=7x4096]"));
  EXPECT_TRUE(glob_match("rmsnorm[dtype=bf16,*]", "rmsnorm[dtype=bf16,shape=7x4096]"));
  EXPECT_FALSE(glob_match("rmsnorm[dtype=bf16,*]", "rmsnorm[dtype=f16,shape=7x4096]"));
  EXPECT_FALSE(glob_match("rmsnorm[df]", "rmsnormd"));  // not a character class
}

TEST(Filter, EmptyMatchesEverything) {
  const Filter f("");
  EXPECT_TRUE(f.matches("rmsnorm"));
  EXPECT_TRUE(f.matches("tiny-llama/logits"));
  EXPECT_EQ(f.positive(), std::vector<std::string>{"*"});
  EXPECT_TRUE(f.negative().empty());
}

TEST(Filter, PositivePatterns) {
  const Filter f("rmsnorm*:softmax[dtype=f32]");
  EXPECT_TRUE(f.matches("rmsnorm"));
  EXPECT_TRUE(f.matches("rmsnorm[dtype=bf16,shape=7x4096]"));
  EXPECT_TRUE(f.matches("softmax[dtype=f32]"));
  EXPECT_FALSE(f.matches("softmax[dtype=bf16]"));
  EXPECT_FALSE(f.matches("layernorm"));
}

TEST(Filter, NegativePatterns) {
  const Filter f("rmsnorm*:softmax*-*bf16*:*f16*");
  EXPECT_EQ(f.positive(), (std::vector<std::string>{"rmsnorm*", "softmax*"}));
  EXPECT_EQ(f.negative(), (std::vector<std::string>{"*bf16*", "*f16*"}));
  EXPECT_TRUE(f.matches("rmsnorm[dtype=f32]"));
  EXPECT_FALSE(f.matches("rmsnorm[dtype=bf16]"));
  EXPECT_FALSE(f.matches("softmax[dtype=f16]"));
  EXPECT_FALSE(f.matches("layernorm[dtype=f32]"));
}

TEST(Filter, OnlyNegativeMeansEverythingElse) {
  const Filter f("-*slow*");
  EXPECT_TRUE(f.matches("rmsnorm"));
  EXPECT_FALSE(f.matches("model/slow-path"));
  const Filter g("*:-a*:b*");
  EXPECT_EQ(g.negative(), (std::vector<std::string>{"a*", "b*"}));
  EXPECT_FALSE(g.matches("b1"));
  EXPECT_TRUE(g.matches("c1"));
}

TEST(Filter, DashInsideANameIsPartOfThePattern) {
  const Filter f("tiny-llama/*");
  EXPECT_EQ(f.positive(), std::vector<std::string>{"tiny-llama/*"});
  EXPECT_TRUE(f.negative().empty());
  EXPECT_TRUE(f.matches("tiny-llama/logits"));
  EXPECT_FALSE(f.matches("tiny-qwen/logits"));
  const Filter g("tiny-llama/*-*layer?");
  EXPECT_EQ(g.positive(), std::vector<std::string>{"tiny-llama/*"});
  EXPECT_EQ(g.negative(), std::vector<std::string>{"*layer?"});
  EXPECT_TRUE(g.matches("tiny-llama/layer10"));
  EXPECT_FALSE(g.matches("tiny-llama/layer1"));
  const Filter h("rmsnorm[dtype=bf16,*]-*shape=1x64*");
  EXPECT_TRUE(h.matches("rmsnorm[dtype=bf16,shape=7x4096]"));
  EXPECT_FALSE(h.matches("rmsnorm[dtype=bf16,shape=1x64]"));
}

TEST(Filter, EmptyPatternsAreIgnored) {
  const Filter f(":rmsnorm::");
  EXPECT_EQ(f.positive(), std::vector<std::string>{"rmsnorm"});
  EXPECT_TRUE(f.matches("rmsnorm"));
  EXPECT_FALSE(f.matches("softmax"));
}

}  // namespace
// The cases harness history matches checks with (it used a copy of this function).
TEST(Glob, MatchesHistorysCheckPatterns) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*", "ops/rmsnorm[f32]"));
  EXPECT_TRUE(glob_match("ops/*", "ops/rmsnorm[f32]"));
  EXPECT_TRUE(glob_match("*norm*", "ops/rmsnorm[f32]"));
  EXPECT_TRUE(glob_match("ops/?msnorm", "ops/rmsnorm"));
  EXPECT_TRUE(glob_match("a*b*c", "aXbYbZc"));
  EXPECT_TRUE(glob_match("a**", "a"));
  EXPECT_FALSE(glob_match("ops/?msnorm", "ops/msnorm"));
  EXPECT_FALSE(glob_match("ops/*", "model/logits"));
  EXPECT_FALSE(glob_match("a*b", "aXbY"));
  EXPECT_FALSE(glob_match("", "a"));
  EXPECT_FALSE(glob_match("abc", "ab"));
}

}  // namespace h0::suite
