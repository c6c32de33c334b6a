// The 2025-26 attention classes as architectures: Qwen3-Next / Qwen3.5 (Gated DeltaNet layers
// between output-gated full attention) and DeepSeek-V3.2 (MLA plus the lightning indexer), read
// from the default configs transformers 5 saves (golden/tools/gen_tf5_configs.py) and from the
// spelling transformers 4 wrote; their tensors named as transformers' modules name them.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "base/error.h"
#include "model/config/architecture.h"
#include "model/weights/inventory.h"

namespace h0::model {
namespace {

using LayerKind = TextModel::LayerKind;

std::string tf5(const std::string& type) {
  return std::string(H0_SOURCE_DIR) + "/tests/data/configs/transformers5/" + type + ".json";
}

nlohmann::json tf5_json(const std::string& type) { return read_config_file(tf5(type)); }

std::map<std::string, std::vector<int64_t>> layer_shapes(const Inventory& inv, int64_t layer) {
  std::map<std::string, std::vector<int64_t>> out;
  const std::string prefix = "model.layers." + std::to_string(layer) + ".";
  for (const WeightInfo& w : inv.weights) {
    if (w.layer == layer && w.expert < 0 && !w.mtp) out[w.name.substr(prefix.size())] = w.shape;
  }
  return out;
}

TEST(Qwen3Next, DefaultConfigIsHybridWithGatedAttention) {
  const Architecture a = load_architecture(tf5("qwen3_next"));
  const TextModel& t = a.text;
  EXPECT_EQ(a.family, "qwen3_next");
  ASSERT_EQ(t.num_layers, 48);
  int full = 0;
  for (int64_t l = 0; l < t.num_layers; ++l) {
    EXPECT_EQ(t.layer_kind(l), (l + 1) % 4 == 0 ? LayerKind::kFull : LayerKind::kLinear) << l;
    full += t.layer_kind(l) == LayerKind::kFull;
  }
  EXPECT_EQ(full, 12);
  EXPECT_TRUE(t.attn.output_gate);
  EXPECT_TRUE(t.attn.qk_norm);
  EXPECT_EQ(t.attn.head_dim, 256);
  EXPECT_EQ(t.attn.rotary_dim, 64);  // partial_rotary_factor 0.25
  EXPECT_EQ(t.norm_offset, 1);
  EXPECT_EQ(t.linear.num_k_heads, 16);
  EXPECT_EQ(t.linear.num_v_heads, 32);
  EXPECT_EQ(t.linear.conv_dim(), 8192);
  EXPECT_TRUE(t.linear.fused_projections);
  EXPECT_TRUE(t.moe.shared_expert_gate);
  EXPECT_TRUE(t.moe.norm_topk_prob);
  EXPECT_EQ(t.moe.num_experts, 512);
}

// transformers 4's configs (the released Qwen3-Next checkpoints') write full_attention_interval
// and a top-level partial_rotary_factor instead of layer_types and rope_parameters.
TEST(Qwen3Next, Transformers4SpellingReadsTheSame) {
  nlohmann::json c = tf5_json("qwen3_next");
  const Architecture five = parse_architecture(c, "tf5");
  c.erase("layer_types");
  c.erase("rope_parameters");
  c["rope_theta"] = 10000;
  c["partial_rotary_factor"] = 0.25;
  c["full_attention_interval"] = 4;
  const Architecture four = parse_architecture(c, "tf4");
  EXPECT_EQ(four.text.layer_kinds, five.text.layer_kinds);
  EXPECT_EQ(four.text.attn.rotary_dim, 64);
  EXPECT_EQ(build_inventory(four).counts.total, build_inventory(five).counts.total);
  c["full_attention_interval"] = 2;
  const Architecture every_other = parse_architecture(c, "tf4");
  EXPECT_EQ(every_other.text.layer_kind(0), LayerKind::kLinear);
  EXPECT_EQ(every_other.text.layer_kind(1), LayerKind::kFull);
}

// The names and shapes transformers' Qwen3NextForCausalLM has (its named_parameters() on the
// meta device; the routed experts are per expert in checkpoints, as Qwen2-MoE's).
TEST(Qwen3Next, LayersAreNamedAsTransformersNamesThem) {
  const Inventory inv = build_inventory(load_architecture(tf5("qwen3_next")));
  const std::map<std::string, std::vector<int64_t>> linear = {
      {"input_layernorm.weight", {2048}},
      {"linear_attn.in_proj_qkvz.weight", {12288, 2048}},
      {"linear_attn.in_proj_ba.weight", {64, 2048}},
      {"linear_attn.conv1d.weight", {8192, 1, 4}},
      {"linear_attn.dt_bias", {32}},
      {"linear_attn.A_log", {32}},
      {"linear_attn.norm.weight", {128}},
      {"linear_attn.out_proj.weight", {2048, 4096}},
      {"post_attention_layernorm.weight", {2048}},
      {"mlp.gate.weight", {512, 2048}},
      {"mlp.shared_expert.gate_proj.weight", {512, 2048}},
      {"mlp.shared_expert.up_proj.weight", {512, 2048}},
      {"mlp.shared_expert.down_proj.weight", {2048, 512}},
      {"mlp.shared_expert_gate.weight", {1, 2048}},
  };
  EXPECT_EQ(layer_shapes(inv, 0), linear);
  const auto full = layer_shapes(inv, 3);
  EXPECT_EQ(full.at("self_attn.q_proj.weight"),
            (std::vector<int64_t>{8192, 2048}));  // 16 heads x (query + gate) x 256
  EXPECT_EQ(full.at("self_attn.k_proj.weight"), (std::vector<int64_t>{512, 2048}));
  EXPECT_EQ(full.at("self_attn.o_proj.weight"), (std::vector<int64_t>{2048, 4096}));
  EXPECT_EQ(full.at("self_attn.q_norm.weight"), (std::vector<int64_t>{256}));
  EXPECT_EQ(full.count("linear_attn.conv1d.weight"), 0u);
  const WeightInfo* qkvz = inv.find(0, TensorRole::kLinQKVZ);
  ASSERT_NE(qkvz, nullptr);
  EXPECT_EQ(qkvz->tp, TpSplit::kColumn);
  EXPECT_EQ(qkvz->tp_unit, 768);  // one key head's q, k and its two value heads' v, z
  EXPECT_EQ(inv.find(3, TensorRole::kAttnQ)->tp_unit, 512);
}

TEST(Qwen3_5, SplitProjectionsAndDenseOrMoeMlp) {
  const Inventory dense = build_inventory(load_architecture(tf5("qwen3_5_text")));
  const auto l0 = layer_shapes(dense, 0);
  EXPECT_EQ(l0.at("linear_attn.in_proj_qkv.weight"), (std::vector<int64_t>{8192, 4096}));
  EXPECT_EQ(l0.at("linear_attn.in_proj_z.weight"), (std::vector<int64_t>{4096, 4096}));
  EXPECT_EQ(l0.at("linear_attn.in_proj_b.weight"), (std::vector<int64_t>{32, 4096}));
  EXPECT_EQ(l0.at("linear_attn.in_proj_a.weight"), (std::vector<int64_t>{32, 4096}));
  EXPECT_EQ(l0.at("mlp.gate_proj.weight"), (std::vector<int64_t>{12288, 4096}));
  EXPECT_EQ(l0.count("linear_attn.in_proj_qkvz.weight"), 0u);
  const Architecture moe = load_architecture(tf5("qwen3_5_moe_text"));
  EXPECT_EQ(moe.text.moe.num_experts, 256);
  EXPECT_TRUE(moe.text.moe.norm_topk_prob);
  EXPECT_TRUE(moe.text.is_moe_layer(0));
  EXPECT_FALSE(moe.text.linear.fused_projections);
}

TEST(Qwen3Next, BadLinearHeadsAreRefusedAtTheField) {
  nlohmann::json c = tf5_json("qwen3_next");
  c["linear_num_value_heads"] = 24;
  try {
    parse_architecture(c, "config.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "config.json: linear_num_value_heads: must be a multiple of linear_num_key_heads (16)");
  }
  c = tf5_json("qwen3_next");
  c["layer_types"].erase(0);
  EXPECT_THROW(parse_architecture(c, "config.json"), InputError);
}

TEST(DeepseekV32, IndexerInEveryLayerAndDenseLayersFromMlpLayerTypes) {
  const Architecture a = load_architecture(tf5("deepseek_v32"));
  const TextModel& t = a.text;
  EXPECT_TRUE(t.attn.mla);
  EXPECT_EQ(t.indexer.n_heads, 64);
  EXPECT_EQ(t.indexer.head_dim, 128);
  EXPECT_EQ(t.indexer.topk, 2048);
  EXPECT_FALSE(t.is_moe_layer(2));
  EXPECT_TRUE(t.is_moe_layer(3));
  const Inventory inv = build_inventory(a);
  const auto l0 = layer_shapes(inv, 0);
  EXPECT_EQ(l0.at("self_attn.indexer.wq_b.weight"), (std::vector<int64_t>{8192, 1536}));
  EXPECT_EQ(l0.at("self_attn.indexer.wk.weight"), (std::vector<int64_t>{128, 7168}));
  EXPECT_EQ(l0.at("self_attn.indexer.k_norm.weight"), (std::vector<int64_t>{128}));
  EXPECT_EQ(l0.at("self_attn.indexer.k_norm.bias"), (std::vector<int64_t>{128}));
  EXPECT_EQ(l0.at("self_attn.indexer.weights_proj.weight"), (std::vector<int64_t>{64, 7168}));
  EXPECT_EQ(inv.find(0, TensorRole::kIdxQB)->tp, TpSplit::kReplicated);

  nlohmann::json c = tf5_json("deepseek_v32");
  c["mlp_layer_types"][10] = "dense";
  EXPECT_FALSE(parse_architecture(c, "config.json").text.is_moe_layer(10));
  c["mlp_layer_types"][10] = "moe";
  try {
    parse_architecture(c, "config.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config.json: mlp_layer_types[10]: must be \"dense\" or \"sparse\", got \"moe\"");
  }
}

}  // namespace
}  // namespace h0::model
