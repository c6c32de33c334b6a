// Reading files the Python `safetensors` package wrote, writing the same bytes it writes, and
// slice reads.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>

#include "base/error.h"
#include "base/mapped_file.h"
#include "io/safetensors_reader.h"
#include "io/safetensors_writer.h"
#include "test_util.h"

namespace h0::io {
namespace {

using tensor::DType;
using tensor::Tensor;

const std::string kAllDtypes = "foundation/st/all_dtypes.safetensors";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The values gen_foundation.py stored: element k of a [2,3,4] tensor.
double fixture_value(DType dtype, int k) {
  switch (dtype) {
    case DType::kI64:
    case DType::kI32:
    case DType::kI8:
      return k * 3 - 30;
    case DType::kU8:
      return k * 10;
    case DType::kBool:
      return k % 3 == 0;
    default:
      return (k - 12) * 0.375;
  }
}

TEST(Safetensors, ReadsEveryDtypeThePythonPackageWrote) {
  const auto f = SafetensorsFile::open(test::golden_path(kAllDtypes));
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.entries().size(), 13u);
  for (int d = 0; d < tensor::kNumDTypes; ++d) {
    const DType dtype = static_cast<DType>(d);
    SCOPED_TRACE(tensor::dtype_name(dtype));
    const Tensor t = f.get(tensor::dtype_name(dtype));
    ASSERT_EQ(t.dtype(), dtype);
    ASSERT_EQ(t.shape(), (tensor::Shape{2, 3, 4}));
    for (int k = 0; k < 24; ++k) {
      // Expected: the f32 value converted to the dtype by our conversion (torch-checked).
      const float v = static_cast<float>(fixture_value(dtype, k));
      const double expected = Tensor::copy_of(DType::kF32, {}, &v).to(dtype).at(0);
      EXPECT_EQ(t.at(k), expected) << "element " << k;
    }
  }
  EXPECT_EQ(f.get("scalar").shape(), tensor::Shape{});
  EXPECT_EQ(f.get("scalar").at(0), 3.25);
  EXPECT_EQ(f.get("empty").shape(), (tensor::Shape{0, 3}));
  EXPECT_EQ(f.get("empty").numel(), 0);
}

TEST(Safetensors, TensorsAreZeroCopyViewsOfTheMapping) {
  const auto f = SafetensorsFile::open(test::golden_path(kAllDtypes));
  const Tensor t = f.get("f32");
  EXPECT_FALSE(t.writable());
  const auto* p = static_cast<const std::byte*>(t.data());
  EXPECT_EQ(p, f.tensor_bytes(*f.find("f32")));
}

TEST(Safetensors, WriterProducesTheBytesOfThePythonPackage) {
  const std::string original = test::golden_path(kAllDtypes);
  const auto f = SafetensorsFile::open(original);
  std::vector<NamedTensor> tensors;
  // Hand them over in reverse name order: the writer must find the canonical layout itself.
  for (auto it = f.entries().rbegin(); it != f.entries().rend(); ++it) {
    tensors.push_back({it->name, f.get(it->name)});
  }
  test::TempDir dir;
  write_safetensors(dir.file("out.safetensors"), tensors, f.metadata());
  EXPECT_EQ(read_bytes(dir.file("out.safetensors")), read_bytes(original));
}

// Tensors produced later than their place in the layout (an fp8 weight's scales, laid out first,
// come out of quantizing the weight) land where the header says: the file is byte for byte the
// Python package's, whichever tensors are deferred, the last and the empty one included.
TEST(Safetensors, DeferredTensorsAreWrittenInPlace) {
  const std::string original = test::golden_path(kAllDtypes);
  const auto f = SafetensorsFile::open(original);
  std::vector<NamedTensor> specs;
  for (const auto& e : f.entries()) {
    const Tensor t = f.get(e.name);
    specs.push_back({e.name, Tensor::view(t.dtype(), t.shape(), nullptr, nullptr)});
  }
  for (const std::set<std::string>& later :
       std::vector<std::set<std::string>>{{"f32", "i8", "empty"}, {"bool"}, {}}) {
    test::TempDir dir;
    std::vector<std::string> order;
    write_safetensors_streamed(
        dir.file("out.safetensors"), specs, f.metadata(),
        [&](const NamedTensor& spec, const ByteSink& write) {
          order.push_back(spec.name);
          const Tensor t = f.get(spec.name);
          write(t.data(), t.nbytes() / 2);  // in two pieces
          write(static_cast<const char*>(t.data()) + t.nbytes() / 2, t.nbytes() - t.nbytes() / 2);
        },
        [&](const NamedTensor& spec) { return later.count(spec.name) > 0; });
    EXPECT_EQ(read_bytes(dir.file("out.safetensors")), read_bytes(original));
    ASSERT_EQ(order.size(), specs.size());
    for (size_t i = 0; i < order.size(); ++i)  // the deferred ones last
      EXPECT_EQ(later.count(order[i]) > 0, i >= order.size() - later.size()) << order[i];
  }
}

TEST(Safetensors, WrittenFilesReadBack) {
  test::TempDir dir;
  const float values[] = {1, 2, 3, 4, 5, 6};
  const Tensor a = Tensor::copy_of(DType::kF32, {2, 3}, values);
  write_safetensors(dir.file("x.safetensors"),
                    {{"b.weight", a.to(DType::kBF16)},
                     {"a \"quoted\"\n", a},
                     {"empty", Tensor::zeros(DType::kI64, {0})}},
                    {{"note", "ünïcode"}});
  const auto f = SafetensorsFile::open(dir.file("x.safetensors"));
  EXPECT_EQ(f.header_bytes() % 8, 0u);
  EXPECT_EQ(f.metadata().at("note"), "ünïcode");
  EXPECT_EQ(f.get("a \"quoted\"\n").at(5), 6.0);
  EXPECT_EQ(f.get("b.weight").dtype(), DType::kBF16);
  EXPECT_EQ(f.get("b.weight").at(4), 5.0);
  EXPECT_EQ(f.get("empty").numel(), 0);
}

TEST(Safetensors, WriterRefusesDuplicateAndReservedNames) {
  test::TempDir dir;
  const Tensor t = Tensor::zeros(DType::kF32, {1});
  EXPECT_THROW(write_safetensors(dir.file("d.safetensors"), {{"x", t}, {"x", t}}), InputError);
  EXPECT_THROW(write_safetensors(dir.file("m.safetensors"), {{"__metadata__", t}}), InputError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("d.safetensors")));
}

