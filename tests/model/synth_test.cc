// The tiny synthetic models against transformers (golden/models/<name>.json, written by
// golden/tools/gen_models.py): parameter counts, tensor names and shapes, and the bytes of a
// synthesized checkpoint as HF loads it.
#include "model/weights/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"
#include "base/sha256.h"
#include "io/safetensors_writer.h"
#include "io/sharded_checkpoint.h"
#include "model/weights/inventory.h"
#include "model/weights/weight_loader.h"
#include "ops/op_list.h"
#include "test_util.h"

namespace h0::model {
namespace {

nlohmann::json golden(const std::string& name) {
  std::ifstream in(h0::test::golden_path("models/" + name + ".json"));
  EXPECT_TRUE(in) << name;
  return nlohmann::json::parse(in);
}

std::string model_dir(const std::string& name) {
  return h0::test::source_path("configs/models/" + name);
}

class TinyModel : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyModel, ParameterCountEqualsHf) {
  const Inventory inv = build_inventory(load_architecture(model_dir(GetParam())));
  EXPECT_EQ(inv.counts.total, golden(GetParam())["num_parameters"].get<int64_t>());
}

TEST_P(TinyModel, InventoryNamesAreHfCheckpointNames) {
  const nlohmann::json g = golden(GetParam());
  const Inventory inv = build_inventory(load_architecture(model_dir(GetParam())));
  std::set<std::string> ours, ours_mtp, hf, hf_unused;
  for (const WeightInfo& w : inv.weights) (w.mtp ? ours_mtp : ours).insert(w.name);
  for (const auto& [name, sha] : g["synth"]["tensor_sha256"].items()) hf.insert(name);
  for (const auto& name : g["unused_by_hf"]) hf_unused.insert(name.get<std::string>());
  EXPECT_EQ(ours, hf);
  EXPECT_EQ(ours_mtp, hf_unused);  // only DeepSeek-V3's multi-token-prediction layer
}

TEST_P(TinyModel, SynthesizedBytesAreWhatHfLoads) {
  const nlohmann::json g = golden(GetParam());
  h0::test::TempDir dir;
  synthesize_checkpoint(model_dir(GetParam()), dir.path(),
                        {g["synth"]["seed"].get<uint64_t>(), g["synth"]["shards"].get<int>()});
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(dir.path());
  const Inventory inv =
      build_inventory(load_architecture(dir.path()), {.dtype = std::nullopt, .quantized = false});
  verify_checkpoint(ckpt, inv);
  EXPECT_EQ(ckpt.num_shards(), 2u);
  int checked = 0;
  for (const auto& [name, sha] : g["synth"]["tensor_sha256"].items()) {
    const tensor::Tensor t = ckpt.get(name);
    EXPECT_EQ(base::sha256_hex(t.data(), t.nbytes()), sha.get<std::string>()) << name;
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

INSTANTIATE_TEST_SUITE_P(Tiny, TinyModel,
                         ::testing::Values("tiny-llama", "tiny-qwen3-moe", "tiny-deepseek-v3",
                                           "tiny-llava"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Synth, DeterministicToTheByteAndSeeded) {
  h0::test::TempDir a, b, c;
  synthesize_checkpoint(model_dir("tiny-llama"), a.path(), {7, 3});
  synthesize_checkpoint(model_dir("tiny-llama"), b.path(), {7, 3});
  synthesize_checkpoint(model_dir("tiny-llama"), c.path(), {8, 3});
  for (const char* f : {"model-00001-of-00003.safetensors", "model-00003-of-00003.safetensors",
                        "model.safetensors.index.json"}) {
    EXPECT_EQ(file_bytes(a.file(f)), file_bytes(b.file(f))) << f;
  }
  EXPECT_NE(file_bytes(a.file("model-00001-of-00003.safetensors")),
            file_bytes(c.file("model-00001-of-00003.safetensors")));
}

TEST(Synth, ShardsHaveAboutEqualBytes) {
  h0::test::TempDir dir;
  const SynthReport r = synthesize_checkpoint(model_dir("tiny-qwen3-moe"), dir.path(), {0, 4});
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(dir.path());
  ASSERT_EQ(ckpt.num_shards(), 4u);
  for (size_t s = 0; s < 4; ++s) {
    int64_t bytes = 0;
    for (const auto& e : ckpt.shard(s).entries()) bytes += int64_t(e.nbytes());
    EXPECT_GT(bytes, r.bytes / 8) << "shard " << s;
    EXPECT_LT(bytes, r.bytes / 2) << "shard " << s;
  }
}

// A GPT-OSS config with quantization_config mxfp4 synthesizes the released layout (blocks of
// E2M1 codes and E8M0 scales, drawn directly): it passes the loader's checks, its experts widen to
// the spread of a float matrix (RMS about 1/sqrt(in)), and the scales differ from block to block.
TEST(Synth, Mxfp4ExpertsAreBlocksAndScalesOfAFloatMatrixSpread) {
  h0::test::TempDir dir;
  synthesize_checkpoint(h0::test::source_path("tests/data/models/tiny-gpt-oss-mxfp4"), dir.path(),
                        {3, 1});
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(dir.path());
  verify_checkpoint(ckpt, build_inventory(load_architecture(dir.path())));
  const ops::OpDef& op = ops::dequantize_mxfp4_op();
  const ops::Json attrs = ops::validate_attrs(op, {{"out_dtype", "f32"}});
  int checked = 0;
  for (const char* name :
       {"model.layers.0.mlp.experts.gate_up_proj", "model.layers.1.mlp.experts.down_proj"}) {
    SCOPED_TRACE(name);
    const tensor::Tensor blocks = ckpt.get(std::string(name) + "_blocks");
    const tensor::Tensor scales = ckpt.get(std::string(name) + "_scales");
    ASSERT_EQ(blocks.dtype(), tensor::DType::kU8);
    const auto out = ops::infer_outputs(
        op, {{blocks.dtype(), blocks.shape(), true}, {scales.dtype(), scales.shape(), true}},
        attrs);
    tensor::Tensor x = tensor::Tensor::empty(out[0].dtype, out[0].shape);
    op.reference({&blocks, &scales}, {&x}, attrs);
    double squares = 0;
    for (int64_t i = 0; i < x.numel(); ++i) squares += x.at(i) * x.at(i);
    const double rms = std::sqrt(squares / double(x.numel()));
    const double in = double(blocks.shape()[2] * 32);
    EXPECT_GT(rms * std::sqrt(in), 0.5);
    EXPECT_LT(rms * std::sqrt(in), 2.0);
    std::set<uint8_t> exponents(scales.data_as<uint8_t>(),
                                scales.data_as<uint8_t>() + scales.numel());
    EXPECT_EQ(exponents.size(), 3u);
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST(VerifyCheckpoint, ListsMissingUnexpectedAndMisshapenTensors) {
  h0::test::TempDir dir;
  const Inventory inv = build_inventory(load_architecture(model_dir("tiny-llama")));
  std::vector<io::NamedTensor> tensors;
  for (const WeightInfo& w : inv.weights) {
    if (w.name == "model.norm.weight") continue;  // missing
    tensor::Shape shape = w.shape;
    if (w.name == "lm_head.weight") shape[0] -= 1;  // misshapen
    tensors.push_back({w.name, tensor::Tensor::zeros(w.dtype, shape)});
  }
  tensors.push_back(
      {"model.layers.9.extra.weight", tensor::Tensor::zeros(tensor::DType::kBF16, {2})});
  io::write_safetensors(dir.file("model.safetensors"), tensors);
  try {
    verify_checkpoint(io::ShardedCheckpoint::open(dir.path()), inv);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("missing (1): model.norm.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("unexpected (1): model.layers.9.extra.weight"), std::string::npos) << m;
    EXPECT_NE(
        m.find("wrong shape or dtype (1): lm_head.weight: bf16 1023x128 (expected bf16 1024x128)"),
        std::string::npos)
        << m;
  }
}

}  // namespace
}  // namespace h0::model

namespace h0::model {
namespace {

// configs/models/tiny-deepseek-v3-fp8 (quantization_config fp8, 16 x 16 blocks): the synthesized
// checkpoint is, byte for byte, tiny-deepseek-v3's (its bf16 original) with every projection
// quantized by torch (golden/tools/fp8_blocks.py, recorded by gen_fp8_models.py): F8_E4M3 weights
// and their F32 weight_scale_inv, the last blocks ragged.
TEST(TinyFp8Model, SynthesizedBytesAreTorchsBlockQuantizationOfTheOriginal) {
  const nlohmann::json g = golden("tiny-deepseek-v3-fp8");
  h0::test::TempDir dir;
  synthesize_checkpoint(model_dir("tiny-deepseek-v3-fp8"), dir.path(),
                        {g["synth"]["seed"].get<uint64_t>(), g["synth"]["shards"].get<int>()});
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(dir.path());
  verify_checkpoint(
      ckpt, build_inventory(load_architecture(dir.path())));  // fp8 + scales, as the config says
  int scales = 0, fp8 = 0;
  for (const auto& [name, sha] : g["synth"]["tensor_sha256"].items()) {
    const tensor::Tensor t = ckpt.get(name);
    EXPECT_EQ(base::sha256_hex(t.data(), t.nbytes()), sha.get<std::string>()) << name;
    scales += name.ends_with("_scale_inv");
    fp8 += t.dtype() == tensor::DType::kF8E4M3;
  }
  EXPECT_EQ(ckpt.names().size(), g["synth"]["tensor_sha256"].size());
  EXPECT_EQ(scales, g["quantized_projections"].get<int>());
  EXPECT_EQ(fp8, scales);
  EXPECT_GT(scales, 50);
}

}  // namespace
}  // namespace h0::model
