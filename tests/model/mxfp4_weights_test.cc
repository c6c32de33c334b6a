// GPT-OSS's experts as released, MXFP4 (tests/data/models/tiny-gpt-oss-mxfp4, written by
// golden/tools/gen_mxfp4_model.py; its goldens come from transformers running it): the format's
// bit layout by hand, and a broken MXFP4 checkpoint refused naming the tensor and the reason.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "base/error.h"
#include "io/safetensors_writer.h"
#include "io/sharded_checkpoint.h"
#include "model/exec/executor.h"
#include "ops/op_list.h"
#include "test_util.h"

namespace h0::model {
namespace {

namespace fs = std::filesystem;
using tensor::DType;
using tensor::Tensor;

// Two blocks: E8M0 128 (x2) and 126 (x1/2); bytes 0x21 (low nibble first: 0.5 then 1), 0xF8
// (-0 then -6), 0x7E (-4 then 6), the rest 0.
TEST(DequantizeMxfp4, LowNibbleFirstTimesTheE8M0Scale) {
  Tensor blocks = Tensor::zeros(DType::kU8, {2, 16}), scales = Tensor::zeros(DType::kU8, {2});
  auto* b = blocks.mutable_data_as<uint8_t>();
  b[0] = 0x21;
  b[1] = 0xF8;
  b[16] = 0x7E;
  scales.mutable_data_as<uint8_t>()[0] = 128;
  scales.mutable_data_as<uint8_t>()[1] = 126;
  const ops::OpDef& op = ops::dequantize_mxfp4_op();
  const ops::Json attrs = ops::validate_attrs(op, {{"out_dtype", "f32"}});
  Tensor x = Tensor::empty(DType::kF32, {64});
  op.reference({&blocks, &scales}, {&x}, attrs);
  const float* v = x.data_as<float>();
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], 2.0f);
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_TRUE(std::signbit(v[2]));
  EXPECT_EQ(v[3], -12.0f);
  EXPECT_EQ(v[4], 0.0f);
  EXPECT_EQ(v[32], -2.0f);
  EXPECT_EQ(v[33], 3.0f);
  // The cpu kernel agrees bit for bit.
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  const backend::DeviceTensor bd = be->upload(blocks), sd = be->upload(scales);
  backend::DeviceTensor xd = be->allocate(DType::kF32, {64});
  be->run_op("dequantize_mxfp4", {&bd, &sd}, {&xd}, attrs.dump());
  const Tensor back = be->download(xd);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(std::memcmp(&v[i], back.data_as<float>() + i, 4), 0) << i;
}

// The reference's f32 output (computed in f32, GPT-OSS's experts widened every step) is its f64
// product rounded, for every byte and the extreme scales: 2^-127 (subnormal in f32) and 2^128
// (infinite in f32: ±0 stays ±0, the rest is ±inf).
TEST(DequantizeMxfp4, F32OutputIsTheF64ProductRounded) {
  const uint8_t kScales[] = {0, 1, 100, 127, 128, 200, 254, 255};
  const int64_t groups = 16 * 8;  // 256 byte values (16 groups of 16 bytes) under each scale
  Tensor blocks = Tensor::zeros(DType::kU8, {groups, 16}),
         scales = Tensor::zeros(DType::kU8, {groups});
  for (int64_t g = 0; g < groups; ++g) {
    scales.mutable_data_as<uint8_t>()[g] = kScales[g / 16];
    for (int64_t i = 0; i < 16; ++i)
      blocks.mutable_data_as<uint8_t>()[g * 16 + i] = static_cast<uint8_t>((g % 16) * 16 + i);
  }
  const ops::OpDef& op = ops::dequantize_mxfp4_op();
  Tensor x = Tensor::empty(DType::kF32, {groups * 32});
  op.reference({&blocks, &scales}, {&x}, ops::validate_attrs(op, {{"out_dtype", "f32"}}));
  static constexpr double kE2M1[16] = {0,    0.5,  1,  1.5,  2,  3,  4,  6,
                                       -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < 32; ++i) {
      const uint8_t b = blocks.data_as<uint8_t>()[g * 16 + i / 2];
      const double v = kE2M1[i % 2 ? b >> 4 : b & 0xF];
      const float want = static_cast<float>(v * std::ldexp(1.0, int(kScales[g / 16]) - 127));
      const float got = x.data_as<float>()[g * 32 + i];
      EXPECT_EQ(std::memcmp(&want, &got, 4), 0)
          << "group " << g << " element " << i << ": " << got << " for " << want;
    }
  }
}

// tiny-gpt-oss-mxfp4 with `edit` applied to its tensors (and its config's quantization_config
// kept or dropped), in `dir`.
void write_variant(const std::string& dir,
                   const std::function<void(std::vector<io::NamedTensor>&)>& edit,
                   bool keep_quantization_config = true) {
  const std::string src = h0::test::source_path("tests/data/models/tiny-gpt-oss-mxfp4");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    fs::copy_file(fs::path(src) / f, fs::path(dir) / f);
  }
  std::ifstream in(fs::path(src) / "config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  if (!keep_quantization_config) c.erase("quantization_config");
  std::ofstream(fs::path(dir) / "config.json") << c.dump(1);
  const auto ckpt = io::ShardedCheckpoint::open(src);
  std::vector<io::NamedTensor> tensors;
  for (const std::string& name : ckpt.names()) tensors.push_back({name, ckpt.get(name)});
  edit(tensors);
  io::write_safetensors((fs::path(dir) / "model.safetensors").string(), std::move(tensors));
}

std::string load_error(const std::string& dir) {
  const Architecture arch = load_architecture(dir);
  const auto ckpt = io::ShardedCheckpoint::open(dir);
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  try {
    Executor ex(arch, ckpt, *be, {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Mxfp4Checkpoint, TheReleasedLayoutLoads) {
  EXPECT_EQ(load_error(h0::test::source_path("tests/data/models/tiny-gpt-oss-mxfp4")), "");
}

TEST(Mxfp4Checkpoint, BrokenOnesAreRefusedNamingTheTensor) {
  const std::string gate_up = "model.layers.1.mlp.experts.gate_up_proj";
  {
    h0::test::TempDir dir;
    write_variant(dir.path(), [&](std::vector<io::NamedTensor>& t) {
      std::erase_if(t, [&](const io::NamedTensor& n) { return n.name == gate_up + "_scales"; });
    });
    const std::string e = load_error(dir.path());
    EXPECT_NE(e.find("'" + gate_up + "_blocks' has no '" + gate_up + "_scales'"), std::string::npos)
        << e;
  }
  {
    h0::test::TempDir dir;  // blocks flattened to 3-D: not [E, out, G, 16]
    write_variant(dir.path(), [&](std::vector<io::NamedTensor>& t) {
      for (io::NamedTensor& n : t) {
        if (n.name == gate_up + "_blocks") n.tensor = n.tensor.clone().reshape({4, 64, 32});
      }
    });
    const std::string e = load_error(dir.path());
    EXPECT_NE(e.find("MXFP4 '" + gate_up + "' is u8 4x64x32"), std::string::npos) << e;
    EXPECT_NE(e.find("expected u8 4x64x2x16"), std::string::npos) << e;
  }
  {
    h0::test::TempDir dir;  // the packed tensors without the config that says how to read them
    write_variant(
        dir.path(), [](std::vector<io::NamedTensor>&) {}, false);
    const std::string e = load_error(dir.path());
    EXPECT_NE(e.find("config.json has no mxfp4 quantization_config"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace h0::model
