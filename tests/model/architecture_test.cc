// Architectures from real config.json files (tests/data/configs, see SOURCES.md there) and their
// exact parameter counts against the published figures.
#include "model/config/architecture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "base/error.h"
#include "io/safetensors_reader.h"
#include "model/config/block.h"
#include "model/exec/model_ops.h"
#include "model/weights/inventory.h"

namespace h0::model {
namespace {

std::string config(const std::string& name) {
  return std::string(H0_SOURCE_DIR) + "/tests/data/configs/" + name + ".json";
}

ParamCounts counts_of(const std::string& name) {
  return build_inventory(load_architecture(config(name))).counts;
}

struct Published {
  const char* file;
  int64_t exact_total;   // SOURCES.md "exact from config" (checkpoint tensors, MTP excluded)
  int64_t exact_active;  // 0: dense
  double published_total, published_active;  // model card figures
  // The card rounds: within 0.5% or half a unit of the card's last digit, whichever is larger.
  double rounding_total = 0, rounding_active = 0;
  // DeepSeek's and Moonshot's cards count activated parameters without the embedding (a lookup).
  bool card_active_without_embedding = false;
};

void PrintTo(const Published& p, std::ostream* os) { *os << p.file; }

double allowed(double published, double rounding) {
  return std::max(0.005 * published, rounding / 2);
}

class PublishedCounts : public ::testing::TestWithParam<Published> {};

TEST_P(PublishedCounts, ExactAndWithinHalfPercentOfPublished) {
  const Published& p = GetParam();
  const ParamCounts c = counts_of(p.file);
  EXPECT_EQ(c.total + c.buffers, p.exact_total);
  EXPECT_LE(std::abs(double(c.total) - p.published_total),
            allowed(p.published_total, p.rounding_total));
  if (p.exact_active > 0) {
    EXPECT_EQ(c.active, p.exact_active);
  } else {
    EXPECT_EQ(c.active, c.total);
  }
  if (p.published_active > 0) {
    const Architecture a = load_architecture(config(p.file));
    const double active =
        double(c.active) -
        (p.card_active_without_embedding ? double(a.text.vocab_size * a.text.hidden_size) : 0);
    EXPECT_LE(std::abs(active - p.published_active),
              allowed(p.published_active, p.rounding_active));
  }
}

INSTANTIATE_TEST_SUITE_P(
    RealConfigs, PublishedCounts,
    ::testing::Values(
        Published{"llama-3.1-8b", 8030261248, 0, 8.03e9, 0},
        Published{"llama-3.1-70b", 70553706496, 0, 70.6e9, 0},
        Published{"llama-3.1-405b", 405853388800, 0, 405.9e9, 0},
        Published{"qwen2.5-72b", 72706203648, 0, 72.7e9, 0},
        Published{"qwen3-8b", 8190735360, 0, 8.2e9, 0},
        Published{"qwen3-32b", 32762123264, 0, 32.8e9, 0},
        Published{"qwen3-235b-a22b", 235093634560, 22190763520, 235e9, 22e9, 1e9, 1e9},
        Published{"mixtral-8x7b-v0.1", 46702792704, 12879925248, 46.7e9, 12.9e9},
        Published{"deepseek-v3", 671026419200, 37552282624, 671e9, 37e9, 1e9, 1e9, true},
        Published{"kimi-k2-instruct", 1026408232448, 32861477888, 1e12, 32e9, 0.1e12, 1e9, true},
        Published{"mistral-7b-v0.1", 7241732096, 0, 7.24e9, 0},
        Published{"mistral-7b-instruct-v0.3", 7248023552, 0, 7.25e9, 0},
        Published{"qwen1.5-moe-a2.7b", 14315784192, 2689173504, 14.3e9, 2.7e9},
        Published{"qwen2-57b-a14b", 57408658944, 14249270784, 57e9, 14e9, 1e9, 1e9},
        // GLM's cards: 355B / 32B and 106B / 12B, active without the embedding.
        Published{"glm-4.5", 352797829024, 33632251904, 355e9, 32e9, 10e9, 2e9, true},
        Published{"glm-4.5-air", 106852251264, 13424123904, 106e9, 12e9, 2e9, 2e9, true},
        // Gemma 3 1B: tied embeddings (Gemma3TextConfig's default; the config omits the key).
        Published{"gemma-3-1b-it", 999885952, 0, 1e9, 0, 0.1e9},
        // gpt-oss-120b's card: 116.83B total, 5.13B active (without the embedding).
        Published{"gpt-oss-120b", 116829156672, 5711982912, 116.83e9, 5.13e9, 0.01e9, 0.01e9,
                  true}),
    [](const ::testing::TestParamInfo<Published>& param) {
      std::string n = param.param.file;
      for (char& ch : n)
        if (ch == '-' || ch == '.') ch = '_';
      return n;
    });

// gpt-oss-120b (a transformers 4 config): sinks, a 128-token window on every other layer from
// layer 0, YaRN without truncation, 128 fused experts with biases behind a biased router, top-4
// softmax over the chosen logits, the clamped SwiGLU at GptOssConfig's alpha; the names
// transformers gives the fused tensors.
TEST(Architecture, GptOssFields) {
  const Architecture a = load_architecture(config("gpt-oss-120b"));
  EXPECT_EQ(a.family, "gpt_oss");
  const TextModel& t = a.text;
  EXPECT_TRUE(t.attn.sinks && t.attn.qkv_bias && t.attn.o_bias);
  EXPECT_EQ(t.attn.sliding_window, 128);
  ASSERT_EQ(t.layer_kinds.size(), 36u);
  for (int64_t l = 0; l < 36; ++l) {
    EXPECT_EQ(t.layer_kind(l),
              l % 2 == 0 ? TextModel::LayerKind::kSliding : TextModel::LayerKind::kFull)
        << l;
  }
  EXPECT_EQ(t.rope_theta, 150000);
  EXPECT_EQ(t.rope_scaling.type, "yarn");
  EXPECT_EQ(t.rope_scaling_json["truncate"], false);
  const Moe& m = t.moe;
  EXPECT_EQ(m.num_experts, 128);
  EXPECT_EQ(m.experts_per_token, 4);
  EXPECT_EQ(m.expert_intermediate_size, 2880);
  EXPECT_TRUE(m.norm_topk_prob && m.router_bias && m.fused_experts);
  EXPECT_DOUBLE_EQ(m.swiglu_alpha, 1.702);  // not in the config: GptOssConfig's
  EXPECT_DOUBLE_EQ(m.swiglu_limit, 7.0);
  const Inventory inv =
      build_inventory(a, {.dtype = std::nullopt, .quantized = false, .include_mtp = false});
  const auto shape = [&](const std::string& name) {
    const WeightInfo* w = inv.find(name);
    return w != nullptr ? w->shape : std::vector<int64_t>{};
  };
  EXPECT_EQ(shape("model.layers.0.self_attn.sinks"), (std::vector<int64_t>{64}));
  EXPECT_EQ(shape("model.layers.0.mlp.router.weight"), (std::vector<int64_t>{128, 2880}));
  EXPECT_EQ(shape("model.layers.0.mlp.router.bias"), (std::vector<int64_t>{128}));
  EXPECT_EQ(shape("model.layers.0.mlp.experts.gate_up_proj"),
            (std::vector<int64_t>{128, 2880, 5760}));
  EXPECT_EQ(shape("model.layers.0.mlp.experts.gate_up_proj_bias"),
            (std::vector<int64_t>{128, 5760}));
  EXPECT_EQ(shape("model.layers.0.mlp.experts.down_proj"), (std::vector<int64_t>{128, 2880, 2880}));
  EXPECT_EQ(shape("model.layers.0.mlp.experts.down_proj_bias"), (std::vector<int64_t>{128, 2880}));
  // As released (quantization_config mxfp4): the experts' weights as [E, out, in / 32, 16] bytes
  // of E2M1 pairs and [E, out, in / 32] E8M0 scales, the same parameters counted.
  const Inventory released =
      build_inventory(a, {.dtype = std::nullopt, .quantized = true, .include_mtp = false});
  const WeightInfo* blocks = released.find("model.layers.0.mlp.experts.gate_up_proj_blocks");
  ASSERT_NE(blocks, nullptr);
  EXPECT_EQ(blocks->shape, (std::vector<int64_t>{128, 5760, 90, 16}));
  EXPECT_EQ(blocks->dtype, tensor::DType::kU8);
  const WeightInfo* scales = released.find("model.layers.0.mlp.experts.down_proj_scales");
  ASSERT_NE(scales, nullptr);
  EXPECT_EQ(scales->shape, (std::vector<int64_t>{128, 2880, 90}));
  EXPECT_EQ(scales->role, WeightRole::kQuantScale);
  EXPECT_EQ(released.find("model.layers.0.mlp.experts.gate_up_proj"), nullptr);
  EXPECT_EQ(released.counts.total, inv.counts.total);
  EXPECT_EQ(released.counts.active, inv.counts.active);
  // Neither rope_scaling nor rope_parameters: GptOssConfig's default YaRN (factor 32 over 4096).
  std::ifstream in(config("gpt-oss-120b"));
  nlohmann::json c = nlohmann::json::parse(in);
  c.erase("rope_scaling");
  c.erase("layer_types");
  const TextModel d = parse_architecture(c, "config.json").text;
  EXPECT_EQ(d.rope_scaling.type, "yarn");
  EXPECT_EQ(d.rope_scaling.factor, 32);
  EXPECT_EQ(d.rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_EQ(d.layer_kind(0), TextModel::LayerKind::kSliding);
  EXPECT_EQ(d.layer_kind(1), TextModel::LayerKind::kFull);
  // GptOssExperts gates by its clamped SwiGLU whatever hidden_act says.
  c["hidden_act"] = "gelu";
  const ModelOps ops = model_ops(parse_architecture(c, "config.json"), tensor::DType::kBF16);
  ASSERT_NE(ops.find("moe_experts"), nullptr);
  EXPECT_EQ(ops.find("moe_experts")->attrs["activation"], "clamped_swiglu");
  c["swiglu_limit"] = 0;
  EXPECT_THROW(parse_architecture(c, "config.json"), InputError);
}

// Gemma 3 1B (a transformers 4 config): every 6th layer full, the others a 512-token window with
// their own RoPE base; query_pre_attn_scalar's scale; (1 + w) norms, four per layer; √D embedding.
TEST(Architecture, Gemma3TextFields) {
  const Architecture a = load_architecture(config("gemma-3-1b-it"));
  EXPECT_EQ(a.family, "gemma3_text");
  EXPECT_EQ(a.architecture, "Gemma3ForCausalLM");
  const TextModel& t = a.text;
  EXPECT_EQ(t.attn.head_dim, 256);
  EXPECT_EQ(t.attn.sliding_window, 512);
  ASSERT_EQ(t.layer_kinds.size(), 26u);
  for (int64_t l = 0; l < 26; ++l) {
    EXPECT_EQ(t.layer_kind(l),
              (l + 1) % 6 == 0 ? TextModel::LayerKind::kFull : TextModel::LayerKind::kSliding)
        << l;
  }
  EXPECT_EQ(t.rope_theta, 1e6);
  EXPECT_EQ(t.local_rope_theta, 1e4);
  EXPECT_DOUBLE_EQ(t.attn.scale, 1.0 / 16);
  EXPECT_TRUE(t.attn.qk_norm);
  EXPECT_TRUE(t.tie_word_embeddings);
  EXPECT_TRUE(t.embed_scaled && t.sandwich_norms);
  EXPECT_EQ(t.norm_offset, 1);
  EXPECT_EQ(t.hidden_act, "gelu_pytorch_tanh");
  const Inventory inv = build_inventory(a);
  int64_t norms = 0;
  for (const WeightInfo& w : inv.weights)
    norms += w.layer == 0 && w.name.ends_with("layernorm.weight");
  EXPECT_EQ(norms, 4);

  // transformers 5 nests the bases by layer type; a scaling there applies to its layers only.
  std::ifstream in(config("gemma-3-1b-it"));
  nlohmann::json c = nlohmann::json::parse(in);
  for (const char* k :
       {"rope_theta", "rope_local_base_freq", "rope_scaling", "sliding_window_pattern"})
    c.erase(k);
  c["rope_parameters"] = {
      {"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 5e5}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 2e4}}}};
  const TextModel n = parse_architecture(c, "config.json").text;
  EXPECT_EQ(n.rope_theta, 5e5);
  EXPECT_EQ(n.rope_scaling.type, "linear");
  EXPECT_EQ(n.local_rope_theta, 2e4);
  EXPECT_TRUE(n.local_rope_scaling_json.is_null());
  // Neither layer_types nor a pattern: Gemma3TextConfig's pattern of 6; nor an activation: its
  // gelu_pytorch_tanh.
  c.erase("hidden_activation");
  EXPECT_EQ(parse_architecture(c, "config.json").text.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(n.layer_kind(5), TextModel::LayerKind::kFull);
  EXPECT_EQ(n.layer_kind(4), TextModel::LayerKind::kSliding);

  // What the blocks cannot run is refused at its field.
  c["final_logit_softcapping"] = 30.0;
  try {
    parse_architecture(c, "config.json");
    FAIL() << "softcapping accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("config.json: final_logit_softcapping"), std::string::npos)
        << e.what();
  }
  c.erase("final_logit_softcapping");
  c["hidden_activation"] = "relu2";
  EXPECT_THROW(parse_architecture(c, "config.json"), InputError);
}

// Mistral-7B-v0.1 slides a 4096-token window on every layer; v0.3's null window is full attention.
TEST(Architecture, MistralFields) {
  const Architecture a = load_architecture(config("mistral-7b-v0.1"));
  EXPECT_EQ(a.family, "mistral");
  EXPECT_EQ(a.text.attn.sliding_window, 4096);
  ASSERT_EQ(a.text.layer_kinds.size(), 32u);
  for (int64_t l = 0; l < 32; ++l)
    EXPECT_EQ(a.text.layer_kind(l), TextModel::LayerKind::kSliding) << l;
  const Architecture b = load_architecture(config("mistral-7b-instruct-v0.3"));
  EXPECT_EQ(b.text.attn.sliding_window, 0);
  EXPECT_TRUE(b.text.layer_kinds.empty());
  EXPECT_EQ(b.text.layer_kind(0), TextModel::LayerKind::kFull);
}

// Qwen1.5-MoE: one shared expert (5632 wide, not a multiple of the experts' count) behind a
// sigmoid gate, softmax routing left unnormalized, q/k/v biases; its tensors under Qwen2-MoE's
// names.
TEST(Architecture, Qwen2MoeFields) {
  const Architecture a = load_architecture(config("qwen1.5-moe-a2.7b"));
  EXPECT_EQ(a.family, "qwen2_moe");
  EXPECT_EQ(a.text.moe.num_experts, 60);
  EXPECT_EQ(a.text.moe.shared_inter(), 5632);
  EXPECT_TRUE(a.text.moe.shared_expert_gate);
  EXPECT_FALSE(a.text.moe.norm_topk_prob);
  EXPECT_TRUE(a.text.attn.qkv_bias);
  EXPECT_EQ(a.text.attn.sliding_window, 0);  // use_sliding_window false
  const Inventory inv = build_inventory(a);
  const WeightInfo* gate = inv.find(3, TensorRole::kSharedExpertGate);
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->name, "model.layers.3.mlp.shared_expert_gate.weight");
  EXPECT_EQ(gate->shape, (std::vector<int64_t>{1, 2048}));
  EXPECT_EQ(inv.find(3, TensorRole::kSharedUp)->name,
            "model.layers.3.mlp.shared_expert.up_proj.weight");
  EXPECT_EQ(inv.find(3, TensorRole::kExpertDown, TensorPiece::kWeight, 59)->name,
            "model.layers.3.mlp.experts.59.down_proj.weight");
  EXPECT_EQ(inv.find(0, TensorRole::kAttnK, TensorPiece::kBias)->name,
            "model.layers.0.self_attn.k_proj.bias");
  // use_sliding_window (set by no released model): transformers 4's rule, layers from
  // max_window_layers (21) on slide; transformers 5's layer_types as written.
  std::ifstream in(config("qwen1.5-moe-a2.7b"));
  nlohmann::json c = nlohmann::json::parse(in);
  c["use_sliding_window"] = true;
  Architecture s = parse_architecture(c, "config.json");
  EXPECT_EQ(s.text.attn.sliding_window, 32768);
  EXPECT_EQ(s.text.layer_kind(20), TextModel::LayerKind::kFull);
  EXPECT_EQ(s.text.layer_kind(21), TextModel::LayerKind::kSliding);
  c["layer_types"] = nlohmann::json::array();
  for (int l = 0; l < 24; ++l)
    c["layer_types"].push_back(l == 0 ? "sliding_attention" : "full_attention");
  s = parse_architecture(c, "config.json");
  EXPECT_EQ(s.text.layer_kind(0), TextModel::LayerKind::kSliding);
  EXPECT_EQ(s.text.layer_kind(21), TextModel::LayerKind::kFull);
}

// GLM-4.5: GQA with q/k/v biases and QK-norm, half of head_dim rotary, DeepSeek-V3's routing
// over 160 experts, 3 dense layers, one MTP layer in the checkpoint (counted apart).
TEST(Architecture, Glm4MoeFields) {
  const Architecture a = load_architecture(config("glm-4.5"));
  EXPECT_EQ(a.family, "glm4_moe");
  EXPECT_FALSE(a.text.attn.mla);
  EXPECT_EQ(a.text.attn.head_dim, 128);
  EXPECT_EQ(a.text.attn.rotary_dim, 64);
  EXPECT_TRUE(a.text.attn.qkv_bias);
  EXPECT_FALSE(a.text.attn.o_bias);
  EXPECT_TRUE(a.text.attn.qk_norm);
  EXPECT_EQ(a.text.moe.scoring, "sigmoid");
  EXPECT_TRUE(a.text.moe.correction_bias);
  EXPECT_EQ(a.text.moe.routed_scaling_factor, 2.5);
  EXPECT_FALSE(a.text.is_moe_layer(2));
  EXPECT_TRUE(a.text.is_moe_layer(3));
  EXPECT_EQ(a.text.num_nextn_predict_layers, 1);
  EXPECT_GT(counts_of("glm-4.5").mtp, 0);
  EXPECT_FALSE(load_architecture(config("glm-4.5-air")).text.attn.qk_norm);
  // transformers 5 moves partial_rotary_factor into rope_parameters.
  std::ifstream in(config("glm-4.5"));
  nlohmann::json c = nlohmann::json::parse(in);
  c.erase("partial_rotary_factor");
  c["rope_parameters"] = {
      {"rope_type", "default"}, {"rope_theta", 1e6}, {"partial_rotary_factor", 0.25}};
  EXPECT_EQ(parse_architecture(c, "config.json").text.attn.rotary_dim, 32);
}

// The inventory of `a` is the checkpoint transformers wrote in `dir`, tensor for tensor (names
// and shapes); returns its parameter count.
int64_t inventory_of_checkpoint(const Architecture& a, const std::string& dir) {
  const Inventory inv = build_inventory(a);
  const io::SafetensorsFile ckpt = io::SafetensorsFile::open(dir + "/model.safetensors");
  std::map<std::string, tensor::Shape> want;
  for (const io::TensorEntry& e : ckpt.entries()) want[e.name] = e.shape;
  std::map<std::string, tensor::Shape> got;
  for (const WeightInfo& w : inv.weights)
    got[w.name] = tensor::Shape(w.shape.begin(), w.shape.end());
  EXPECT_EQ(got, want);
  return inv.counts.total;
}

// GLM-4.7-Flash (glm4_moe_lite): DeepSeek-V3's MLA over GLM-4.5's routing, the dense layers
// from transformers 5's mlp_layer_types. The tiny checkpoint transformers wrote
// (gen_tiny_hf_models.py) is the inventory, tensor for tensor, and counts as its num_parameters();
// transformers 5's default config (GLM-4.7-Flash's sizes) as the counts file says.
TEST(Architecture, Glm4MoeLiteFields) {
  const std::string dir = std::string(H0_SOURCE_DIR) + "/tests/data/models/tiny-glm4-moe-lite";
  const Architecture a = load_architecture(dir);
  EXPECT_EQ(a.family, "glm4_moe_lite");
  EXPECT_EQ(a.architecture, "Glm4MoeLiteForCausalLM");
  const Attention& at = a.text.attn;
  EXPECT_TRUE(at.mla);
  EXPECT_EQ(at.num_heads, 4);
  EXPECT_EQ(at.q_lora_rank, 32);
  EXPECT_EQ(at.kv_lora_rank, 16);
  EXPECT_EQ(at.qk_nope_head_dim, 16);
  EXPECT_EQ(at.qk_rope_head_dim, 8);
  EXPECT_EQ(at.head_dim, 8);  // Glm4MoeLiteConfig maps head_dim to qk_rope_head_dim
  EXPECT_EQ(at.qk_head_dim(), 24);
  EXPECT_EQ(at.v_head_dim, 16);
  EXPECT_FALSE(at.qkv_bias);
  const Moe& m = a.text.moe;
  EXPECT_EQ(m.num_experts, 8);
  EXPECT_EQ(m.experts_per_token, 2);
  EXPECT_EQ(m.expert_intermediate_size, 32);
  EXPECT_EQ(m.shared_inter(), 32);
  EXPECT_EQ(m.n_group, 2);
  EXPECT_EQ(m.topk_group, 1);
  EXPECT_EQ(m.scoring, "sigmoid");
  EXPECT_TRUE(m.correction_bias);
  EXPECT_TRUE(m.norm_topk_prob);
  EXPECT_DOUBLE_EQ(m.routed_scaling_factor, 1.8);
  EXPECT_DOUBLE_EQ(a.text.rms_norm_eps, 1e-5);
  EXPECT_FALSE(a.text.is_moe_layer(0));  // mlp_layer_types [dense, sparse, sparse]
  EXPECT_TRUE(a.text.is_moe_layer(1));
  EXPECT_TRUE(a.text.is_moe_layer(2));
  EXPECT_EQ(inventory_of_checkpoint(a, dir), 306256);  // transformers' num_parameters()

  // transformers 5's Glm4MoeLiteConfig(): 47 layers, the first dense (no mlp_layer_types needed).
  const std::string tf5 = config("transformers5/glm4_moe_lite");
  const Architecture d = load_architecture(tf5);
  EXPECT_EQ(d.text.num_layers, 47);
  EXPECT_EQ(d.text.attn.q_lora_rank, 768);
  EXPECT_EQ(d.text.attn.kv_lora_rank, 512);
  EXPECT_EQ(d.text.attn.qk_head_dim(), 256);
  EXPECT_EQ(d.text.attn.v_head_dim, 256);
  EXPECT_EQ(d.text.moe.num_experts, 64);
  EXPECT_EQ(d.text.moe.experts_per_token, 4);
  EXPECT_EQ(d.text.moe.shared_inter(), 1536);
  EXPECT_DOUBLE_EQ(d.text.moe.routed_scaling_factor, 1.8);
  EXPECT_FALSE(d.text.is_moe_layer(0));
  EXPECT_TRUE(d.text.is_moe_layer(1));
  EXPECT_TRUE(d.text.is_moe_layer(46));
  EXPECT_EQ(build_inventory(d).counts.total, 29943390976);  // transformers' num_parameters()
  nlohmann::json c = nlohmann::json::parse(std::ifstream(tf5));
  c.erase("mlp_layer_types");  // Glm4MoeLiteConfig's default: the first layer dense
  const Architecture e = parse_architecture(c, "config.json");
  EXPECT_FALSE(e.text.is_moe_layer(0));
  EXPECT_TRUE(e.text.is_moe_layer(1));
  EXPECT_EQ(build_inventory(e).counts.total, 29943390976);
  // attention_bias: transformers' DeepseekV3Attention biases q_a_proj, kv_a_proj_with_mqa and
  // o_proj (not q_b_proj, kv_b_proj): num_parameters() of Glm4MoeLiteConfig(attention_bias=True).
  c["attention_bias"] = true;
  EXPECT_EQ(build_inventory(parse_architecture(c, "config.json")).counts.total, 29943550400);
  c["attention_bias"] = false;
  c["rope_interleave"] = false;  // the half-split rotary layout: not modelled, refused
  try {
    parse_architecture(c, "config.json");
    FAIL() << "rope_interleave false was accepted";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("config.json: rope_interleave"), std::string::npos)
        << err.what();
  }
}

// MiniMax-M2 (minimax_m2): the family that brought a block (blocks/per_layer_qk_norm.cc, whose
// config field the block reads itself). The tiny checkpoint transformers wrote is the inventory,
// tensor for tensor, and counts as its num_parameters(); transformers 5's default config as the
// counts file says.
TEST(Architecture, MiniMaxM2Fields) {
  const std::string dir = std::string(H0_SOURCE_DIR) + "/tests/data/models/tiny-minimax-m2";
  const Architecture a = load_architecture(dir);
  EXPECT_EQ(a.family, "minimax_m2");
  const Attention& at = a.text.attn;
  EXPECT_EQ(at.head_dim, 32);
  EXPECT_EQ(at.rotary_dim, 16);  // rotary_dim 16 and partial_rotary_factor 0.5 agree
  EXPECT_FALSE(at.qk_norm);      // not Qwen3's per-head norm: the block's
  EXPECT_DOUBLE_EQ(a.text.rope_theta, 5e6);
  for (int64_t l = 0; l < 2; ++l) {
    EXPECT_STREQ(block_of(a.text, l, BlockSlot::kMixer).name(), "per_layer_qk_norm");
    EXPECT_STREQ(block_of(a.text, l, BlockSlot::kFeedForward).name(), "routed_experts");
  }
  const Moe& m = a.text.moe;
  EXPECT_EQ(m.num_experts, 4);
  EXPECT_EQ(m.experts_per_token, 2);
  EXPECT_EQ(m.expert_intermediate_size, 32);
  EXPECT_EQ(m.scoring, "sigmoid");
  EXPECT_TRUE(m.correction_bias);
  EXPECT_TRUE(m.norm_topk_prob);
  EXPECT_EQ(inventory_of_checkpoint(a, dir), 230592);  // transformers' num_parameters()

  // A released config's legacy field alone (no partial_rotary_factor) says the same.
  nlohmann::json c = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  c["rope_parameters"].erase("partial_rotary_factor");
  EXPECT_EQ(parse_architecture(c, "config.json").text.attn.rotary_dim, 16);
  c["use_qk_norm"] = false;  // plain full attention then
  EXPECT_STREQ(block_of(parse_architecture(c, "config.json").text, 0, BlockSlot::kMixer).name(),
               "full_attention");
  c["use_qk_norm"] = true;
  c["qk_norm_type"] = "per_head";  // the block reads its own field, and refuses what it is not
  try {
    parse_architecture(c, "config.json");
    FAIL() << "qk_norm_type per_head was accepted";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("config.json: qk_norm_type"), std::string::npos)
        << err.what();
  }

  // transformers 5's MiniMaxM2Config(): 62 layers of 256 experts, top-8.
  const Architecture d = load_architecture(config("transformers5/minimax_m2"));
  EXPECT_EQ(d.text.num_layers, 62);
  EXPECT_EQ(d.text.attn.rotary_dim, 128);  // no rotary_dim: all of head_dim
  EXPECT_EQ(d.text.moe.num_experts, 256);
  EXPECT_EQ(build_inventory(d).counts.total, 228689748992);  // transformers' num_parameters()
}

TEST(Architecture, DeepseekV3Fields) {
  const Architecture a = load_architecture(config("deepseek-v3"));
  EXPECT_EQ(a.family, "deepseek_v3");
  EXPECT_TRUE(a.text.attn.mla);
  EXPECT_EQ(a.text.attn.q_lora_rank, 1536);
  EXPECT_EQ(a.text.attn.kv_lora_rank, 512);
  EXPECT_EQ(a.text.attn.qk_head_dim(), 192);
  EXPECT_EQ(a.text.moe.num_experts, 256);
  EXPECT_EQ(a.text.moe.n_group, 8);
  EXPECT_EQ(a.text.moe.topk_group, 4);
  EXPECT_EQ(a.text.moe.scoring, "sigmoid");
  EXPECT_FALSE(a.text.is_moe_layer(2));
  EXPECT_TRUE(a.text.is_moe_layer(3));
  EXPECT_EQ(a.text.rope_scaling.type, "yarn");
  EXPECT_EQ(a.text.rope_scaling.factor, 40);
  EXPECT_EQ(a.text.num_nextn_predict_layers, 1);
  EXPECT_EQ(a.quantization.method, "fp8");
}

// weight_block_size: the blocks of the fp8 scales; transformers' FineGrainedFP8Config default
// (128 x 128) when left out; anything but two positive integers refused at the field.
TEST(Architecture, Fp8BlockSize) {
  std::ifstream in(config("deepseek-v3"));
  nlohmann::json c = nlohmann::json::parse(in);
  c["quantization_config"] = {{"quant_method", "fp8"}, {"weight_block_size", {64, 32}}};
  Architecture a = parse_architecture(c, "config.json");
  EXPECT_EQ(a.quantization.block_rows, 64);
  EXPECT_EQ(a.quantization.block_cols, 32);
  c["quantization_config"].erase("weight_block_size");
  a = parse_architecture(c, "config.json");
  EXPECT_EQ(a.quantization.block_rows, 128);
  EXPECT_EQ(a.quantization.block_cols, 128);
  for (const char* bad : {"[0, 128]", "[128]", "[128, 128, 1]"}) {
    c["quantization_config"]["weight_block_size"] = nlohmann::json::parse(bad);
    try {
      parse_architecture(c, "config.json");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                "config.json: quantization_config: weight_block_size: must be two positive "
                "integers [rows, cols], e.g. [128, 128]")
          << bad;
    }
  }
}

TEST(Architecture, DeepseekV3MtpCountedSeparately) {
  const Inventory inv = build_inventory(load_architecture(config("deepseek-v3")));
  // README_WEIGHTS: the MTP module is 11.5B unique parameters plus copies of the 0.9B embedding and
  // head.
  EXPECT_NEAR(double(inv.counts.mtp), 11.5e9, 0.05 * 11.5e9);
  EXPECT_EQ(inv.counts.mtp_shared, 2 * 129280LL * 7168);
  // README_WEIGHTS: 36.6B activated, which is ours less the embedding (a lookup, not compute).
  EXPECT_NEAR(double(inv.counts.active - 129280LL * 7168), 36.6e9, 0.005 * 36.6e9);
  const WeightInfo* eh = inv.find("model.layers.61.eh_proj.weight");
  ASSERT_NE(eh, nullptr);
  EXPECT_TRUE(eh->mtp);
  // The checkpoint stores linear weights in fp8 with 128x128 block scales.
  const WeightInfo* q = inv.find("model.layers.0.self_attn.q_b_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, tensor::DType::kF8E4M3);
  const WeightInfo* s = inv.find("model.layers.0.self_attn.q_b_proj.weight_scale_inv");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->shape, (std::vector<int64_t>{192, 12}));
  EXPECT_EQ(inv.find("model.embed_tokens.weight")->dtype, tensor::DType::kBF16);
}

TEST(Architecture, Llama3RopeAndGqa) {
  const Architecture a = load_architecture(config("llama-3.1-70b"));
  EXPECT_EQ(a.family, "llama");
  EXPECT_EQ(a.text.attn.num_kv_heads, 8);
  EXPECT_EQ(a.text.attn.head_dim, 128);
  EXPECT_EQ(a.text.rope_scaling.type, "llama3");
  EXPECT_EQ(a.text.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(a.text.rope_theta, 500000);
}

TEST(Architecture, Qwen2HasQkvBiasQwen3HasQkNorm) {
  const Inventory q2 = build_inventory(load_architecture(config("qwen2.5-72b")));
  EXPECT_NE(q2.find("model.layers.0.self_attn.k_proj.bias"), nullptr);
  EXPECT_EQ(q2.find("model.layers.0.self_attn.o_proj.bias"), nullptr);
  const Inventory q3 = build_inventory(load_architecture(config("qwen3-8b")));
  EXPECT_EQ(q3.find("model.layers.0.self_attn.k_proj.bias"), nullptr);
  ASSERT_NE(q3.find("model.layers.0.self_attn.q_norm.weight"), nullptr);
  EXPECT_EQ(q3.find("model.layers.0.self_attn.q_norm.weight")->shape, std::vector<int64_t>{128});
}

TEST(Architecture, LlavaUsesLlamaDefaultsForItsTextConfig) {
  const Architecture a = load_architecture(config("llava-1.5-7b-hf"));
  EXPECT_EQ(a.family, "llava");
  ASSERT_TRUE(a.vision.has_value());
  EXPECT_EQ(a.text.hidden_size, 4096);  // LlamaConfig default: the config omits it
  EXPECT_EQ(a.text.vocab_size, 32064);
  EXPECT_EQ(a.vision->num_patches(), 576);
  EXPECT_EQ(a.vision->feature_layer, -2);
  const ParamCounts c = build_inventory(a).counts;
  // ~7.06B: Vicuna-7B (32064 vocab) + CLIP ViT-L/14-336 + projector.
  EXPECT_NEAR(double(c.total), 7.06e9, 0.005 * 7.06e9);
}

TEST(ArchitectureErrors, NameTheField) {
  auto message = [](const std::string& json) {
    try {
      parse_architecture(nlohmann::json::parse(json), "config.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})"),
            "config.json: intermediate_size: missing (an integer is required)");
  EXPECT_EQ(
      message(
          R"({"architectures": ["LlavaForConditionalGeneration"], "vision_config": {}, "text_config": {"hidden_size": "x"}})"),
      "config.json: text_config.hidden_size: must be an integer, got \"x\"");
  EXPECT_NE(message(R"({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"})")
                .find("unknown architecture ([\"GPT2LMHeadModel\"], model_type \"gpt2\"); known: "
                      "LlamaForCausalLM (llama)"),
            std::string::npos);
  EXPECT_EQ(
      message(
          R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "vocab_size": 8, "num_attention_heads": 2, "qk_nope_head_dim": 2, "qk_rope_head_dim": 2, "v_head_dim": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 4})"),
      "config.json: kv_lora_rank: missing (an integer is required)");
  EXPECT_EQ(
      message(
          R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 8, "num_hidden_layers": 1, "vocab_size": 8, "num_attention_heads": 4, "num_key_value_heads": 3})"),
      "config.json: num_key_value_heads: must be positive and divide num_attention_heads (4)");
  // Found by the config_json fuzz target (UBSan): zero divided the head width and the MoE layer
  // rule.
  EXPECT_EQ(
      message(
          R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 8, "num_hidden_layers": 1, "vocab_size": 8, "num_attention_heads": 0})"),
      "config.json: num_attention_heads: must be positive, got 0");
  for (const char* family : {"DeepseekV3ForCausalLM", "Qwen3MoeForCausalLM"}) {
    nlohmann::json c = nlohmann::json::parse(
        std::ifstream(std::string(H0_SOURCE_DIR) + "/tests/fuzz/corpus/config_json/" +
                      (family[0] == 'D' ? "deepseek-v3.json" : "qwen3-235b-a22b.json")));
    const char* key = family[0] == 'D' ? "moe_layer_freq" : "decoder_sparse_step";
    c[key] = 0;
    EXPECT_EQ(message(c.dump()), std::string("config.json: ") + key +
                                     ": 0 must be in 1 to 100000 (every n-th layer is MoE)");
  }
}

