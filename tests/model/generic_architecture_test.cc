// The architecture-independent description of families the executor does not model, from real
// config.json files (tests/data/configs: OLMo-2-1124-13B, Qwen2.5-VL-7B) and hand-written ones.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_depth.h"
#include "model/config/architecture.h"
#include "plan/memory_plan.h"
#include "test_util.h"

namespace h0::model {
namespace {

using LayerKind = TextModel::LayerKind;

std::string config(const std::string& name) {
  return std::string(H0_SOURCE_DIR) + "/tests/data/configs/" + name + ".json";
}

// OLMo 2 (olmo2, Olmo2ForCausalLM): a dense decoder, full attention on every layer. What sets it
// apart (norms after each sublayer, q/k norms over the whole projection) is in no config field.
TEST(GenericArchitecture, Olmo2IsDescribedNotModelled) {
  const Architecture a = load_any_architecture(config("olmo-2-1124-13b"));
  EXPECT_FALSE(a.modelled);
  EXPECT_EQ(a.family, "olmo2");
  EXPECT_EQ(a.architecture, "Olmo2ForCausalLM");
  EXPECT_EQ(a.text.hidden_size, 5120);
  EXPECT_EQ(a.text.num_layers, 40);
  EXPECT_EQ(a.text.attn.num_heads, 40);
  EXPECT_EQ(a.text.attn.num_kv_heads, 40);  // no GQA
  EXPECT_EQ(a.text.attn.head_dim, 128);     // no head_dim field: 5120 / 40
  EXPECT_EQ(a.text.attn.sliding_window, 0);
  EXPECT_TRUE(a.text.layer_kinds.empty());  // no sliding_window, no layer_types
  EXPECT_EQ(a.text.intermediate_size, 13824);
  EXPECT_EQ(a.text.vocab_size, 100352);
  EXPECT_EQ(a.text.max_position_embeddings, 4096);
  EXPECT_FALSE(a.text.tie_word_embeddings);
  EXPECT_EQ(a.text.dtype, tensor::DType::kF32);  // torch_dtype float32, as released
  EXPECT_EQ(a.text.moe.num_experts, 0);
  EXPECT_TRUE(a.quantization.method.empty());
  EXPECT_FALSE(a.has_vision);
  // KV bytes per token: 40 layers x 2 x 40 kv heads x 128 x 2 B; no window, so any length.
  EXPECT_EQ(plan::model_kv_bytes_per_token(a, tensor::DType::kBF16), 40 * 2 * 40 * 128 * 2);
  EXPECT_EQ(plan::model_kv_bytes_per_token(a, tensor::DType::kBF16, 8192), 819200);
  // The strict parser still refuses it, naming the known families.
  EXPECT_THROW(load_architecture(config("olmo-2-1124-13b")), InputError);
}

// gpt-oss-120b, a family the executor models (load_any_architecture takes gpt_oss's parser).
// KV bytes per token: 18 full layers x 2 x 8 kv heads x 64 x 2 B = 36,864; the 18 sliding
// layers hold at most 128 of a sequence's 8,192 tokens: 36,864 x 128 / 8,192 = 576.
TEST(GenericArchitecture, SlidingLayersHoldOnlyTheirWindowOfKv) {
  const Architecture a = load_any_architecture(config("gpt-oss-120b"));
  EXPECT_EQ(plan::model_kv_bytes_per_token(a, tensor::DType::kBF16), 73728);
  EXPECT_EQ(plan::model_kv_bytes_per_token(a, tensor::DType::kBF16, 8192), 36864 + 576);
  EXPECT_EQ(plan::model_kv_bytes_per_token(a, tensor::DType::kBF16, 100), 73728);  // window >= len
}

// Qwen2.5-VL is modelled now (families/qwen2_5_vl.cc); its fields still read as the generic
// description did.
TEST(GenericArchitecture, Qwen25VlTextFieldsAtTheTopAndAVisionConfig) {
  const Architecture a = load_any_architecture(config("qwen2.5-vl-7b-instruct"));
  EXPECT_TRUE(a.modelled);
  EXPECT_EQ(a.family, "qwen2_5_vl");
  EXPECT_TRUE(a.has_vision);
  EXPECT_EQ(a.text.num_layers, 28);
  EXPECT_EQ(a.text.attn.num_kv_heads, 4);
  EXPECT_EQ(a.text.attn.head_dim, 128);
  EXPECT_TRUE(a.text.layer_kinds.empty());  // use_sliding_window: false
  EXPECT_EQ(plan::model_kv_bytes_per_token(a, tensor::DType::kBF16), 28 * 2 * 4 * 128 * 2);
}

TEST(GenericArchitecture, ModelledFamiliesKeepTheirParser) {
  const Architecture a = load_any_architecture(config("llama-3.1-8b"));
  EXPECT_TRUE(a.modelled);
  EXPECT_EQ(a.family, "llama");
}

TEST(GenericArchitecture, NestedTextConfigPatternsAndBadInput) {
  nlohmann::json c = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                      {"model_type", "gemma3"},
                      {"vision_config", {{"hidden_size", 8}}},
                      {"text_config",
                       {{"model_type", "gemma3_text"},
                        {"hidden_size", 64},
                        {"num_hidden_layers", 6},
                        {"num_attention_heads", 4},
                        {"num_key_value_heads", 1},
                        {"head_dim", 32},
                        {"sliding_window", 16},
                        {"sliding_window_pattern", 3},
                        {"vocab_size", 100}}}};
  Architecture a = describe_architecture(c, "config.json");
  EXPECT_EQ(a.family, "gemma3");
  EXPECT_TRUE(a.has_vision);
  EXPECT_EQ(a.text.attn.head_dim, 32);
  ASSERT_EQ(a.text.layer_kinds.size(), 6u);
  EXPECT_EQ(a.text.layer_kind(1), LayerKind::kSliding);
  EXPECT_EQ(a.text.layer_kind(2), LayerKind::kFull);  // every 3rd layer full
  EXPECT_EQ(a.text.layer_kind(5), LayerKind::kFull);

