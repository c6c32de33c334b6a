// Tensors written by torch.save and numpy.save (tests/data/tensor_files, made by
// golden/tools/gen_tensor_file_fixtures.py with torch 2.15 and numpy 2.4): values, dtypes, strided
// views and storage offsets; and malformed files, each refused naming the file and the reason.
#include "io/torch_tensor_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>

#include "base/error.h"

namespace h0::io {
namespace {

using tensor::DType;

std::string file(const std::string& name) {
  return std::string(H0_SOURCE_DIR) + "/tests/data/tensor_files/" + name;
}

// The tensor's values as doubles, row-major.
std::vector<double> values(const tensor::Tensor& t) {
  const tensor::Tensor f = t.to(DType::kF64);
  return std::vector<double>(f.data_as<double>(), f.data_as<double>() + f.numel());
}

TEST(TorchTensorFile, ReadsWhatTorchSaveWrote) {
  const tensor::Tensor a = read_torch_pt(file("f32_2x3.pt"));
  EXPECT_EQ(a.dtype(), DType::kF32);
  EXPECT_EQ(a.shape(), (tensor::Shape{2, 3}));
  EXPECT_EQ(values(a), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  const tensor::Tensor t =
      read_torch_pt(file("bf16_3x2_t.pt"));  // the transpose of [[0 1 2] [3 4 5]]
  EXPECT_EQ(t.dtype(), DType::kBF16);
  EXPECT_EQ(t.shape(), (tensor::Shape{3, 2}));
  EXPECT_EQ(values(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(values(read_torch_pt(file("i64_5.pt"))), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(read_torch_pt(file("f32_offset.pt"))), (std::vector<double>{3, 4, 5, 6}));
}

TEST(TorchTensorFile, ReadsWhatNumpySaveWrote) {
  const tensor::Tensor a = read_npy(file("f32_2x3.npy"));
  EXPECT_EQ(a.shape(), (tensor::Shape{2, 3}));
  EXPECT_EQ(values(a), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(read_npy(file("f16_4.npy")).dtype(), DType::kF16);
  EXPECT_EQ(values(read_tensor_file(file("i32_3.npy"))), (std::vector<double>{0, 1, 2}));
}

void expect_refused(const std::string& name, const std::string& reason) {
  try {
    read_tensor_file(file(name));
    ADD_FAILURE() << name << ": no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(name), std::string::npos) << what;
    EXPECT_NE(what.find(reason), std::string::npos) << name << ": " << what;
  }
}

TEST(TorchTensorFile, MalformedFilesAreRefusedWithTheReason) {
  expect_refused("evil_global.pt", "GLOBAL 'os system' is not a tensor rebuild");
  expect_refused("compressed.pt", "is compressed");
  expect_refused("no_pickle.pt", "without <archive>/data.pkl");
  expect_refused("truncated_pickle.pt", "the pickle ends");
  expect_refused("short_storage.pt", "storage 0 holds 20 bytes, not 6 elements of 4");
  expect_refused("big_endian.pt", "only little-endian");
  expect_refused("not_a_zip.pt", "not a zip archive");
  expect_refused("bad_magic.npy", "no \\x93NUMPY magic");
  expect_refused("fortran.npy", "Fortran-order");
  expect_refused("big_endian.npy", "unsupported .npy dtype '>f4'");
  expect_refused("short_data.npy", "its header says 32");
  expect_refused("huge_shape.npy", "more than 2^40 elements");
  expect_refused("f32_2x3.safetensors", "not a tensor file this harness reads");
}

// Mutated files (bytes flipped, cut, duplicated; a fixed seed): each read either succeeds or is
// an InputError, never a crash, a hang or another exception.
TEST(TorchTensorFile, MutatedFilesNeverCrash) {
  std::mt19937_64 rng(7);
  const std::string dir = ::testing::TempDir();
  int refused = 0, read = 0;
  for (const char* name : {"f32_2x3.pt", "bf16_3x2_t.pt", "f32_offset.pt", "f32_2x3.npy"}) {
    std::ifstream in(file(name), std::ios::binary);
    const std::string original((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    const std::string ext = std::string(name).substr(std::string(name).rfind('.'));
    for (int i = 0; i < 600; ++i) {
      std::string bytes = original;
      const int kind = int(rng() % 3);
      if (kind == 0) {
        for (int k = 0; k < 1 + int(rng() % 4); ++k)
          bytes[rng() % bytes.size()] ^= char(1 << (rng() % 8));
      } else if (kind == 1) {
        bytes.resize(rng() % bytes.size());
      } else {
        const size_t at = rng() % bytes.size(), n = std::min<size_t>(rng() % 64, bytes.size() - at);
        bytes.insert(at, bytes.substr(at, n));
      }
      const std::string path = dir + "/mutated" + ext;
      std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
      try {
        (void)read_tensor_file(path);
        ++read;
      } catch (const InputError&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_EQ(read + refused, 2400);
}

}  // namespace
}  // namespace h0::io
