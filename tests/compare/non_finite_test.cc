// first_non_finite: the first probe in execution order holding a NaN or an infinity, with the
// position of its first such element and how many it holds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compare/model_compare.h"

namespace h0::compare {
namespace {

tensor::Tensor of(std::vector<float> v, tensor::Shape shape) {
  return tensor::Tensor::copy_of(tensor::DType::kF32, std::move(shape), v.data());
}

TEST(NonFiniteOrigin, IsTheFirstProbeHoldingOne) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  std::vector<std::pair<std::string, tensor::Tensor>> probes = {
      {"model.embed_tokens", of({1, 2, 3, 4, 5, 6}, {2, 3})},
      {"model.layers.0.self_attn", of({1, 2, 3, 4, 5, -inf}, {2, 3})},
      {"model.layers.0.mlp", of({nan, 2, 3, 4, 5, nan}, {2, 3})},
  };
  auto o = first_non_finite(probes);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->name, "model.layers.0.self_attn");
  EXPECT_EQ(o->index, 5);
  EXPECT_EQ(o->position, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(o->value, -inf);
  EXPECT_EQ(o->count, 1);
  EXPECT_EQ(o->describe(), "model.layers.0.self_attn at [1, 2] (-inf; 1 of 6 elements not finite)");
  probes.erase(probes.begin() + 1);
  o = first_non_finite(probes);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->name, "model.layers.0.mlp");
  EXPECT_EQ(o->count, 2);
  EXPECT_EQ(o->to_json()["value"], "nan");
  probes.pop_back();
  EXPECT_FALSE(first_non_finite(probes).has_value());
}

// A bf16 probe of several conversion blocks: the index and the count span them.
TEST(NonFiniteOrigin, CountsAcrossBlocksOfAWideProbe) {
  std::vector<float> v(3 * 4097, 1.0f);
  v[4097] = std::numeric_limits<float>::infinity();
  v[3 * 4097 - 1] = std::nanf("");
  const tensor::Tensor bf16 = of(v, {3, 4097, 1}).to(tensor::DType::kBF16);
  const auto o = first_non_finite({{"model.norm", bf16}});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->index, 4097);
  EXPECT_EQ(o->position, (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(o->count, 2);
  EXPECT_EQ(o->numel, 3 * 4097);
}

}  // namespace
}  // namespace h0::compare
