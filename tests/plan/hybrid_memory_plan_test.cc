// The memory plan of hybrid models: KV bytes per token counted only over the full-attention
// layers, the linear-attention state set aside per concurrent sequence, DeepSeek-V3.2's indexer
// keys beside the MLA latent; each part in the table. Figures computed by hand from the default
// configs transformers 5 saves (tests/data/configs/transformers5/).
#include <gtest/gtest.h>

#include "model/config/architecture.h"
#include "plan/memory_plan.h"
#include "plan/plan_report.h"

namespace h0::plan {
namespace {

model::Architecture tf5(const std::string& type) {
  return model::load_architecture(std::string(H0_SOURCE_DIR) +
                                  "/tests/data/configs/transformers5/" + type + ".json");
}

MemoryOptions on(double gib, int64_t concurrency = 1) {
  MemoryOptions o;
  o.device_memory = gib * kGiB;
  o.concurrency = concurrency;
  return o;
}

void expect_parts_add_up(const MemoryPlan& p) {
  for (const RankMemory& r : p.ranks) {
    EXPECT_EQ(r.free_for_kv, p.usable - r.weights - r.activations - r.comm - r.reserve - r.state)
        << r.coord.rank;
  }
}

TEST(HybridPlan, Qwen3NextHoldsKvOnlyInItsFullLayersAndAStatePerSequence) {
  const model::Architecture a = tf5("qwen3_next");
  // 12 of 48 layers are full attention: 2 (K, V) x 2 kv heads x 256 x 2 bytes each.
  EXPECT_EQ(model_kv_bytes_per_token(a, tensor::DType::kBF16), 12 * 2 * 2 * 256 * 2);
  const MemoryPlan p = plan_memory(a, ParallelPlan{}, on(1000, 4));
  ASSERT_EQ(p.ranks.size(), 1u);
  const RankMemory& r = p.ranks[0];
  EXPECT_EQ(r.kv_bytes_per_token, 24576);
  EXPECT_EQ(r.index_bytes_per_token, 0);
  // 36 linear layers: the conv window 8192 channels x 3 taps in bf16, the recurrent state
  // 32 heads x 128 x 128 in f32.
  const int64_t per_layer = 8192 * 3 * 2 + 32 * 128 * 128 * 4;
  EXPECT_EQ(r.state_bytes_per_sequence, 36 * per_layer);
  EXPECT_EQ(r.state, 4 * 36 * per_layer);  // concurrency 4
  expect_parts_add_up(p);
  const std::string table = plan_table(p);
  EXPECT_NE(table.find("state"), std::string::npos) << table;
  EXPECT_EQ(table.find("idx B/tok"), std::string::npos) << table;
  bool noted = false;
  for (const std::string& n : p.notes)
    noted |= n.find("36 of 48 layers are linear attention") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(HybridPlan, TensorParallelSplitsTheStateByHeadsAndRefusesAnUnevenSplit) {
  const model::Architecture a = tf5("qwen3_next");
  ParallelPlan tp2;
  tp2.tp = 2;
  const MemoryPlan p = plan_memory(a, tp2, on(1000, 1));
  for (const RankMemory& r : p.ranks) {
    EXPECT_EQ(r.state_bytes_per_sequence, 36 * (4096 * 3 * 2 + 16 * 128 * 128 * 4));
    EXPECT_EQ(r.kv_bytes_per_token, 12 * 2 * 1 * 256 * 2);
  }
  ParallelPlan dp2;
  dp2.dp = 2;  // concurrency 3 over two replicas: each serves 2 at once
  for (const RankMemory& r : plan_memory(a, dp2, on(1000, 3)).ranks)
    EXPECT_EQ(r.state, 2 * r.state_bytes_per_sequence);
  model::Architecture six =
      a;  // 6 key heads: tp 4 fits the attention heads but cuts a key-head group
  six.text.linear.num_k_heads = 6;
  six.text.linear.num_v_heads = 12;
  ParallelPlan tp4;
  tp4.tp = 4;
  EXPECT_FALSE(check_plan(a, tp4).has_value());
  const auto issue = check_plan(six, tp4);
  ASSERT_TRUE(issue.has_value());
  EXPECT_EQ(issue->message,
            "linear_num_key_heads 6 is not divisible by tp 4 (the linear-attention layers split by "
            "key-head group)");
}

TEST(HybridPlan, TheStateCanBeWhatDoesNotFit) {
  const model::Architecture a = tf5("qwen3_5_text");  // ~9B: 18 GiB of bf16 weights
  const MemoryPlan few = plan_memory(a, ParallelPlan{}, on(40, 1));
  ASSERT_TRUE(few.fits) << few.reason;
  const MemoryPlan many = plan_memory(a, ParallelPlan{}, on(40, 512));  // 512 x 24 layers x ~2 MiB
  EXPECT_FALSE(many.fits);
  EXPECT_NE(many.reason.find("linear-attention state"), std::string::npos) << many.reason;
}

TEST(HybridPlan, DeepseekV32CountsItsIndexerKeys) {
  const model::Architecture a = tf5("deepseek_v32");
  // Per layer: the latent (512 + 64) and the indexer key (128), bf16.
  EXPECT_EQ(model_kv_bytes_per_token(a, tensor::DType::kBF16), 61 * (512 + 64 + 128) * 2);
  ParallelPlan tp8;
  tp8.tp = 8;
  const MemoryPlan p = plan_memory(a, tp8, on(141, 1));
  for (const RankMemory& r : p.ranks) {
    EXPECT_EQ(r.kv_bytes_per_token, 61 * 704 * 2);  // whole on every rank, as the latent
    EXPECT_EQ(r.index_bytes_per_token, 61 * 128 * 2);
    EXPECT_EQ(r.state, 0);
  }
  expect_parts_add_up(p);
  const std::string table = plan_table(p);
  EXPECT_NE(table.find("idx B/tok"), std::string::npos) << table;
  EXPECT_NE(table.find("15,616"), std::string::npos) << table;
  EXPECT_EQ(table.find("state"), std::string::npos) << table;
}

// harness plan's breakdown by layer type: each kind of layer's bytes, the per-token rows adding up
// to the rank's KV bytes per token, the linear-attention state per sequence apart.
TEST(HybridPlan, TheKvBreakdownByLayerTypeAddsUpToTheRanksBytesPerToken) {
  auto per_token_sum = [](const std::vector<KvLayerType>& types) {
    int64_t sum = 0;
    for (const KvLayerType& t : types) sum += t.per_sequence ? 0 : t.bytes;
    return sum;
  };
  for (const char* type : {"qwen3_next", "deepseek_v32", "gemma3_text", "gpt_oss", "llama"}) {
    const model::Architecture a = tf5(type);
    const MemoryPlan p = plan_memory(a, ParallelPlan{}, on(1000, 4));
    const std::vector<KvLayerType> types = kv_by_layer_type(a, p);
    ASSERT_FALSE(types.empty()) << type;
    EXPECT_EQ(per_token_sum(types), p.ranks[0].kv_bytes_per_token) << type;
    int64_t layers = 0;
    for (const KvLayerType& t : types)
      if (t.kind != "indexer keys") layers += t.layers;
    EXPECT_EQ(layers, a.text.num_layers) << type;
  }
  const model::Architecture next = tf5("qwen3_next");
  const std::vector<KvLayerType> n = kv_by_layer_type(next, plan_memory(next, {}, on(1000)));
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].kind, "full attention");
  EXPECT_EQ(n[0].layers, 12);
  EXPECT_EQ(n[1].kind, "linear-attention state");
  EXPECT_TRUE(n[1].per_sequence);
  EXPECT_EQ(n[1].bytes_per_layer, 8192 * 3 * 2 + 32 * 128 * 128 * 4);
  const model::Architecture v32 = tf5("deepseek_v32");
  const std::vector<KvLayerType> d = kv_by_layer_type(v32, plan_memory(v32, {}, on(1000)));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, "MLA latent");
  EXPECT_EQ(d[0].bytes_per_layer, (512 + 64) * 2);
  EXPECT_EQ(d[1].kind, "indexer keys");
  EXPECT_EQ(d[1].bytes_per_layer, 128 * 2);
}

}  // namespace
}  // namespace h0::plan
