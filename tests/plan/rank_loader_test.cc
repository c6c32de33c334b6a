// Sharded loading: with tp = 2 and 4, each rank reads at most 1/tp + 5% of the checkpoint
// (measured: the bytes its pread calls returned), and the slices put together are the full
// tensors; a wrong slice or a missing tensor is caught.
#include "plan/rank_loader.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "io/safetensors_writer.h"
#include "model/weights/synth.h"
#include "test_util.h"

namespace h0::plan {
namespace {

// The checkpoint transformers wrote (tests/data/models/<name>), else one synthesized from
// configs/models/<name> (seed 0, 3 shards) into `dir`.
std::string checkpoint_dir(const std::string& name, const std::string& dir) {
  const std::string written = h0::test::source_path("tests/data/models/" + name);
  if (std::filesystem::exists(written + "/config.json")) return written;
  model::synthesize_checkpoint(h0::test::source_path("configs/models/" + name), dir, {0, 3});
  return dir;
}

struct Checkpoint {
  h0::test::TempDir dir;
  std::string path;
  model::Architecture arch;
  io::ShardedCheckpoint ckpt;
  model::Inventory inv;
  explicit Checkpoint(const std::string& name)
      : path(checkpoint_dir(name, dir.path())),
        arch(model::load_architecture(path)),
        ckpt(io::ShardedCheckpoint::open(path)),
        inv(checkpoint_inventory(arch, ckpt)) {}
};

class TpLoad : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(TpLoad, EachRankReadsItsShareAndTheSlicesMakeTheTensors) {
  const auto& [name, tp] = GetParam();
  Checkpoint c(name);
  ParallelPlan plan;
  plan.tp = tp;
  std::vector<RankLoad> ranks;
  for (int64_t r = 0; r < tp; ++r) {
    ranks.push_back(load_rank(c.arch, c.inv, c.ckpt, plan, r, {false}));
    const model::LoadReport& l = ranks.back().report;
    EXPECT_LE(double(l.bytes_read), (1.0 / tp + 0.05) * double(l.checkpoint_bytes)) << "rank " << r;
    EXPECT_GT(l.bytes_read, 0);
  }
  const ShardVerification v = verify_rank_shards(c.inv, c.ckpt, ranks);
  EXPECT_TRUE(v.problems.empty()) << v.problems.front();
  EXPECT_EQ(v.tensors, int64_t(c.inv.weights.size()));
  EXPECT_EQ(v.slices, int64_t(c.inv.weights.size()) * tp);
}

std::string tp_load_name(const ::testing::TestParamInfo<std::tuple<std::string, int>>& p) {
  std::string n = std::get<0>(p.param) + "_tp" + std::to_string(std::get<1>(p.param));
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Tiny, TpLoad,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-deepseek-v3"),
                                            ::testing::Values(2, 4)),
                         tp_load_name);
// Its conv1d is cut in three parts (q | k | v, each by heads); 2 key heads: tp 2 at most.
INSTANTIATE_TEST_SUITE_P(Hybrid, TpLoad,
                         ::testing::Combine(::testing::Values("tiny-qwen3-next"),
                                            ::testing::Values(2)),
                         tp_load_name);

TEST(RankLoader, AWrongSliceIsCaught) {
  Checkpoint c("tiny-llama");
  ParallelPlan plan;
  plan.tp = 2;
  std::vector<RankLoad> ranks = {load_rank(c.arch, c.inv, c.ckpt, plan, 0, {false}),
                                 load_rank(c.arch, c.inv, c.ckpt, plan, 1, {false})};
  for (auto& w : ranks[1].report.weights) {
    if (w.name == "model.layers.1.mlp.down_proj.weight")
      static_cast<uint8_t*>(w.tensor.mutable_data())[3] ^= 0x40;
  }
  const ShardVerification v = verify_rank_shards(c.inv, c.ckpt, ranks);
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_EQ(v.problems[0],
            "model.layers.1.mlp.down_proj.weight: rank 1 slice differs from the full tensor");
  ranks.pop_back();  // rank 1 never loaded: half of every split tensor is held by no one
  EXPECT_FALSE(verify_rank_shards(c.inv, c.ckpt, ranks).problems.empty());
}

TEST(RankLoader, ColumnAndRowSlicesAreTheRightRegions) {
  Checkpoint c("tiny-llama");
  ParallelPlan plan;
  plan.tp = 2;
  const RankLoad r1 = load_rank(c.arch, c.inv, c.ckpt, plan, 1, {true});
  for (const auto& w : r1.report.weights) {
    if (w.name == "model.layers.0.mlp.gate_proj.weight") {  // column: rows [128, 256) of 256x128
      EXPECT_EQ(w.tensor.shape(), (tensor::Shape{128, 128}));
      EXPECT_EQ(w.slice->axis, 0);
      EXPECT_EQ(w.slice->begin, 128);
      EXPECT_EQ(w.tensor.at(0), c.ckpt.get(w.name).at(128 * 128));
      EXPECT_EQ(w.sha256.size(), 64u);
    }
    if (w.name == "model.layers.0.mlp.down_proj.weight") {  // row: columns [128, 256) of 128x256
      EXPECT_EQ(w.tensor.shape(), (tensor::Shape{128, 128}));
      EXPECT_EQ(w.slice->axis, 1);
      EXPECT_EQ(w.tensor.at(1 * 128), c.ckpt.get(w.name).at(1 * 256 + 128));
    }
  }
}

TEST(RankLoader, ACheckpointThatDoesNotMatchIsAnInputError) {
  Checkpoint c("tiny-llama");
  h0::test::TempDir broken;
  std::vector<io::NamedTensor> tensors;
  for (const auto& w : c.inv.weights) {
    if (w.name != "model.layers.1.self_attn.k_proj.weight")
      tensors.push_back({w.name, c.ckpt.get(w.name)});
  }
  io::write_safetensors(broken.file("model.safetensors"), tensors);
  ParallelPlan plan;
  EXPECT_THROW(
      load_rank(c.arch, c.inv, io::ShardedCheckpoint::open(broken.path()), plan, 0, {false}),
      InputError);
  plan.tp = 3;  // 4 heads over 3 ranks
  EXPECT_THROW(load_rank(c.arch, c.inv, c.ckpt, plan, 0, {false}), InputError);
}

// A routing bias saved in bf16 (transformers' `model.to(torch.bfloat16)`; the inventory keeps it
// in f32, as HF does): read as stored and noted, not refused. A wrong shape still is.
TEST(RankLoader, AFloatTensorInAnotherFloatDtypeIsNotedNotRefused) {
  Checkpoint c("tiny-deepseek-v3");
  const std::string bias = "model.layers.1.mlp.gate.e_score_correction_bias";
  ASSERT_NE(c.inv.find(bias), nullptr);
  ASSERT_EQ(c.inv.find(bias)->dtype, tensor::DType::kF32);
  h0::test::TempDir bf16;
  std::vector<io::NamedTensor> tensors;
  for (const auto& w : c.inv.weights) {
    const tensor::Tensor t = c.ckpt.get(w.name);
    tensors.push_back({w.name, w.name == bias ? t.to(tensor::DType::kBF16) : t});
  }
  io::write_safetensors(bf16.file("model.safetensors"), tensors);
  const auto ckpt = io::ShardedCheckpoint::open(bf16.path());
  const RankLoad r = load_rank(c.arch, c.inv, ckpt, ParallelPlan{}, 0, {false});
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], bias + ": bf16 (the inventory's f32)");
  EXPECT_TRUE(verify_rank_shards(c.inv, ckpt, {r}).problems.empty());
  // The same bias with one expert too few is still refused.
  tensors.clear();
  for (const auto& w : c.inv.weights) {
    const tensor::Tensor t = c.ckpt.get(w.name);
    tensors.push_back(
        {w.name,
         w.name == bias ? tensor::Tensor::copy_of(t.dtype(), {t.shape()[0] - 1}, t.data()) : t});
  }
  h0::test::TempDir shorter;
  io::write_safetensors(shorter.file("model.safetensors"), tensors);
  EXPECT_THROW(load_rank(c.arch, c.inv, io::ShardedCheckpoint::open(shorter.path()), ParallelPlan{},
                         0, {false}),
               InputError);
}

}  // namespace
}  // namespace h0::plan