// Every family's default config as transformers 5 saves it (golden/tools/gen_tf5_configs.py):
// parsed — transformers 5 renames fields, e.g. Qwen3-MoE's num_experts to num_local_experts —
// and counted exactly as transformers' own num_parameters() of the same config.
TEST(Transformers5Configs, ParseAndCountAsTransformersDoes) {
  std::ifstream in(std::string(H0_SOURCE_DIR) + "/golden/models/transformers5-counts.json");
  const nlohmann::json golden = nlohmann::json::parse(in);
  ASSERT_EQ(golden["models"].size(), 19u);
  for (const auto& [type, want] : golden["models"].items()) {
    const Architecture a =
        load_architecture(std::string(H0_SOURCE_DIR) + "/" + want["config"].get<std::string>());
    EXPECT_EQ(build_inventory(a).counts.total, want["num_parameters"].get<int64_t>()) << type;
    EXPECT_EQ(a.architecture, want["architectures"].get<std::string>()) << type;
  }
}

// shared/reproducers/cfg_layers_2e31: a Llama config with 2^31 - 1 layers grew to GBs building
// its inventory; refused at the field instead.
TEST(Architecture, AnImplausibleLayerCountIsRefusedAtTheField) {
  nlohmann::json c = {{"architectures", {"LlamaForCausalLM"}},
                      {"hidden_size", 128},
                      {"intermediate_size", 256},
                      {"num_hidden_layers", 2147483647},
                      {"num_attention_heads", 4},
                      {"vocab_size", 1024}};
  try {
    parse_architecture(c, "config.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "config.json: num_hidden_layers: 2147483647 is not a plausible layer count (1 to 100000)");
  }
}

}  // namespace
}  // namespace h0::model

