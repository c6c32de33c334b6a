#include "tensor/tensor.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tensor/float_bits.h"

namespace h0::tensor {
namespace {

TEST(Tensor, ZerosOwnsAlignedZeroedStorage) {
  const Tensor t = Tensor::zeros(DType::kBF16, {3, 5});
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(t.nbytes(), 30u);
  EXPECT_TRUE(t.writable());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.at(i), 0.0);
}

TEST(Tensor, ScalarAndEmptyShapes) {
  EXPECT_EQ(numel({}), 1);
  EXPECT_EQ(numel({0, 3}), 0);
  EXPECT_EQ(shape_string({}), "scalar");
  EXPECT_EQ(shape_string({7, 4096}), "7x4096");
  const Tensor empty = Tensor::zeros(DType::kF32, {0, 3});
  EXPECT_EQ(empty.nbytes(), 0u);
  EXPECT_EQ(empty.to(DType::kF16).numel(), 0);
}

TEST(Tensor, ViewSharesMemoryAndKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  std::weak_ptr<std::vector<float>> watch = owner;
  Tensor v = Tensor::view(DType::kF32, {2, 3}, owner->data(), owner);
  owner.reset();
  EXPECT_FALSE(watch.expired());  // the view keeps it
  EXPECT_EQ(v.at(5), 6.0);
  const Tensor rows = v.slice_rows(1, 2);
  EXPECT_EQ(rows.shape(), (Shape{1, 3}));
  EXPECT_EQ(rows.at(0), 4.0);
  EXPECT_EQ(rows.data(), static_cast<const float*>(v.data()) + 3);
  v = Tensor();
  EXPECT_FALSE(watch.expired());  // the slice still does
}

TEST(Tensor, ReadOnlyViewRefusesWrites) {
  static const float data[2] = {1, 2};
  const Tensor v = Tensor::view(DType::kF32, {2}, data, nullptr);
  EXPECT_DEATH(v.mutable_data(), "read-only");
}

TEST(Tensor, ToConvertsAndCloneCopies) {
  const float values[] = {1.5f, -2.25f, 65504.0f, 1e-8f};
  const Tensor t = Tensor::copy_of(DType::kF32, {4}, values);
  const Tensor h = t.to(DType::kF16);
  EXPECT_EQ(h.dtype(), DType::kF16);
  EXPECT_EQ(h.data_as<uint16_t>()[0], f32_to_f16_bits(1.5f));
  EXPECT_EQ(h.at(2), 65504.0);
  const Tensor c = t.clone();
  EXPECT_NE(c.data(), t.data());
  c.mutable_data_as<float>()[0] = 9;
  EXPECT_EQ(t.at(0), 1.5);
}

TEST(Tensor, ReshapeKeepsStorage) {
  const Tensor t = Tensor::zeros(DType::kI32, {2, 6});
  const Tensor r = t.reshape({3, 4});
  EXPECT_EQ(r.data(), t.data());
  EXPECT_EQ(r.shape(), (Shape{3, 4}));
  EXPECT_DEATH(t.reshape({5}), "reshape");
}

// slice(axis, ...) against the row-major index arithmetic, on every axis of a [2, 3, 4] tensor.
TEST(Tensor, SliceCopiesAnyAxis) {
  Tensor t = Tensor::empty(DType::kI32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) t.mutable_data_as<int32_t>()[i] = i;
  const Tensor a = t.slice(1, 1, 3);
  ASSERT_EQ(a.shape(), (Shape{2, 2, 4}));
  for (int x = 0; x < 2; ++x)
    for (int y = 0; y < 2; ++y)
      for (int z = 0; z < 4; ++z)
        EXPECT_EQ(a.data_as<int32_t>()[(x * 2 + y) * 4 + z], x * 12 + (y + 1) * 4 + z);
  const Tensor b = t.slice(2, 3, 4);
  ASSERT_EQ(b.shape(), (Shape{2, 3, 1}));
  for (int r = 0; r < 6; ++r) EXPECT_EQ(b.data_as<int32_t>()[r], r * 4 + 3);
  EXPECT_EQ(t.slice(0, 1, 2).data_as<int32_t>()[0], 12);
}

}  // namespace
}  // namespace h0::tensor
