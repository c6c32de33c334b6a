// The parallel plan on real configs (tests/data/configs): rank coordinates, uneven splits,
// plan errors, and shard_of — every tensor-split byte held exactly once per tp group.
#include "plan/parallel_plan.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "model/config/architecture.h"
#include "model/weights/inventory.h"

namespace h0::plan {
namespace {

using model::Architecture;
using model::TpSplit;
using model::WeightInfo;

Architecture arch_of(const std::string& name) {
  return model::load_architecture(std::string(H0_SOURCE_DIR) + "/tests/data/configs/" + name +
                                  ".json");
}

const WeightInfo& weight(const model::Inventory& inv, const std::string& name) {
  const WeightInfo* w = inv.find(name);
  EXPECT_NE(w, nullptr) << name;
  return *w;
}

std::pair<int64_t, int64_t> range_of(const std::optional<Slice>& s) {
  EXPECT_TRUE(s.has_value());
  return s ? std::make_pair(s->begin, s->end) : std::make_pair(int64_t{-1}, int64_t{-1});
}

TEST(Split, GivesRemaindersToTheFirstParts) {
  EXPECT_EQ(split(61, 2, 0), std::make_pair(int64_t{0}, int64_t{31}));
  EXPECT_EQ(split(61, 2, 1), std::make_pair(int64_t{31}, int64_t{61}));
  EXPECT_EQ(split(256, 3, 0), std::make_pair(int64_t{0}, int64_t{86}));
  EXPECT_EQ(split(256, 3, 1), std::make_pair(int64_t{86}, int64_t{171}));
  EXPECT_EQ(split(256, 3, 2), std::make_pair(int64_t{171}, int64_t{256}));
  EXPECT_EQ(split(32064, 3, 2), std::make_pair(int64_t{21376}, int64_t{32064}));  // 10688 each
  EXPECT_EQ(split(32064, 5, 3),
            std::make_pair(int64_t{19239}, int64_t{25652}));  // 6413 x4, then 6412
  EXPECT_EQ(split(32064, 5, 4), std::make_pair(int64_t{25652}, int64_t{32064}));
}

TEST(RankCoords, TpFastestThenDpThenPp) {
  ParallelPlan p{8, 2, 16, 2};
  EXPECT_EQ(p.world(), 32);
  EXPECT_EQ(p.etp(), 1);
  const RankCoord c = coord_of(p, 25);  // stage 1, dp 1, tp 1
  EXPECT_EQ(c.tp_rank, 1);
  EXPECT_EQ(c.dp_rank, 1);
  EXPECT_EQ(c.pp_rank, 1);
  EXPECT_EQ(c.ep_rank, 9);
  EXPECT_EQ(c.etp_rank, 0);
  const RankCoord d = coord_of(ParallelPlan{8, 1, 2, 1}, 5);  // ep 2 over tp 8: etp 4
  EXPECT_EQ(d.ep_rank, 1);
  EXPECT_EQ(d.etp_rank, 1);
  const RankCoord e = coord_of(ParallelPlan{4, 1, 1, 2}, 6);  // ep 1: experts split like dense
  EXPECT_EQ(e.ep_rank, 0);
  EXPECT_EQ(e.etp_rank, 2);
}

TEST(DefaultDp, ComesFromEpOverTp) {
  ParallelPlan p{8, 2, 16, 1};
  EXPECT_EQ(default_dp(&p, false), "dp=2 (from ep 16 over tp 8)");
  EXPECT_EQ(p.dp, 2);
  ParallelPlan given{8, 1, 16, 1};
  EXPECT_EQ(default_dp(&given, true), "");
  EXPECT_EQ(given.dp, 1);
}

std::string issue(const Architecture& a, ParallelPlan p) {
  const auto i = check_plan(a, p);
  return i ? i->dimension + ": " + i->message : "";
}

TEST(CheckPlan, NamesTheDimensionAtFault) {
  const Architecture llama = arch_of("llama-3.1-70b");
  EXPECT_EQ(issue(llama, {8, 1, 1, 1}), "");
  EXPECT_EQ(issue(llama, {16, 1, 1, 1}), "");  // kv heads replicated
  EXPECT_EQ(issue(llama, {3, 1, 1, 1}), "tp: num_attention_heads 64 is not divisible by tp 3");
  EXPECT_EQ(issue(llama, {1, 81, 1, 1}), "pp: pp 81 is more than the model's 80 layers");
  EXPECT_EQ(issue(llama, {8, 1, 2, 1}), "ep: the model has no routed experts; ep must be 1");
  EXPECT_EQ(issue(llama, {0, 1, 1, 1}), "tp: tp must be >= 1, got 0");
  Architecture odd_kv = llama;
  odd_kv.text.attn.num_kv_heads = 12;
  EXPECT_EQ(issue(odd_kv, {8, 1, 1, 1}), "tp: num_key_value_heads 12 is not divisible by tp 8");
  odd_kv.text.attn.num_kv_heads = 6;
  EXPECT_EQ(issue(odd_kv, {16, 1, 1, 1}),
            "tp: tp 16 is not a multiple of num_key_value_heads 6 (each kv head must be replicated "
            "over the same "
            "number of ranks)");
  const Architecture ds = arch_of("deepseek-v3");
  EXPECT_EQ(issue(ds, {8, 2, 16, 2}), "");
  EXPECT_EQ(issue(ds, {8, 1, 16, 1}).rfind("ep: ep 16 does not divide tp·dp = 8", 0), 0u);
  EXPECT_EQ(issue(ds, {8, 1, 512, 64}), "ep: ep 512 is more than the model's 256 experts");
}

TEST(Stages, UnevenLayersAndTheEnds) {
  const Architecture ds = arch_of("deepseek-v3");
  const ParallelPlan p{1, 2, 1, 1};
  EXPECT_EQ(stage_layers(ds, p, 0), std::make_pair(int64_t{0}, int64_t{31}));
  EXPECT_EQ(stage_layers(ds, p, 1), std::make_pair(int64_t{31}, int64_t{61}));
  const model::Inventory inv = model::build_inventory(ds);
  EXPECT_EQ(stage_of(weight(inv, "model.layers.30.mlp.gate.weight"), ds, p), 0);
  EXPECT_EQ(stage_of(weight(inv, "model.layers.31.mlp.gate.weight"), ds, p), 1);
  EXPECT_EQ(stage_of(weight(inv, "model.embed_tokens.weight"), ds, p), 0);
  EXPECT_EQ(stage_of(weight(inv, "lm_head.weight"), ds, p), 1);
  EXPECT_EQ(stage_of(weight(inv, "model.layers.61.eh_proj.weight"), ds, p), 1);  // MTP
  // Every stage_of agrees with stage_layers for pp = 1..7.
  for (int64_t pp = 1; pp <= 7; ++pp) {
    const ParallelPlan q{1, pp, 1, 1};
    for (int64_t s = 0; s < pp; ++s) {
      const auto [b, e] = stage_layers(ds, q, s);
      for (int64_t l = b; l < e; ++l) {
        WeightInfo w;
        w.layer = l;
        EXPECT_EQ(stage_of(w, ds, q), s) << "layer " << l << " pp " << pp;
      }
    }
  }
}

TEST(ShardOf, KvHeadsReplicatedWhenFewerThanTp) {
  const Architecture a = arch_of("llama-3.1-70b");  // 64 heads, 8 kv heads, head_dim 128
  const ParallelPlan p{16, 1, 1, 1};
  EXPECT_EQ(kv_head_replication(a, p), 2);
  EXPECT_EQ(kv_heads_per_rank(a, p), 1);
  const model::Inventory inv = model::build_inventory(a);
  const WeightInfo& k = weight(inv, "model.layers.0.self_attn.k_proj.weight");
  const WeightInfo& q = weight(inv, "model.layers.0.self_attn.q_proj.weight");
  const WeightInfo& o = weight(inv, "model.layers.0.self_attn.o_proj.weight");
  for (int64_t r = 0; r < 16; ++r) {
    const RankCoord c = coord_of(p, r);
    EXPECT_EQ(range_of(shard_of(k, a, p, c)), std::make_pair(r / 2 * 128, r / 2 * 128 + 128)) << r;
    EXPECT_EQ(range_of(shard_of(q, a, p, c)), std::make_pair(r * 512, r * 512 + 512)) << r;
    const auto os = shard_of(o, a, p, c);
    EXPECT_EQ(os->axis, 1);
    EXPECT_EQ(os->shape, (std::vector<int64_t>{8192, 512}));
  }
}

// A Gated DeltaNet layer's conv (and Qwen3.5's in_proj_qkv) is q | k | v of all heads: each part
// is cut by heads on its own, so a tp rank holds its key heads' q and k rows and their value heads'
// v rows. transformers' default Qwen3-Next: 16 key heads and 32 value heads of 128.
TEST(ShardOf, LinearAttentionQkvPartsAreCutEachByHeads) {
  for (const char* family : {"qwen3_next", "qwen3_5_text"}) {
    SCOPED_TRACE(family);
    const Architecture a = model::load_architecture(
        std::string(H0_SOURCE_DIR) + "/tests/data/configs/transformers5/" + family + ".json");
    const model::LinearAttention& la = a.text.linear;
    const int64_t key = la.num_k_heads * la.k_head_dim, value = la.num_v_heads * la.v_head_dim;
    const model::Inventory inv = model::build_inventory(a);
    const ParallelPlan p{4, 1, 1, 1};
    std::vector<const WeightInfo*> cut = {&weight(inv, "model.layers.0.linear_attn.conv1d.weight")};
    if (!la.fused_projections)
      cut.push_back(&weight(inv, "model.layers.0.linear_attn.in_proj_qkv.weight"));
    for (const WeightInfo* w : cut) {
      int64_t rows = 0;
      for (int64_t r = 0; r < 4; ++r) {
        const std::optional<Slice> s = shard_of(*w, a, p, coord_of(p, r));
        ASSERT_TRUE(s.has_value());
        const int64_t kq = key / 4, v = value / 4;
        EXPECT_EQ(s->pieces, (std::vector<std::pair<int64_t, int64_t>>{
                                 {r * kq, (r + 1) * kq},
                                 {key + r * kq, key + (r + 1) * kq},
                                 {2 * key + r * v, 2 * key + (r + 1) * v}}))
            << w->name << " rank " << r;
        EXPECT_EQ(s->shape[0], 2 * kq + v);
        rows += s->shape[0];
      }
      EXPECT_EQ(rows, w->shape[0]) << w->name;
    }
    // A tp that cuts a key-head group is refused before any weight is cut.
    EXPECT_TRUE(check_plan(a, ParallelPlan{int64_t(la.num_k_heads) * 2, 1, 1, 1}).has_value());
  }
}

TEST(ShardOf, UnevenVocab) {
  const Architecture a = arch_of("llava-1.5-7b-hf");  // vocab 32064
  const model::Inventory inv = model::build_inventory(a);
  const WeightInfo& embed = weight(inv, "language_model.model.embed_tokens.weight");
  const ParallelPlan p{5, 1, 1, 1};
  EXPECT_EQ(range_of(shard_of(embed, a, p, coord_of(p, 0))),
            std::make_pair(int64_t{0}, int64_t{6413}));
  EXPECT_EQ(range_of(shard_of(embed, a, p, coord_of(p, 4))),
            std::make_pair(int64_t{25652}, int64_t{32064}));
  EXPECT_EQ(rank_vocab(a, p, 4), std::make_pair(int64_t{25652}, int64_t{32064}));
  // The vision tower and projector are on stage 0 only, whole.
  const ParallelPlan pp2{1, 2, 1, 1};
  const WeightInfo& proj = weight(inv, "multi_modal_projector.linear_1.weight");
  EXPECT_TRUE(shard_of(proj, a, pp2, coord_of(pp2, 0))->whole());
  EXPECT_FALSE(shard_of(proj, a, pp2, coord_of(pp2, 1)).has_value());
}

TEST(ShardOf, ExpertsOverUnevenEpGroups) {
  const Architecture a = arch_of("deepseek-v3");
  const ParallelPlan p{1, 1, 3, 3};  // 3 dp ranks, one ep group each
  const model::Inventory inv =
      model::build_inventory(a, {.dtype = {}, .quantized = false, .include_mtp = false});
  auto holder = [&](int64_t expert) {
    const WeightInfo& w =
        weight(inv, "model.layers.3.mlp.experts." + std::to_string(expert) + ".up_proj.weight");
    int64_t found = -1, count = 0;
    for (int64_t r = 0; r < 3; ++r) {
      if (shard_of(w, a, p, coord_of(p, r))) found = r, ++count;
    }
    EXPECT_EQ(count, 1);
    return found;
  };
  EXPECT_EQ(holder(85), 0);
  EXPECT_EQ(holder(86), 1);
  EXPECT_EQ(holder(170), 1);
  EXPECT_EQ(holder(171), 2);
  EXPECT_EQ(holder(255), 2);
}

// Over the tp·dp ranks of each stage: tensor-split weights held once per tp group (and experts
// once per stage under ep), replicated ones tp times, replicated kv heads `replication` times.
void expect_conserved(const Architecture& a, const ParallelPlan& p, bool quantized) {
  const model::Inventory inv =
      model::build_inventory(a, {.dtype = {}, .quantized = quantized, .include_mtp = true});
  for (const WeightInfo& w : inv.weights) {
    int64_t held = 0;
    for (int64_t r = 0; r < p.world(); ++r) {
      if (auto s = shard_of(w, a, p, coord_of(p, r))) held += s->numel();
    }
    const bool expert = w.expert >= 0 || w.all_experts;
    int64_t copies = expert && p.ep > 1 ? 1 : p.dp;
    const int64_t parts = expert ? p.etp() : p.tp;
    if (w.tp == TpSplit::kReplicated) copies *= parts;
    if (w.kv_heads) copies *= kv_head_replication(a, p);
    if (w.tp == TpSplit::kVocab && a.text.tie_word_embeddings && p.pp > 1 && !w.mtp) copies *= 2;
    ASSERT_EQ(held, w.numel() * copies) << w.name << " under " << plan_name(p);
  }
}

TEST(ShardOf, NoBytesLostOrDoubleCounted) {
  expect_conserved(arch_of("llama-3.1-70b"), {8, 1, 1, 1}, false);
  expect_conserved(arch_of("llama-3.1-70b"), {16, 2, 1, 1}, false);
  expect_conserved(arch_of("qwen3-235b-a22b"), {4, 1, 4, 1}, false);  // kv 4 = tp 4
  expect_conserved(arch_of("qwen3-235b-a22b"), {8, 1, 1, 1}, false);  // kv replicated x2
  expect_conserved(arch_of("mixtral-8x7b-v0.1"), {2, 1, 1, 1}, false);
  expect_conserved(arch_of("llava-1.5-7b-hf"), {4, 3, 1, 1}, false);
  expect_conserved(arch_of("deepseek-v3"), {8, 2, 16, 2}, true);
  expect_conserved(arch_of("deepseek-v3"), {4, 3, 3, 3}, true);    // 61 layers / 3, 256 experts / 3
  expect_conserved(arch_of("gpt-oss-120b"), {8, 1, 1, 1}, false);  // fused experts cut along F
  expect_conserved(arch_of("gpt-oss-120b"), {4, 2, 8, 2}, false);  // fused experts cut along E
  expect_conserved(arch_of("gpt-oss-120b"), {8, 1, 1, 1}, true);  // MXFP4 blocks and scales along F
  expect_conserved(arch_of("gpt-oss-120b"), {4, 2, 8, 2}, true);
}

// GPT-OSS holds every expert of a layer in one tensor: ep cuts its expert axis, tp its F axis
// (gate_up's interleaved columns in whole gate/up pairs); both at once cannot be one slice.
TEST(ShardOf, FusedExpertsAreCutByEpOrByTp) {
  const Architecture a = arch_of("gpt-oss-120b");
  const model::Inventory inv =
      model::build_inventory(a, {.dtype = {}, .quantized = false, .include_mtp = false});
  const WeightInfo& gate_up = weight(inv, "model.layers.0.mlp.experts.gate_up_proj");
  const WeightInfo& down = weight(inv, "model.layers.0.mlp.experts.down_proj");
  const WeightInfo& down_bias = weight(inv, "model.layers.0.mlp.experts.down_proj_bias");
  const ParallelPlan tp{8, 1, 1, 1}, ep{8, 1, 8, 1};
  const auto t3 = shard_of(gate_up, a, tp, coord_of(tp, 3));
  ASSERT_TRUE(t3.has_value());
  EXPECT_EQ(t3->axis, 2);
  EXPECT_EQ(range_of(t3), std::make_pair(int64_t{3 * 720}, int64_t{4 * 720}));  // 2F = 5760 over 8
  EXPECT_EQ(shard_of(down, a, tp, coord_of(tp, 3))->axis, 1);
  EXPECT_TRUE(shard_of(down_bias, a, tp, coord_of(tp, 3))->whole());
  const auto e5 = shard_of(gate_up, a, ep, coord_of(ep, 5));
  EXPECT_EQ(e5->axis, 0);
  EXPECT_EQ(range_of(e5), std::make_pair(int64_t{80}, int64_t{96}));  // 128 experts over 8
  EXPECT_EQ(range_of(shard_of(down_bias, a, ep, coord_of(ep, 5))),
            std::make_pair(int64_t{80}, int64_t{96}));
  const ParallelPlan both{4, 1, 2, 1};  // etp 2
  EXPECT_THROW(shard_of(gate_up, a, both, coord_of(both, 1)), InputError);
}

// fp8 block scales are cut in the blocks of the weight slice they scale.
TEST(ShardOf, QuantScalesFollowTheirWeights) {
  const Architecture a = arch_of("deepseek-v3");
  const model::Inventory inv = model::build_inventory(a);
  for (const ParallelPlan& p :
       {ParallelPlan{8, 1, 1, 1}, ParallelPlan{16, 1, 4, 1}, ParallelPlan{16, 1, 1, 1}}) {
    for (const WeightInfo& w : inv.weights) {
      if (!w.quantized || w.layer != 3) continue;
      const WeightInfo& s = weight(inv, w.name + "_scale_inv");
      for (int64_t r = 0; r < p.world(); ++r) {
        const RankCoord c = coord_of(p, r);
        const auto ws = shard_of(w, a, p, c), ss = shard_of(s, a, p, c);
        ASSERT_EQ(ws.has_value(), ss.has_value()) << w.name;
        if (!ws || ws->whole()) continue;
        ASSERT_EQ(ss->axis, ws->axis);
        EXPECT_EQ(ss->begin, ws->begin / 128) << w.name << " rank " << r;
        EXPECT_EQ(ss->end, (ws->end + 127) / 128) << w.name << " rank " << r;
      }
    }
  }
}

TEST(ShardOf, RefusesToCutQuantizationBlocks) {
  Architecture a = arch_of("qwen2.5-72b");  // intermediate 29568: 3696 rows per rank at tp 8
  a.quantization = {"fp8", 128, 128};
  const model::Inventory inv = model::build_inventory(a);
  const WeightInfo& up = weight(inv, "model.layers.0.mlp.up_proj.weight");
  const ParallelPlan p{8, 1, 1, 1};
  try {
    shard_of(up, a, p, coord_of(p, 1));
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cut through its 128-wide quantization blocks"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(
      shard_of(up, a, ParallelPlan{1, 1, 1, 1}, coord_of(ParallelPlan{1, 1, 1, 1}, 0))->whole());
}

}  // namespace
}  // namespace h0::plan
