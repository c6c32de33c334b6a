// The checkpoint-derived inventory of an unmodelled family: the name-pattern TP rules, layer and
// expert placement, exact counts by dtype (MXFP4 blocks, scales), and the memory plan from the
// stored bytes.
#include "model/weights/checkpoint_inventory.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/safetensors_writer.h"
#include "io/sharded_checkpoint.h"
#include "model/config/architecture.h"
#include "plan/memory_plan.h"
#include "test_util.h"

namespace h0::model {
namespace {

using tensor::DType;
using tensor::Tensor;

TEST(TpRule, TheNamePatternTable) {
  EXPECT_EQ(tp_rule("model.embed_tokens.weight"), TpSplit::kVocab);
  EXPECT_EQ(tp_rule("lm_head.weight"), TpSplit::kVocab);
  EXPECT_EQ(tp_rule("model.layers.0.self_attn.q_proj.weight"), TpSplit::kColumn);
  EXPECT_EQ(tp_rule("model.layers.0.self_attn.k_proj.bias"), TpSplit::kColumn);
  EXPECT_EQ(tp_rule("model.layers.0.self_attn.o_proj.weight"), TpSplit::kRow);
  EXPECT_EQ(tp_rule("model.layers.0.self_attn.o_proj.bias"), TpSplit::kReplicated);
  EXPECT_EQ(tp_rule("model.layers.0.mlp.experts.3.down_proj.weight"), TpSplit::kRow);
  EXPECT_EQ(tp_rule("model.layers.0.mlp.experts.gate_up_proj_blocks"), TpSplit::kColumn);
  EXPECT_EQ(tp_rule("model.layers.0.mlp.gate.weight"), TpSplit::kReplicated);  // a router
  EXPECT_EQ(tp_rule("model.layers.0.mlp.shared_expert_gate.weight"), TpSplit::kReplicated);
  EXPECT_EQ(tp_rule("model.layers.0.self_attn.q_norm.weight"), TpSplit::kReplicated);
  EXPECT_EQ(tp_rule("model.layers.0.self_attn.sinks"), TpSplit::kReplicated);
  EXPECT_EQ(tp_rule("model.layers.0.self_attn.q_proj.weight_scale_inv"), TpSplit::kColumn);
  EXPECT_EQ(tp_rule("visual.blocks.0.attn.qkv.weight"), TpSplit::kReplicated);
}

// A GPT-OSS-shaped checkpoint: 2 layers, 4 heads of 8, 2 kv heads, 4 fused experts in MXFP4,
// under a model_type no family of the executor has (gpt_oss itself is modelled): a new family
// released in that layout, described from its config and counted from its headers.
class GptOssLike : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<io::NamedTensor> t;
    auto add = [&](const std::string& name, DType d, tensor::Shape s) {
      t.push_back({name, Tensor::zeros(d, s)});
    };
    add("model.embed_tokens.weight", DType::kBF16, {64, 32});
    add("lm_head.weight", DType::kBF16, {64, 32});
    add("model.norm.weight", DType::kBF16, {32});
    for (int l = 0; l < 2; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      add(p + "input_layernorm.weight", DType::kBF16, {32});
      add(p + "self_attn.q_proj.weight", DType::kBF16, {32, 32});
      add(p + "self_attn.k_proj.weight", DType::kBF16, {16, 32});
      add(p + "self_attn.v_proj.weight", DType::kBF16, {16, 32});
      add(p + "self_attn.o_proj.weight", DType::kBF16, {32, 32});
      add(p + "self_attn.sinks", DType::kBF16, {4});
      add(p + "mlp.router.weight", DType::kBF16, {4, 32});
      add(p + "mlp.experts.gate_up_proj_blocks", DType::kU8,
          {4, 128, 1, 16});  // 2 x 64 rows, 32 values
      add(p + "mlp.experts.gate_up_proj_scales", DType::kU8, {4, 128, 1});
      add(p + "mlp.experts.down_proj_blocks", DType::kU8, {4, 32, 2, 16});
      add(p + "mlp.experts.down_proj_scales", DType::kU8, {4, 32, 2});
    }
    io::write_safetensors(dir_.file("model.safetensors"), std::move(t), {});
    nlohmann::json c = {{"architectures", {"NewMoeForCausalLM"}},
                        {"model_type", "new_moe"},
                        {"hidden_size", 32},
                        {"num_hidden_layers", 2},
                        {"num_attention_heads", 4},
                        {"num_key_value_heads", 2},
                        {"head_dim", 8},
                        {"vocab_size", 64},
                        {"num_local_experts", 4},
                        {"num_experts_per_tok", 2},
                        {"sliding_window", 4},
                        {"layer_types", {"sliding_attention", "full_attention"}},
                        {"intermediate_size", 64}};
    arch_ = describe_architecture(c, "config.json");
    ASSERT_FALSE(arch_.modelled);
  }
  test::TempDir dir_;
  Architecture arch_;
};