namespace h0::model {
namespace {

// Every weight of every modelled family has a role, and (layer, role, piece, expert, vision layer)
// names exactly one tensor: what the executor and the loader look weights up by (the vision
// tower's too, by vision layer: nothing is looked up by name).
TEST(Inventory, EveryDecoderWeightHasOneRole) {
  for (const char* name : {"llama-3.1-8b",
                           "qwen2.5-72b",
                           "qwen3-8b",
                           "qwen3-235b-a22b",
                           "mixtral-8x7b-v0.1",
                           "deepseek-v3",
                           "kimi-k2-instruct",
                           "llava-1.5-7b-hf",
                           "mistral-7b-v0.1",
                           "qwen1.5-moe-a2.7b",
                           "glm-4.5",
                           "gemma-3-1b-it",
                           "gpt-oss-120b",
                           "transformers5/qwen3_next",
                           "transformers5/qwen3_5_text",
                           "transformers5/qwen3_5_moe_text",
                           "transformers5/deepseek_v32",
                           "transformers5/glm4_moe_lite",
                           "transformers5/minimax_m2",
                           "qwen2.5-vl-7b-instruct"}) {
    SCOPED_TRACE(name);
    const Inventory inv = build_inventory(load_architecture(config(name)));
    std::set<std::tuple<int64_t, TensorRole, TensorPiece, int64_t, int64_t>> keys;
    for (const WeightInfo& w : inv.weights) {
      if (w.mtp) continue;
      EXPECT_NE(w.tensor, TensorRole::kOther) << w.name;
      // The vision tower's (LLaVA's CLIP) by vision layer, outside every decoder layer's keys.
      const bool vision = w.name.find("vision_tower.") != std::string::npos ||
                          w.name.find("multi_modal_projector.") != std::string::npos ||
                          w.name.rfind("visual.", 0) == 0;
      EXPECT_EQ(is_vision_role(w.tensor), vision) << w.name;
      EXPECT_TRUE(w.layer == -1 || !vision)
          << w.name;  // the pipeline's first stage holds the tower
      EXPECT_TRUE(keys.insert({w.layer, w.tensor, w.piece, w.expert, w.vision_layer}).second)
          << w.name << " shares its role";
      if (w.layer <= 1 && !vision) {  // find is O(n)
        EXPECT_EQ(inv.find(w.layer, w.tensor, w.piece, w.expert), &w) << w.name;
      }
    }
  }
}

}  // namespace
}  // namespace h0::model