TEST(Safetensors, WriteFailureLeavesNothingBehind) {
  EXPECT_THROW(
      write_safetensors("/nonexistent-dir/x.safetensors", {{"x", Tensor::zeros(DType::kF32, {1})}}),
      InputError);
}

// A 2-D weight [rows, cols] with value r * 1000 + c.
Tensor grid(int64_t rows, int64_t cols) {
  Tensor t = Tensor::zeros(DType::kF32, {rows, cols});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      t.mutable_data_as<float>()[r * cols + c] = float(r * 1000 + c);
  }
  return t;
}

TEST(Safetensors, RowSliceIsAViewOfOnlyThoseRows) {
  test::TempDir dir;
  write_safetensors(dir.file("w.safetensors"), {{"w", grid(64, 48)}});
  const auto f = SafetensorsFile::open(dir.file("w.safetensors"));
  const Tensor rows = f.slice("w", 0, 16, 32);
  EXPECT_EQ(rows.shape(), (tensor::Shape{16, 48}));
  EXPECT_EQ(rows.data(), f.tensor_bytes(*f.find("w")) + 16 * 48 * 4);
  EXPECT_EQ(rows.at(0), 16000.0);
  EXPECT_EQ(rows.at(16 * 48 - 1), 31047.0);
}

TEST(Safetensors, ColumnSliceCopiesOnlyThoseColumns) {
  test::TempDir dir;
  write_safetensors(dir.file("w.safetensors"), {{"w", grid(64, 48)}});
  const auto f = SafetensorsFile::open(dir.file("w.safetensors"));
  const Tensor cols = f.slice("w", 1, 12, 24);
  ASSERT_EQ(cols.shape(), (tensor::Shape{64, 12}));
  EXPECT_TRUE(cols.writable());  // an owned copy
  for (int64_t r = 0; r < 64; ++r) {
    for (int64_t c = 0; c < 12; ++c) ASSERT_EQ(cols.at(r * 12 + c), double(r * 1000 + 12 + c));
  }
}

TEST(Safetensors, SliceOfAMiddleAxis) {
  test::TempDir dir;
  write_safetensors(dir.file("w.safetensors"), {{"w", grid(6, 20).reshape({6, 4, 5})}});
  const auto f = SafetensorsFile::open(dir.file("w.safetensors"));
  const Tensor s = f.slice("w", 1, 1, 3);  // [6, 2, 5]
  ASSERT_EQ(s.shape(), (tensor::Shape{6, 2, 5}));
  EXPECT_EQ(s.at(0), 5.0);      // row 0, middle 1, col 0 -> flat 5
  EXPECT_EQ(s.at(10), 1005.0);  // row 1, middle 1, col 0
}

TEST(Safetensors, BadSlicesAreInputErrors) {
  const auto f = SafetensorsFile::open(test::golden_path(kAllDtypes));
  EXPECT_THROW(f.slice("f32", 3, 0, 1), InputError);
  EXPECT_THROW(f.slice("f32", 0, 1, 3), InputError);
  EXPECT_THROW(f.slice("f32", 1, 2, 1), InputError);
  EXPECT_THROW(f.get("absent"), InputError);
  EXPECT_EQ(f.find("absent"), nullptr);
}

}  // namespace
}  // namespace h0::io
