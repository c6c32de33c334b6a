// Stage 1 over every family transformers 5.24 ships with a CausalLM class that builds from its
// default config (golden/models/transformers5-inventories.json.gz, written by
// golden/tools/gen_tf5_inventories.py from the meta-device model and what save_pretrained would
// write): the saved config.json is read, or refused naming a field; the saved tensors are counted
// by class, and the parameters equal transformers' num_parameters().
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/safetensors_writer.h"
#include "io/sharded_checkpoint.h"
#include "model/config/architecture.h"
#include "model/weights/checkpoint_inventory.h"
#include "model/weights/inventory.h"
#include "plan/memory_plan.h"
#include "plan/rank_loader.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"
#include "test_gunzip.h"
#include "test_util.h"

namespace h0::model {
namespace {

nlohmann::json read_golden() {
  return nlohmann::json::parse(
      test::gunzip(test::golden_path("models/transformers5-inventories.json.gz")));
}

const nlohmann::json& golden() {
  static const nlohmann::json g = read_golden();
  return g;
}

struct Expected {
  std::vector<SavedTensor> tensors;
  int64_t parameters = 0, buffers = 0;  // elements of each kind, as transformers holds them
};

Expected folded(const nlohmann::json& family) {
  Expected e;
  for (const auto& row : family["tensors"]) {
    SavedTensor t;
    t.name = row[0].get<std::string>();
    const auto dtype = tensor::parse_safetensors_dtype(row[1].get<std::string>());
    if (!dtype) throw std::runtime_error("dtype " + row[1].dump());
    t.dtype = *dtype;
    t.shape = row[2].get<std::vector<int64_t>>();
    t.copies = row[3].get<int64_t>();
    int64_t n = t.copies;
    for (int64_t d : t.shape) n *= d;
    (row[4] == "buffer" ? e.buffers : e.parameters) += n;
    e.tensors.push_back(std::move(t));
  }
  return e;
}

// Families whose saved tensors are not the model's parameters one for one: transformers converts
// them on load (Inkling 2 computes some of its convolution weights from saved ones), so no count
// of the checkpoint can equal num_parameters(); stage 1 counts what is saved.
bool converted_on_load(const std::string& type) { return type.rfind("inkling2", 0) == 0; }

TEST(Transformers5Inventories, TheTableCoversTransformersCausalLmFamilies) {
  const nlohmann::json& g = golden();
  EXPECT_EQ(g["transformers"], "5.24.0");
  // 196 model types with a CausalLM class; the ones whose default config or model does not build
  // are listed with the reason (gen_tf5_inventories.py).
  EXPECT_EQ(g["families"].size() + g["failed"].size(), 196u);
  EXPECT_GE(g["families"].size(), 175u);
  for (const auto& [type, why] : g["failed"].items()) {
    const std::string w = why.get<std::string>();
    EXPECT_TRUE(w.rfind("config: ", 0) == 0 || w.rfind("build: ", 0) == 0) << type << ": " << w;
  }
}

// Every family: its config read (or refused naming the field), its parameters exactly
// num_parameters(), its buffers exactly the persistent buffers transformers saves.
TEST(Transformers5Inventories, EveryFamilyParsesAndCountsExactly) {
  int parsed = 0, refused = 0, exact = 0;
  for (const auto& [type, family] : golden()["families"].items()) {
    Architecture a;
    try {
      a = describe_architecture(family["config"], type + "/config.json");
      ++parsed;
    } catch (const InputError& e) {
      // A refusal names the field: "<type>/config.json: <field>".
      EXPECT_EQ(e.where().rfind(type + "/config.json: ", 0), 0u) << type << ": " << e.what();
      if (type == "mamba" || type == "falcon_mamba" || type == "rwkv") {  // said what it is
        EXPECT_NE(e.message().find("has no attention heads"), std::string::npos) << e.what();
      }
      ++refused;
      std::printf("[ refused  ] %s\n", e.what());
      a.family = type;  // the count does not depend on the config's sizes
    }
    const Expected want = folded(family);
    const CheckpointTally t = tally_tensors(a, want.tensors);
    const int64_t num_parameters = family["num_parameters"].get<int64_t>();
    if (converted_on_load(type)) {  // said, not silent
      EXPECT_NE(want.parameters, num_parameters) << type << " is no longer converted on load";
      EXPECT_NE(t.count_note.find("converts " + type + "'s saved tensors"), std::string::npos);
    } else {
      EXPECT_EQ(want.parameters, num_parameters) << type << ": the golden itself";
      EXPECT_EQ(t.count_note, "") << type;
    }
    EXPECT_EQ(t.parameters, want.parameters) << type;
    EXPECT_EQ(t.buffers.elements, want.buffers) << type;
    EXPECT_EQ(t.companions.tensors, 0) << type << ": no default config is quantized";
    exact += t.parameters == num_parameters;
  }
  EXPECT_GT(parsed, 0);
  std::printf("[ families ] %d parsed, %d refused at a field; %d counted as num_parameters()\n",
              parsed, refused, exact);
}

// A family transformers 5.24 does not have (Day 0): the buffers most families save by those
// names are still told apart, and the rule says it guessed; an integer table by its dtype.
TEST(Transformers5Inventories, AnUnknownFamilyFallsBackToTheCommonBufferNames) {
  Architecture a;
  a.family = "released_today";
  const std::vector<SavedTensor> saved = {
      {"model.layers.0.ffn.gate.weight", tensor::DType::kBF16, {8, 16}},
      {"model.layers.0.ffn.gate.e_score_correction_bias", tensor::DType::kF32, {8}},
      {"model.layers.0.ffn.gate.bias", tensor::DType::kF32, {8}},
      {"model.layers.0.ffn.gate.tid2eid", tensor::DType::kI64, {32, 2}},
      {"model.layers.0.hc_attn_scale", tensor::DType::kF32, {3}}};
  const CheckpointTally t = tally_tensors(a, saved);
  EXPECT_EQ(t.parameters, 8 * 16 + 8 + 3);  // a gate's bias is a parameter in most families
  EXPECT_EQ(t.buffers.elements, 8 + 64);
  EXPECT_EQ(t.companions.tensors, 0);  // not quantized: hc_attn_scale is a parameter
  EXPECT_NE(t.buffer_rule.find("released_today is not in transformers 5.24"), std::string::npos)
      << t.buffer_rule;
  // Under DeepSeek-V4, transformers' own table decides: its router's correction bias is saved as
  // "ffn.gate.bias", and it has no e_score_correction_bias buffer.
  a.family = "deepseek_v4";
  EXPECT_EQ(tally_tensors(a, saved).buffers.names,
            (std::map<std::string, int64_t>{{"model.layers.*.ffn.gate.bias", 1},
                                            {"model.layers.*.ffn.gate.tid2eid", 1}}));
}

// Scales are quantization companions only in a quantized checkpoint, and only beside the weight
// they scale.
TEST(Transformers5Inventories, CompanionsNeedAQuantizedCheckpointAndTheirWeight) {
  Architecture a;
  a.family = "deepseek_v3";
  std::vector<SavedTensor> saved = {
      {"model.layers.0.mlp.down_proj.weight", tensor::DType::kF8E4M3, {256, 256}},
      {"model.layers.0.mlp.down_proj.weight_scale_inv", tensor::DType::kF32, {2, 2}},
      {"model.layers.0.hc_attn_scale", tensor::DType::kF32, {3}}};
  CheckpointTally t = tally_tensors(a, saved);
  EXPECT_EQ(t.companions.elements, 4);
  EXPECT_EQ(t.parameters, 256 * 256 + 3);
  saved[0].dtype = tensor::DType::kBF16;  // no longer quantized (and no quantization_config)
  t = tally_tensors(a, saved);
  EXPECT_EQ(t.companions.tensors, 0);
  EXPECT_EQ(t.parameters, 256 * 256 + 4 + 3);
  a.quantization.method = "fp8";  // the config says it is
  EXPECT_EQ(tally_tensors(a, saved).companions.elements, 4);
}

// The eight 2026 families the executor does not model, as transformers 5.24's save_pretrained
// wrote tiny checkpoints of them (tests/peers/tf5_new_families.py --record): each checkpoint
// written again from its headers (zeros for the values) and read as stage 1 reads it. The
// parameters are num_parameters(), the buffers the ones transformers saved.
class Transformers5TinyCheckpoint : public ::testing::TestWithParam<std::string> {};

TEST_P(Transformers5TinyCheckpoint, Stage1CountsAsTransformers) {
  std::ifstream in(std::string(H0_SOURCE_DIR) + "/tests/data/configs/transformers5-tiny/" +
                   GetParam() + ".json");
  const nlohmann::json rec = nlohmann::json::parse(in);
  test::TempDir dir;
  std::ofstream(dir.file("config.json")) << rec["config"].dump();
  std::vector<io::NamedTensor> tensors;
  for (const auto& row : rec["tensors"]) {
    const auto dtype = tensor::parse_safetensors_dtype(row[1].get<std::string>());
    ASSERT_TRUE(dtype) << row;
    const auto shape = row[2].get<std::vector<int64_t>>();
    tensors.push_back({row[0].get<std::string>(), tensor::Tensor::zeros(*dtype, shape)});
  }
  io::write_safetensors(dir.file("model.safetensors"), std::move(tensors), {});
  const Architecture a = load_any_architecture(dir.path());
  const auto ckpt = io::ShardedCheckpoint::open(dir.path());
  const CheckpointTally t = tally_tensors(a, saved_tensors(ckpt));
  EXPECT_EQ(t.parameters, rec["num_parameters"].get<int64_t>());
  if (a.modelled) {  // MiniMax-M2: counted from its family file, as stage 1 does
    EXPECT_EQ(build_inventory(a).counts.total, rec["num_parameters"].get<int64_t>());
  } else {
    CheckpointTally same;  // the inventory's pass counts as tally_tensors does
    EXPECT_EQ(inventory_from_checkpoint(a, ckpt, &same).counts.total, t.parameters);
    EXPECT_EQ(same.buffers.names, t.buffers.names);
  }
  EXPECT_EQ(t.buffers.elements, rec["buffer_elements"].get<int64_t>());
  EXPECT_EQ(t.companions.tensors, 0);
  // Day-0's load stage on one rank: every tensor held (LongCat-Flash's rows of its
  // zero-computation experts, numbered past its routed experts, included).
  const Inventory inv =
      a.modelled ? plan::checkpoint_inventory(a, ckpt) : inventory_from_checkpoint(a, ckpt);
  const plan::RankLoad r = plan::load_rank(a, inv, ckpt, plan::ParallelPlan{}, 0, {});
  const plan::ShardVerification v = plan::verify_rank_shards(inv, ckpt, {r});
  EXPECT_TRUE(v.problems.empty()) << v.problems.at(0);
  EXPECT_EQ(v.tensors, int64_t(rec["tensors"].size()));
}

INSTANTIATE_TEST_SUITE_P(Families, Transformers5TinyCheckpoint,
                         ::testing::Values("deepseek_v4", "gemma4_text", "glm_moe_dsa", "hy_v3",
                                           "kimi_linear", "longcat_flash", "mimo_v2_flash",
                                           "minimax_m2"));

bool has(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

// The memory plan of a family the executor does not model says what its KV estimate rests on
// and which per-layer kinds it did not understand (the default configs, as transformers saves
// them).
TEST(Transformers5Inventories, TheKvEstimateSaysWhatItUsedAndWhatItDidNotUnderstand) {
  const auto arch = [](const char* type) {
    return describe_architecture(golden()["families"][type]["config"], "config.json");
  };
  const Architecture v4 = arch("deepseek_v4");
  EXPECT_EQ(v4.kv_basis.at(0), "num_key_value_heads 1 x head_dim 512, keys and values");
  EXPECT_EQ(v4.not_understood,
            (std::vector<std::string>{
                "mlp_layer_types 'hash_moe' on 3 layers: counted as routed experts",
                "layer_types 'compressed_sparse_attention' on 20 layers: counted as full attention",
                "layer_types 'heavily_compressed_attention' on 23 layers: counted as full "
                "attention"}));
  plan::MemoryOptions o;
  o.device_memory = int64_t(80) << 30;
  const std::vector<std::string> notes = plan::plan_memory(v4, plan::ParallelPlan{}, o).notes;
  EXPECT_TRUE(has(notes, "KV cache from the config's num_key_value_heads 1 x head_dim 512"));
  EXPECT_TRUE(has(notes, "not understood: layer_types 'compressed_sparse_attention'"));

  const Architecture mimo = arch("mimo_v2_flash");  // understood: 39 sliding, 9 full
  EXPECT_EQ(mimo.kv_basis,
            (std::vector<std::string>{"num_key_value_heads 4 x head_dim 192, keys and values",
                                      "sliding_window 129 on 39 of 48 layers"}));
  EXPECT_TRUE(mimo.not_understood.empty());
  EXPECT_FALSE(mimo.text.is_moe_layer(0));  // mlp_layer_types: the first layer dense
  EXPECT_TRUE(mimo.text.is_moe_layer(1));

  const Architecture kimi = arch("kimi_linear");  // MLA on its 6 full layers, 21 linear
  EXPECT_EQ(kimi.kv_basis, (std::vector<std::string>{
                               "kv_lora_rank 512 + qk_rope_head_dim 64 a token and layer (MLA's "
                               "latent)",
                               "21 linear-attention layers: no KV"}));
  const Architecture dsa = arch("glm_moe_dsa");  // attention with an indexer: its keys not counted
  EXPECT_TRUE(has(dsa.not_understood,
                  "layer_types 'indexed_attention' on 78 layers: counted as full attention"));
  EXPECT_TRUE(has(dsa.not_understood, "indexer_types not read"));
}

TEST(FoldIndices, EveryNumericComponent) {
  EXPECT_EQ(fold_indices("model.layers.12.mlp.experts.7.w1.weight"),
            "model.layers.*.mlp.experts.*.w1.weight");
  EXPECT_EQ(fold_indices("model.attn_res.queries.3"), "model.attn_res.queries.*");
  EXPECT_EQ(fold_indices("h2o.w3.weight"), "h2o.w3.weight");
}

}  // namespace
}  // namespace h0::model
