// The memory planner on real configs: KV bytes per token against hand-computed figures, weight
// bytes against the parameter counts and the released fp8 checkpoint, and the verdicts.
#include "plan/memory_plan.h"

#include <gtest/gtest.h>

#include <numeric>

#include "base/error.h"
#include "model/config/architecture.h"
#include "model/weights/inventory.h"
#include "plan/plan_report.h"

namespace h0::plan {
namespace {

using model::Architecture;
using tensor::DType;

Architecture arch_of(const std::string& name) {
  return model::load_architecture(std::string(H0_SOURCE_DIR) + "/tests/data/configs/" + name +
                                  ".json");
}

MemoryOptions on(double gib, WeightFormat format = WeightFormat::kBF16) {
  MemoryOptions o;
  o.device_memory = gib * kGiB;
  o.weights = format;
  return o;
}

bool has_note(const MemoryPlan& p, const std::string& text) {
  for (const auto& n : p.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

int64_t sum_kv(const MemoryPlan& p) {
  int64_t sum = 0;
  for (const RankMemory& r : p.ranks) sum += r.kv_bytes_per_token;
  return sum;
}

TEST(KvBytesPerToken, Llama70BIs327680OverAllTpRanks) {
  const Architecture a = arch_of("llama-3.1-70b");
  EXPECT_EQ(model_kv_bytes_per_token(a, DType::kBF16), 327680);  // 80 layers x 2 x 8 kv x 128 x 2 B
  const MemoryPlan p = plan_memory(a, {8, 1, 1, 1}, on(80));
  EXPECT_EQ(p.kv_bytes_per_token, 327680);
  for (const RankMemory& r : p.ranks) EXPECT_EQ(r.kv_bytes_per_token, 40960);
  EXPECT_EQ(sum_kv(p), 327680);
  EXPECT_EQ(plan_memory(a, {8, 1, 1, 1},
                        [] {
                          auto o = on(80);
                          o.kv_dtype = DType::kF8E4M3;
                          return o;
                        }())
                .kv_bytes_per_token,
            163840);
  // pp 2: each stage holds its 40 layers' KV.
  const MemoryPlan pp = plan_memory(a, {4, 2, 1, 1}, on(80));
  EXPECT_EQ(pp.ranks.front().kv_bytes_per_token, 40 * 2 * 2 * 128 * 2);
  EXPECT_EQ(sum_kv(pp), 327680);
}

TEST(KvBytesPerToken, DeepSeekV3Is70272OnEveryRank) {
  const Architecture a = arch_of("deepseek-v3");
  EXPECT_EQ(model_kv_bytes_per_token(a, DType::kBF16), 70272);  // 61 layers x (512 + 64) x 2 B
  for (int64_t tp : {1, 8, 16}) {
    const MemoryPlan p = plan_memory(a, {tp, 1, 1, 1}, on(1e6));
    for (const RankMemory& r : p.ranks) EXPECT_EQ(r.kv_bytes_per_token, 70272) << "tp " << tp;
  }
  const MemoryPlan pp = plan_memory(a, {8, 2, 16, 2}, on(141, WeightFormat::kFP8));
  EXPECT_EQ(pp.ranks.front().kv_bytes_per_token, 31 * 576 * 2);
  EXPECT_EQ(pp.ranks.back().kv_bytes_per_token, 30 * 576 * 2);
  EXPECT_TRUE(has_note(pp, "layers 61 over pp 2: 31/30 (uneven)"));
  EXPECT_TRUE(has_note(pp, "MLA: the latent KV"));
}

TEST(KvBytesPerToken, Tp16WithEightKvHeadsReplicates) {
  const Architecture a = arch_of("llama-3.1-70b");
  const MemoryPlan p = plan_memory(a, {16, 1, 1, 1}, on(80));
  EXPECT_TRUE(has_note(p, "kv heads replicated x2 (8 kv heads over tp 16)"));
  for (const RankMemory& r : p.ranks) {
    EXPECT_EQ(r.kv_heads, 1);
    EXPECT_EQ(r.kv_bytes_per_token, 80 * 2 * 1 * 128 * 2);
  }
  EXPECT_EQ(sum_kv(p), 2 * 327680);  // every kv head twice
}

// The weights no rank splits (norms, and the kv projections' replicas) counted once per holder.
TEST(Weights, TpRanksSumToTheModelPlusReplicas) {
  const Architecture a = arch_of("llama-3.1-70b");
  const model::Inventory inv = model::build_inventory(a);
  int64_t replicated = 0;
  for (const auto& w : inv.weights)
    replicated += w.tp == model::TpSplit::kReplicated ? w.numel() : 0;
  EXPECT_EQ(plan_memory(a, {1, 1, 1, 1}, on(1000)).total_weights, 2 * inv.counts.total);
  EXPECT_EQ(plan_memory(a, {8, 1, 1, 1}, on(1000)).total_weights,
            2 * (inv.counts.total + 7 * replicated));
  int64_t kv = 0;
  for (const auto& w : inv.weights) kv += w.kv_heads ? w.numel() : 0;
  EXPECT_EQ(plan_memory(a, {16, 1, 1, 1}, on(1000)).total_weights,
            2 * (inv.counts.total + 15 * replicated + kv));
}

// DeepSeek-V3's released checkpoint is fp8 with 128x128 f32 block scales: at tp=1 with its MTP
// layer the planner's fp8 bytes equal the checkpoint inventory's bytes exactly, and that is the
// released safetensors' 688,586,727,753 bytes less their headers (~12 MB of JSON for ~91k
// tensors in 163 files): within 20 MB.
TEST(Weights, DeepSeekV3Fp8IsTheReleasedCheckpoint) {
  const Architecture a = arch_of("deepseek-v3");
  const model::Inventory ckpt = model::build_inventory(a);
  int64_t ckpt_bytes = 0;
  for (const auto& w : ckpt.weights) ckpt_bytes += w.bytes();
  MemoryOptions o = on(1e6, WeightFormat::kFP8);
  o.include_mtp = true;
  const MemoryPlan p = plan_memory(a, {1, 1, 1, 1}, o);
  EXPECT_EQ(p.total_weights, ckpt_bytes);
  EXPECT_LT(p.total_weights, 688586727753);
  EXPECT_GT(p.total_weights, 688586727753 - 20'000'000);
  // Without MTP (what serves by default): 671B parameters, ~655B of them fp8.
  const MemoryPlan serve = plan_memory(a, {1, 1, 1, 1}, on(1e6, WeightFormat::kFP8));
  EXPECT_GT(serve.total_weights, 665e9);
  EXPECT_LT(serve.total_weights, 680e9);
}

// gpt-oss-120b as released: the routed experts' 114,661,785,600 weights in MXFP4 (half a byte
// each plus one E8M0 byte per 32), the other 2,167,371,072 parameters (attention, router,
// embeddings, expert biases) in bf16: 65,248,815,744 bytes, the hub checkpoint's 65.25 GB, and the
// checkpoint's own format by default. Over ep 8 each rank holds 16 experts of every layer.
TEST(Weights, GptOssMxfp4IsTheReleasedCheckpoint) {
  const Architecture a = arch_of("gpt-oss-120b");
  EXPECT_EQ(checkpoint_weight_format(a), WeightFormat::kMXFP4);
  const int64_t experts = int64_t{36} * 128 * (2880 * 5760 + 2880 * 2880);
  const int64_t others = 116829156672 - experts;
  const MemoryPlan p = plan_memory(a, {1, 1, 1, 1}, on(1e6, WeightFormat::kMXFP4));
  EXPECT_EQ(p.total_weights, others * 2 + experts / 2 + experts / 32);
  EXPECT_EQ(p.total_weights, 65248815744);
  const MemoryPlan ep8 = plan_memory(a, {8, 1, 8, 1}, on(1e6, WeightFormat::kMXFP4));
  ASSERT_EQ(ep8.ranks.size(), 8u);
  EXPECT_EQ(ep8.ranks[3].experts, std::make_pair(int64_t{48}, int64_t{64}));
  EXPECT_LT(ep8.ranks[3].weights, p.total_weights / 8 + int64_t{2} * 201088 * 2880);
}

// An fp8 checkpoint at tp=8, as `harness plan` and day0's memory stage plan it by default (the
// checkpoint's own format): every rank's weights are the checkpoint's bytes (fp8 and their block
// scales as stored, MTP left out) over 8, plus the parts each rank holds whole (MLA's low-rank
// projections, norms, the router): within 1%. The expectation reads only the checkpoint's tensor
// list and which tensors split, not the planner's byte rules.
TEST(Weights, Fp8CheckpointsOverTp8AreTheirBytesOverEight) {
  for (const char* name : {"deepseek-v3", "kimi-k2-instruct"}) {
    SCOPED_TRACE(name);
    const Architecture a = arch_of(name);
    ASSERT_EQ(checkpoint_weight_format(a), WeightFormat::kFP8);
    int64_t expected = 0;
    for (const auto& w :
         model::build_inventory(a, {.dtype = std::nullopt, .quantized = true, .include_mtp = false})
             .weights) {
      expected += w.tp == model::TpSplit::kReplicated ? w.bytes() : w.bytes() / 8;
    }
    const MemoryPlan p = plan_memory(a, {8, 1, 1, 1}, on(141, checkpoint_weight_format(a)));
    for (const RankMemory& r : p.ranks) {
      EXPECT_NEAR(double(r.weights), double(expected), 0.01 * double(expected))
          << "rank " << r.coord.rank;
    }
  }
}

TEST(Weights, QuantizedFormatsFollowTheirLayouts) {
  const Architecture a = arch_of("llama-3.1-8b");
  const model::Inventory inv = model::build_inventory(a);
  int64_t linear = 0, linear_rows = 0, linear_blocks = 0, linear_groups = 0;
  for (const auto& w : inv.weights) {
    if (w.shape.size() != 2 || w.layer < 0 || w.layer >= a.text.num_layers) continue;
    linear += w.numel();
    linear_rows += w.shape[0];
    linear_blocks += (w.shape[0] + 127) / 128 * ((w.shape[1] + 127) / 128);
    linear_groups += w.shape[0] * ((w.shape[1] + 127) / 128);
  }
  const int64_t other = inv.counts.total - linear;
  EXPECT_EQ(plan_memory(a, {}, on(100, WeightFormat::kFP8)).total_weights,
            linear + 4 * linear_blocks + 2 * other);
  EXPECT_EQ(plan_memory(a, {}, on(100, WeightFormat::kINT8)).total_weights,
            linear + 2 * linear_rows + 2 * other);
  EXPECT_EQ(plan_memory(a, {}, on(100, WeightFormat::kINT4)).total_weights,
            linear / 2 + 4 * linear_groups + 2 * other);
  EXPECT_EQ(plan_memory(a, {}, on(100, WeightFormat::kF32)).total_weights, 4 * inv.counts.total);
}

TEST(Verdict, Llama70BOnEightH100sFits) {
  MemoryOptions o = on(80);
  o.concurrency = 64;
  const MemoryPlan p = plan_memory(arch_of("llama-3.1-70b"), {8, 1, 1, 1}, o);
  EXPECT_TRUE(p.fits) << p.reason;
  EXPECT_EQ(p.reason, "");
  EXPECT_EQ(p.required_tokens, 8192 * 64);
  EXPECT_GT(p.kv_tokens, 1000000);
  EXPECT_EQ(p.kv_tokens % 16, 0);
  EXPECT_EQ(group_ranks(p).size(), 1u);  // eight identical ranks, one row
  EXPECT_EQ(rank_list(p, group_ranks(p)[0]), "0-7");
}

TEST(Verdict, WeightsTooLargeNameTheRank) {
  const MemoryPlan p =
      plan_memory(arch_of("llama-3.1-405b"), {8, 1, 1, 1}, on(80));  // ~94 GiB of bf16 per rank
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.reason.rfind("rank 0 (stage 0): weights 94.", 0), 0u) << p.reason;
  EXPECT_NE(p.reason.find("exceed usable 72.0 GiB"), std::string::npos) << p.reason;
}

TEST(Verdict, TooLittleKvForTheConcurrency) {
  MemoryOptions o = on(80);
  o.max_model_len = 131072;
  o.concurrency = 1000;
  const MemoryPlan p = plan_memory(arch_of("llama-3.1-70b"), {8, 1, 1, 1}, o);
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.reason.find("x concurrency 1000 needs 131,072,000"), std::string::npos) << p.reason;
  EXPECT_LT(p.headroom, 0);
}

TEST(Report, UnevenSplitsShowEachDistinctRank) {
  // LLaVA's 32064-row vocabulary over tp 4 is even; 61 DeepSeek layers over pp 3 are not.
  const MemoryPlan p =
      plan_memory(arch_of("deepseek-v3"), {8, 3, 8, 1}, on(141, WeightFormat::kFP8));
  const auto groups = group_ranks(p);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(rank_list(p, groups[0]), "0-7");
  EXPECT_EQ(p.ranks[groups[0][0]].layers, std::make_pair(int64_t{0}, int64_t{21}));
  EXPECT_EQ(p.ranks[groups[2][0]].layers, std::make_pair(int64_t{41}, int64_t{61}));
  const std::string table = plan_table(p);
  EXPECT_NE(table.find("0-7 x8"), std::string::npos) << table;
  EXPECT_NE(table.find("41-60"), std::string::npos) << table;
  EXPECT_EQ(plan_json(p)["ranks"].size(), 24u);
}

TEST(Options, BadValuesAreInputErrors) {
  const Architecture a = arch_of("llama-3.1-8b");
  EXPECT_THROW(plan_memory(a, {}, MemoryOptions{}), InputError);  // no device memory
  MemoryOptions o = on(80);
  o.utilization = 1.5;
  EXPECT_THROW(plan_memory(a, {}, o), InputError);
  EXPECT_EQ(parse_weight_format("fp8"), WeightFormat::kFP8);
  EXPECT_EQ(parse_weight_format("bfloat16"), WeightFormat::kBF16);
  EXPECT_FALSE(parse_weight_format("fp4"));
  EXPECT_EQ(parse_kv_dtype("fp8"), DType::kF8E4M3);
  EXPECT_FALSE(parse_kv_dtype("i8"));
  EXPECT_EQ(with_commas(1234567), "1,234,567");
  EXPECT_EQ(plan_memory(a, {}, on(80)).options.max_model_len, 8192);  // min(131072, 8192)
}

}  // namespace
}  // namespace h0::plan