TEST_F(GptOssLike, CountsByDtypeWithPackedBlocksAndScales) {
  const auto ckpt = io::ShardedCheckpoint::open(dir_.path());
  const CheckpointTally t = tally_tensors(arch_, saved_tensors(ckpt));
  EXPECT_EQ(t.tensors, 3 + 2 * 11);
  const int64_t bf16 = 2 * 64 * 32 + 32 + 2 * (32 + 32 * 32 + 2 * 16 * 32 + 32 * 32 + 4 + 4 * 32);
  const int64_t blocks = 2 * (4 * 128 * 16 + 4 * 32 * 2 * 16), scales = 2 * (4 * 128 + 4 * 32 * 2);
  EXPECT_EQ(t.by_dtype.at("bf16").elements, bf16);
  EXPECT_EQ(t.by_dtype.at("bf16").bytes, 2 * bf16);
  EXPECT_EQ(t.by_dtype.at("u8").bytes, blocks + scales);
  EXPECT_EQ(t.parameters,
            bf16 + 2 * blocks);  // two 4-bit values per byte; scales are not parameters
  EXPECT_EQ(t.companions.elements, scales);
  EXPECT_EQ(t.bytes, 2 * bf16 + blocks + scales);
}

TEST_F(GptOssLike, InventoryPlacesLayersHeadsAndFusedExperts) {
  const auto ckpt = io::ShardedCheckpoint::open(dir_.path());
  const Inventory inv = inventory_from_checkpoint(arch_, ckpt);
  const WeightInfo* k = inv.find("model.layers.1.self_attn.k_proj.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->layer, 1);
  EXPECT_EQ(k->tp, TpSplit::kColumn);
  EXPECT_EQ(k->tp_unit, 8);
  EXPECT_TRUE(k->kv_heads);
  const WeightInfo* e = inv.find("model.layers.0.mlp.experts.down_proj_blocks");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->tp, TpSplit::kColumn);  // fused: split on the expert axis
  EXPECT_EQ(e->expert, -1);
  EXPECT_EQ(inv.find("model.layers.0.mlp.experts.down_proj_scales")->role, WeightRole::kQuantScale);
  EXPECT_EQ(inv.find("model.norm.weight")->tp, TpSplit::kReplicated);
}

// The plan counts the checkpoint's bytes as stored: at tp 1 exactly, at tp 2 each rank about half.
TEST_F(GptOssLike, MemoryPlanFromTheStoredBytes) {
  const auto ckpt = io::ShardedCheckpoint::open(dir_.path());
  const Inventory inv = inventory_from_checkpoint(arch_, ckpt);
  const int64_t stored = tally_tensors(arch_, saved_tensors(ckpt)).bytes;
  plan::MemoryOptions o;
  o.device_memory = 1 << 30;
  o.reserve = 0;
  o.checkpoint = &inv;
  const plan::MemoryPlan one = plan::plan_memory(arch_, plan::ParallelPlan{}, o);
  EXPECT_EQ(one.total_weights, stored);
  EXPECT_TRUE(one.fits) << one.reason;
  plan::ParallelPlan tp2;
  tp2.tp = 2;
  const plan::MemoryPlan two = plan::plan_memory(arch_, tp2, o);
  ASSERT_EQ(two.ranks.size(), 2u);
  const int64_t replicated = 2 * (32 + 2 * (32 + 4 + 4 * 32));  // norms, sinks, routers
  EXPECT_EQ(two.ranks[0].weights, (stored - replicated) / 2 + replicated);
  EXPECT_EQ(two.ranks[0].kv_heads, 1);
  bool sliding_note = false;
  for (const auto& n : two.notes)
    sliding_note |= n.find("sliding window of 4 tokens") != std::string::npos;
  EXPECT_TRUE(sliding_note);
}

TEST_F(GptOssLike, AnExpertPastTheConfigsCountIsAnInputError) {
  std::vector<io::NamedTensor> t;
  t.push_back(
      {"model.layers.0.mlp.experts.7.up_proj.weight", Tensor::zeros(DType::kBF16, {8, 32})});
  io::write_safetensors(dir_.file("bad.safetensors"), std::move(t), {});
  const auto ckpt = io::ShardedCheckpoint::open(dir_.file("bad.safetensors"));
  try {
    inventory_from_checkpoint(arch_, ckpt);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("routed expert 7, but the config has 4 experts"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace h0::model