  c["text_config"]["layer_types"] = {"full_attention", "linear_attention"};  // 2 for 6 layers
  try {
    describe_architecture(c, "config.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("text_config.layer_types: has 2 entries for 6"),
              std::string::npos)
        << e.what();
  }
  c["text_config"].erase("layer_types");
  c["text_config"]["num_hidden_layers"] = 2147483647;  // shared/reproducers/cfg_layers_2e31
  EXPECT_THROW(describe_architecture(c, "config.json"), InputError);
  c["text_config"].erase("hidden_size");
  try {
    describe_architecture(c, "config.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("text_config.hidden_size: missing"), std::string::npos)
        << e.what();
  }
}

// A config.json nested 100k deep (shared/reproducers/cfg_deep_bias) once overflowed the stack
// of the recursive JSON parser: refused before parsing, naming the file.
TEST(GenericArchitecture, ADeeplyNestedConfigIsRefusedNotACrash) {
  h0::test::TempDir dir;
  std::ofstream(dir.file("config.json"))
      << "{\"model_type\": \"x\", \"bias\": " << std::string(100000, '[')
      << std::string(100000, ']') << "}";
  try {
    load_any_architecture(dir.path());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("config.json: JSON nested deeper than 256 levels"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(base::json_depth("{\"a\": [1, {\"b\": \"[[[\"}]}", 256),
            3);  // brackets in strings do not count
  EXPECT_EQ(base::json_depth(std::string(300, '['), 256), 257);
}

}  // namespace
}  // namespace h0::model

namespace h0::model {
namespace {

std::string tf5(const std::string& type) {
  return std::string(H0_SOURCE_DIR) + "/tests/data/configs/transformers5-fields/" + type + ".json";
}

// Config shapes transformers 5.24 accepts whose fields are saved under other names
// (golden/tools/gen_tf5_config_fields.py: the table and the configs, saved by save_pretrained).
// LongCat-Flash saves num_layers 28 and derives num_hidden_layers = 2 x 28 (two attention
// sublayers a layer): read as transformers does, said, and never split into pipeline stages over
// the wrong index. It was refused: "num_hidden_layers: missing".
TEST(GenericArchitecture, DerivedAndAliasedFieldsAreReadAsTransformersDoes) {
  const Architecture lc = load_any_architecture(tf5("longcat_flash"));
  EXPECT_EQ(lc.text.num_layers, 56);
  EXPECT_EQ(lc.text.layers_per_stored_layer, 2);
  EXPECT_TRUE(lc.text.attn.mla);
  ASSERT_EQ(lc.derived.size(), 1u);
  EXPECT_EQ(lc.derived[0],
            "num_hidden_layers 56 = 2 x num_layers (transformers 5.24's longcat_flash)");
  EXPECT_FALSE(plan::check_plan(lc, {8, 1, 1, 1}).has_value());
  const auto pp = plan::check_plan(lc, {1, 2, 1, 1});
  ASSERT_TRUE(pp.has_value());
  EXPECT_NE(pp->message.find("the config's layer count is derived (56 = 2 x the checkpoint's"),
            std::string::npos)
      << pp->message;

  const Architecture gpt2 = load_any_architecture(tf5("gpt2"));  // n_layer, n_embd, n_head
  EXPECT_EQ(gpt2.text.num_layers, 12);
  EXPECT_EQ(gpt2.text.hidden_size, 768);
  EXPECT_EQ(gpt2.text.attn.num_heads, 12);
  EXPECT_EQ(gpt2.text.layers_per_stored_layer, 1);
  EXPECT_EQ(gpt2.derived, (std::vector<std::string>{
                              "hidden_size 768 = n_embd (transformers 5.24's gpt2)",
                              "num_hidden_layers 12 = n_layer (transformers 5.24's gpt2)",
                              "num_attention_heads 12 = n_head (transformers 5.24's gpt2)"}));

  const Architecture nh = load_any_architecture(tf5("nemotron_h"));  // a per-layer list's length
  EXPECT_EQ(nh.text.num_layers, 4);
  EXPECT_EQ(
      nh.derived.at(0),
      "num_hidden_layers 4 = the length of layers_block_type (transformers 5.24's nemotron_h)");

  // A family transformers 5.24 does not have: a name other families use, said to be assumed; a
  // field under no name at all is still refused, naming it.
  nlohmann::json c = {{"model_type", "next_year_lm"},
                      {"n_layer", 6},
                      {"hidden_size", 64},
                      {"num_attention_heads", 4},
                      {"vocab_size", 100}};
  const Architecture next = describe_architecture(c, "config.json");
  EXPECT_EQ(next.text.num_layers, 6);
  EXPECT_EQ(next.derived.at(0),
            "num_hidden_layers 6 = n_layer (its name in other families; transformers 5.24 has no "
            "rule for next_year_lm)");
  c.erase("n_layer");
  try {
    describe_architecture(c, "config.json");
    ADD_FAILURE() << "a config without a layer count was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("num_hidden_layers: missing"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace h0::model