namespace h0::model {
namespace {

// Qwen2.5-VL-7B-Instruct's released config (transformers 4 layout: the language model's fields at
// the top, rope_scaling {type: mrope}): counted exactly as transformers 5.24's num_parameters() on
// the meta device (8,292,166,656, of which the vision tower 676,550,144).
TEST(Qwen25Vl, TheReleasedConfigCountsAsTransformersDoes) {
  const Architecture a = load_architecture(config("qwen2.5-vl-7b-instruct"));
  EXPECT_TRUE(a.modelled);
  EXPECT_EQ(a.family, "qwen2_5_vl");
  EXPECT_EQ(a.text.mrope_section, (std::vector<int64_t>{16, 24, 24}));
  EXPECT_EQ(a.text.rope_theta, 1e6);
  EXPECT_TRUE(a.text.rope_scaling_json.is_null());  // "mrope" is default RoPE plus its sections
  ASSERT_TRUE(a.vision);
  EXPECT_EQ(a.vision->tower, "qwen2_5_vl");
  EXPECT_EQ(a.vision->fullatt_blocks, (std::vector<int64_t>{7, 15, 23, 31}));
  EXPECT_EQ(a.vision->image_token_index, 151655);
  const Inventory inv = build_inventory(a);
  EXPECT_EQ(inv.counts.total, 8292166656);
  EXPECT_EQ(inv.counts.vision, 676550144);
}

// The tiny Qwen2.5-VL transformers wrote (gen_tiny_hf_models.py; transformers 5 layout:
// text_config, rope_parameters): the inventory names every checkpoint tensor with its shape,
// nothing more.
TEST(Qwen25Vl, TheInventoryIsTheCheckpointTransformersWrote) {
  const std::string dir = std::string(H0_SOURCE_DIR) + "/tests/data/models/tiny-qwen2-5-vl";
  const Architecture a = load_architecture(dir);
  EXPECT_EQ(a.text.mrope_section, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(a.text.dtype, tensor::DType::kBF16);  // the top level's, not text_config's float32
  const io::SafetensorsFile ckpt = io::SafetensorsFile::open(dir + "/model.safetensors");
  std::map<std::string, tensor::Shape> want;
  for (const io::TensorEntry& e : ckpt.entries()) want[e.name] = e.shape;
  std::map<std::string, tensor::Shape> got;
  for (const WeightInfo& w : build_inventory(a).weights)
    got[w.name] = tensor::Shape(w.shape.begin(), w.shape.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(build_inventory(a).counts.total, 311200);  // transformers' num_parameters()
}

TEST(Qwen25Vl, MalformedVisionFieldsAreNamed) {
  nlohmann::json c = nlohmann::json::parse(std::ifstream(config("qwen2.5-vl-7b-instruct")));
  c["vision_config"]["out_hidden_size"] = 4096;
  EXPECT_THROW(parse_architecture(c, "config.json"), InputError);
  c["vision_config"]["out_hidden_size"] = 3584;
  c["vision_config"]["fullatt_block_indexes"] = {7, 32};
  try {
    parse_architecture(c, "config.json");
    FAIL() << "a block index past the depth was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config.json: vision_config.fullatt_block_indexes: 32 is not a block (depth 32)");
  }
  c["vision_config"]["fullatt_block_indexes"] = {7};
  c["rope_scaling"]["mrope_section"] = {16, 24, 16};
  EXPECT_THROW(parse_architecture(c, "config.json"), InputError);
}

}  // namespace
}  // namespace h0::model