namespace h0::plan {
namespace {

// Qwen2.5-VL-7B's vision tower at the released processor's max_pixels 12845056 (65536 patches of
// K = 3·2·14·14 = 1176, Dv 1280, Iv 3420, merge 2, D 3584; bf16), by memory_plan.h's formula:
//   pixels 65536·1176·4 = 308,281,344; residual + normed 2·65536·1280·2 = 335,544,320;
//   peak max(qkvo 671,088,640, MLP 3·65536·3420·2 = 1,344,798,720,
//            merger 65536·1280·2 + 16384·(4·1280 + 3584)·2 = 452,984,832) = 1,344,798,720;
//   1.25 · 1,988,624,384 = 2,485,780,480.
TEST(VisionActivations, Qwen25Vl7BAtTheLargestImage) {
  const model::Architecture a = model::load_architecture(
      std::string(H0_SOURCE_DIR) + "/tests/data/configs/qwen2.5-vl-7b-instruct.json");
  MemoryOptions o;
  o.device_memory = 80 * kGiB;
  o.max_image_pixels = 12845056;
  const MemoryPlan p = plan_memory(a, {1, 2, 1, 1}, o);
  EXPECT_EQ(p.ranks[0].vision_activations, 2485780480);
  EXPECT_GE(p.ranks[0].activations, 2485780480);  // stage 0 runs the tower before its prefill
  EXPECT_EQ(p.ranks[1].vision_activations, 0);
  EXPECT_LT(p.ranks[1].activations, p.ranks[0].activations);
  EXPECT_TRUE(has_note(p,
                       "vision tower on stage 0 sized for an image of 12845056 pixels (65536 "
                       "patches, the processor's max_pixels)"));
  // Without the processor's value: the class default (28·28·1280 = 1003520 pixels, 5120 patches),
  // noted.
  o.max_image_pixels = 0;
  const MemoryPlan d = plan_memory(a, {1, 1, 1, 1}, o);
  EXPECT_LT(d.ranks[0].vision_activations, 2485780480 / 10);
  EXPECT_TRUE(has_note(d, "5120 patches: the processor class default"));
  // A text-only model has none.
  EXPECT_EQ(plan_memory(arch_of("llama-3.1-70b"), {8, 1, 1, 1}, on(80)).ranks[0].vision_activations,
            0);
}

// The layers day0 checks alone: the first of each block type, with what a device holding it alone
// loads (its tensors as stored plus the embedding).
TEST(RepresentativeLayers, TheFirstLayerOfEachBlockType) {
  auto blocks = [](const Architecture& a) {
    std::vector<std::string> out;
    for (const LayerChoice& c : representative_layers(a))
      out.push_back(std::to_string(c.layer) + ": " + c.block + " x" +
                    std::to_string(c.layers.size()));
    return out;
  };
  // DeepSeek-V3: three dense layers, then 58 MoE ones (the MTP layer is not a decoder layer).
  const Architecture v3 = arch_of("deepseek-v3");
  EXPECT_EQ(blocks(v3), (std::vector<std::string>{"0: MLA, dense MLP x3", "3: MLA, MoE x58"}));
  // Its MoE layer stored in fp8 (256 experts of 3 x 7168 x 2048 bytes, 11.3 GB) plus the bf16
  // embedding (129,280 x 7,168 x 2 bytes).
  const std::vector<LayerChoice> v3_layers = representative_layers(v3);
  EXPECT_GT(v3_layers[1].bytes, int64_t{256} * 3 * 7168 * 2048 + int64_t{129280} * 7168 * 2);
  EXPECT_LT(v3_layers[1].bytes, int64_t{13} << 30);
  EXPECT_LT(v3_layers[0].bytes, int64_t{3} << 30);
  // Gemma 3: five sliding-window layers to one full one.
  EXPECT_EQ(blocks(arch_of("gemma-3-1b-it")),
            (std::vector<std::string>{"0: sliding-window attention, dense MLP x22",
                                      "5: full attention, dense MLP x4"}));
  // Qwen3-Next: linear attention and full attention, every layer MoE; DeepSeek-V3.2: MLA with
  // the lightning indexer.
  auto tiny = [](const std::string& name) {
    return model::load_architecture(std::string(H0_SOURCE_DIR) + "/tests/data/models/" + name);
  };
  EXPECT_EQ(blocks(tiny("tiny-qwen3-next")),
            (std::vector<std::string>{"0: linear attention, MoE x2", "1: full attention, MoE x1"}));
  EXPECT_EQ(
      blocks(tiny("tiny-deepseek-v32")),
      (std::vector<std::string>{"0: MLA + indexer, dense MLP x1", "1: MLA + indexer, MoE x1"}));
}

}  // namespace
}  // namespace h0::plan
