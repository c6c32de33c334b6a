// The HF-style sharded fixture written by gen_foundation.py, and the index/shard disagreements.
#include "io/sharded_checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/error.h"
#include "io/safetensors_writer.h"
#include "tensor/philox.h"
#include "test_util.h"

namespace h0::io {
namespace {

using tensor::DType;
using tensor::Tensor;
namespace fs = std::filesystem;

const std::string kSharded = "foundation/st/sharded";

// The generator's rule: philox uniform (seed 11, stream = tensor's position) minus 0.5.
Tensor expected_tensor(int stream, DType dtype, tensor::Shape shape) {
  Tensor t = Tensor::zeros(DType::kF32, shape);
  tensor::Philox(11, static_cast<uint64_t>(stream))
      .fill_uniform(t.mutable_data_as<float>(), static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data_as<float>()[i] -= 0.5f;
  return t.to(dtype);
}

TEST(ShardedCheckpoint, OpensTheDirectoryTheIndexOrAShard) {
  for (const std::string& path : {test::golden_path(kSharded),
                                  test::golden_path(kSharded + "/model.safetensors.index.json")}) {
    const auto ckpt = ShardedCheckpoint::open(path);
    EXPECT_EQ(ckpt.num_shards(), 2u);
    EXPECT_EQ(ckpt.names(), (std::vector<std::string>{"lm_head.weight", "model.embed_tokens.weight",
                                                      "model.layers.0.mlp.up_proj.weight",
                                                      "model.layers.1.mlp.up_proj.weight"}));
    EXPECT_NE(ckpt.index_metadata_json().find("\"total_size\":1408"), std::string::npos);
  }
  const auto single =
      ShardedCheckpoint::open(test::golden_path(kSharded + "/model-00002-of-00002.safetensors"));
  EXPECT_EQ(single.names().size(), 2u);
}

// Releasing a tensor's pages (after copying it out) drops nothing a later read needs: the map is
// read-only, so the bytes are read from the file again. A range outside every map is refused.
TEST(ShardedCheckpoint, ReleasedPagesReadBackTheSameBytes) {
  const auto ckpt = ShardedCheckpoint::open(test::golden_path(kSharded));
  const std::string name = "model.layers.0.mlp.up_proj.weight";
  const Tensor before = ckpt.get(name).clone();
  ckpt.release(name);
  const Tensor view = ckpt.get(name);
  ckpt.release_range(view.data(), view.nbytes());
  ASSERT_EQ(view.nbytes(), before.nbytes());
  EXPECT_EQ(std::memcmp(view.data(), before.data(), before.nbytes()), 0);
  const Tensor mine = before.clone();  // heap memory: no shard's map holds it, left alone
  ckpt.release_range(mine.data(), mine.nbytes());
  EXPECT_EQ(std::memcmp(mine.data(), before.data(), before.nbytes()), 0);
  const SafetensorsFile& shard = ckpt.shard_of(name);
  EXPECT_TRUE(shard.release_range(view.data(), view.nbytes()));
  EXPECT_FALSE(shard.release_range(mine.data(), mine.nbytes()));
}

TEST(ShardedCheckpoint, ValuesMatchTheGenerator) {
  const auto ckpt = ShardedCheckpoint::open(test::golden_path(kSharded));
  struct Row {
    const char* name;
    int stream;
    DType dtype;
    tensor::Shape shape;
  };
  const Row rows[] = {{"model.embed_tokens.weight", 0, DType::kF32, {16, 8}},
                      {"model.layers.0.mlp.up_proj.weight", 1, DType::kBF16, {12, 8}},
                      {"model.layers.1.mlp.up_proj.weight", 2, DType::kBF16, {12, 8}},
                      {"lm_head.weight", 3, DType::kF32, {16, 8}}};
  for (const auto& r : rows) {
    const Tensor got = ckpt.get(r.name);
    const Tensor want = expected_tensor(r.stream, r.dtype, r.shape);
    ASSERT_EQ(got.dtype(), r.dtype) << r.name;
    ASSERT_EQ(got.shape(), r.shape) << r.name;
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_EQ(got.at(i), want.at(i)) << r.name << "[" << i << "]";
  }
  // Slices reach the right shard too.
  const Tensor cols = ckpt.slice("lm_head.weight", 1, 2, 5);
  EXPECT_EQ(cols.shape(), (tensor::Shape{16, 3}));
  EXPECT_EQ(cols.at(0), ckpt.get("lm_head.weight").at(2));
}

// Writes a two-shard checkpoint whose index is `weight_map_json`.
void write_checkpoint(const std::string& dir, const std::string& weight_map_json) {
  const Tensor t = Tensor::zeros(DType::kF32, {2});
  write_safetensors(dir + "/a.safetensors", {{"x", t}, {"y", t}});
  write_safetensors(dir + "/b.safetensors", {{"z", t}});
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"metadata":{},"weight_map":)" << weight_map_json << "}";
}

std::string error_of(const std::string& path) {
  try {
    ShardedCheckpoint::open(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ShardedCheckpoint, IndexAndShardsMustAgree) {
  test::TempDir dir;
  const std::string index = dir.file("model.safetensors.index.json");
  write_checkpoint(dir.path(), R"({"x":"a.safetensors","y":"a.safetensors","z":"b.safetensors"})");
  EXPECT_EQ(error_of(dir.path()), "");

  write_checkpoint(dir.path(), R"({"x":"a.safetensors","y":"a.safetensors","z":"c.safetensors"})");
  EXPECT_EQ(error_of(dir.path()), index + ": shard 'c.safetensors' (of tensor 'z') does not exist");

  write_checkpoint(dir.path(), R"({"x":"a.safetensors","y":"a.safetensors","z":"a.safetensors"})");
  EXPECT_EQ(error_of(dir.path()),
            index + ": the index puts 'z' in 'a.safetensors', which does not hold them");

  write_checkpoint(dir.path(), R"({"x":"a.safetensors","z":"b.safetensors"})");
  EXPECT_EQ(error_of(dir.path()),
            dir.file("a.safetensors") + ": holds 'y' that the index does not list for this shard");

  std::ofstream(index) << "{\"weight_map\": 3}";
  EXPECT_EQ(error_of(dir.path()), index + ": expected an object with a \"weight_map\" object");
  std::ofstream(index) << "{";
  EXPECT_EQ(error_of(dir.path()).rfind(index + ": not JSON:", 0), 0u);

  fs::remove(index);
  fs::remove(dir.file("a.safetensors"));
  fs::remove(dir.file("b.safetensors"));
  EXPECT_EQ(
      error_of(dir.path()),
      dir.path() + ": directory has neither model.safetensors.index.json nor model.safetensors");
}

}  // namespace
}  // namespace h0::io
