// An FP8 block-quantized checkpoint (DeepSeek-V3's layout: F8_E4M3 linear weights and an f32
// weight_scale_inv per block, the last blocks ragged) runs as the checkpoint it encodes: its logits
// equal, to f32 rounding, those of a checkpoint holding the weights dequantized by the block rule
// in this test (q · scale per block). The projections stay fp8 on the backend and run through
// scaled_linear. A scale of the wrong shape, or a weight with none, is refused naming the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "base/error.h"
#include "io/safetensors_writer.h"
#include "io/sharded_checkpoint.h"
#include "model/exec/executor.h"
#include "model/weights/inventory.h"
#include "model/weights/synth.h"
#include "model/weights/weight_loader.h"
#include "ops/op_list.h"
#include "test_util.h"

namespace h0::model {
namespace {

namespace fs = std::filesystem;
using tensor::DType;
using tensor::Tensor;

constexpr int64_t kBlock = 24;  // 64 = 2 x 24 + 16: every weight has ragged last blocks

// The config of `dir` with (or without) an fp8 quantization_config, written into `out`.
void write_config(const std::string& dir, const std::string& out, bool fp8) {
  fs::create_directories(out);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    if (fs::exists(fs::path(dir) / f)) fs::copy_file(fs::path(dir) / f, fs::path(out) / f);
  }
  std::ifstream in(fs::path(dir) / "config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  if (fp8)
    c["quantization_config"] = {{"quant_method", "fp8"}, {"weight_block_size", {kBlock, kBlock}}};
  std::ofstream(fs::path(out) / "config.json") << c.dump(1);
}

struct Fp8Pair {
  h0::test::TempDir base, fp8, dequantized;
  Fp8Pair() {
    synthesize_checkpoint(h0::test::source_path("configs/models/tiny-deepseek-v3"), base.path(),
                          {0, 1});
    write_config(base.path(), fp8.path(), true);
    write_config(base.path(), dequantized.path(), false);
    const Architecture quantized = load_architecture(fp8.path());
    const Inventory inv = build_inventory(quantized);  // marks the linear weights fp8 stores
    const auto ckpt = io::ShardedCheckpoint::open(base.path());
    std::vector<io::NamedTensor> q_tensors, d_tensors;
    for (const std::string& name : ckpt.names()) {
      const Tensor w = ckpt.get(name);
      const WeightInfo* info = inv.find(name);
      if (info == nullptr || !info->quantized) {
        q_tensors.push_back({name, w});
        d_tensors.push_back({name, w});
        continue;
      }
      const int64_t n = w.shape()[0], k = w.shape()[1], sr = (n + kBlock - 1) / kBlock,
                    sc = (k + kBlock - 1) / kBlock;
      const Tensor wf = w.to(DType::kF32);
      Tensor scale = Tensor::zeros(DType::kF32, {sr, sc}),
             scaled = Tensor::zeros(DType::kF32, {n, k});
      for (int64_t br = 0; br < sr; ++br) {
        for (int64_t bc = 0; bc < sc; ++bc) {
          float amax = 0;
          for (int64_t r = br * kBlock; r < std::min(n, (br + 1) * kBlock); ++r)
            for (int64_t c = bc * kBlock; c < std::min(k, (bc + 1) * kBlock); ++c)
              amax = std::max(amax, std::fabs(wf.data_as<float>()[r * k + c]));
          const float s = amax > 0 ? amax / 448.0f : 1.0f;
          scale.mutable_data_as<float>()[br * sc + bc] = s;
          for (int64_t r = br * kBlock; r < std::min(n, (br + 1) * kBlock); ++r)
            for (int64_t c = bc * kBlock; c < std::min(k, (bc + 1) * kBlock); ++c)
              scaled.mutable_data_as<float>()[r * k + c] = wf.data_as<float>()[r * k + c] / s;
        }
      }
      const Tensor q = scaled.to(DType::kF8E4M3);
      const Tensor qf = q.to(DType::kF32);
      Tensor deq = Tensor::zeros(DType::kF32, {n, k});
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < k; ++c)
          deq.mutable_data_as<float>()[r * k + c] =
              qf.data_as<float>()[r * k + c] *
              scale.data_as<float>()[(r / kBlock) * sc + c / kBlock];
      q_tensors.push_back({name, q});
      q_tensors.push_back({name + "_scale_inv", scale});
      d_tensors.push_back({name, deq});
      ++quantized_weights;
    }
    io::write_safetensors(fp8.file("model.safetensors"), q_tensors);
    io::write_safetensors(dequantized.file("model.safetensors"), d_tensors);
  }
  int quantized_weights = 0;
};

TEST(Fp8Weights, RunAsTheWeightsTheyEncode) {
  Fp8Pair p;
  ASSERT_GT(p.quantized_weights, 10);
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  const std::vector<int64_t> prompt = {1000, 17, 256, 3, 999, 42, 511};
  const auto fp8_ckpt = io::ShardedCheckpoint::open(p.fp8.path());
  const auto deq_ckpt = io::ShardedCheckpoint::open(p.dequantized.path());
  Executor fp8(load_architecture(p.fp8.path()), fp8_ckpt, *be, {});
  Executor deq(load_architecture(p.dequantized.path()), deq_ckpt, *be, {});
  const Tensor a = fp8.forward(fp8.new_sequence(), prompt),
               b = deq.forward(deq.new_sequence(), prompt);
  ASSERT_EQ(a.shape(), b.shape());
  // The fp8 run goes through scaled_linear, the dequantized one through linear: the same
  // products (q · scale is exact in f32 either way), summed in another order.
  double same = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    same = std::max(same, std::fabs(a.at(i) - b.at(i)) / (1 + std::fabs(b.at(i))));
  EXPECT_LT(same, 1e-5);
  // And they are not the bf16 original's (the quantization changed the weights).
  const auto base_ckpt = io::ShardedCheckpoint::open(p.base.path());
  Executor base(load_architecture(p.base.path()), base_ckpt, *be, {});
  const Tensor c = base.forward(base.new_sequence(), prompt);
  double diff = 0;
  for (int64_t i = 0; i < a.numel(); ++i) diff = std::max(diff, std::fabs(a.at(i) - c.at(i)));
  EXPECT_GT(diff, 100 * same);
}

TEST(Fp8Weights, AWrongOrMissingScaleIsRefusedNamingTheTensor) {
  Fp8Pair p;
  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  const auto ckpt = io::ShardedCheckpoint::open(p.fp8.path());
  const std::string victim = "model.layers.0.self_attn.o_proj.weight";
  ASSERT_NE(ckpt.find(victim + "_scale_inv"), nullptr);
  for (bool drop : {false, true}) {
    std::vector<io::NamedTensor> tensors;
    for (const std::string& name : ckpt.names()) {
      if (name == victim + "_scale_inv") {
        if (!drop) tensors.push_back({name, Tensor::zeros(DType::kF32, {1, 1})});
        continue;
      }
      tensors.push_back({name, ckpt.get(name)});
    }
    h0::test::TempDir bad;
    write_config(p.fp8.path(), bad.path(), true);
    io::write_safetensors(bad.file("model.safetensors"), tensors);
    try {
      Executor ex(load_architecture(bad.path()), io::ShardedCheckpoint::open(bad.path()), *be, {});
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(victim), std::string::npos) << e.what();
      EXPECT_NE(
          std::string(e.what()).find(
              drop ? "with no" : "weight_scale_inv is 1x1, but 64x64 in 24x24 blocks needs 3x3"),
          std::string::npos)
          << e.what();
    }
  }
}

// Quantizers do not all store DeepSeek-V3's layout: the routed experts left in a float dtype (a
// quantizer that converts nn.Linear modules only), the router quantized. Such a checkpoint is read
// as stored, each difference noted, and runs as the weights it encodes.
TEST(Fp8Weights, ALayoutThatDiffersTensorByTensorIsReadAsStored) {
  h0::test::TempDir ref, mixed;
  synthesize_checkpoint(h0::test::source_path("configs/models/tiny-deepseek-v3-fp8"), ref.path(),
                        {0, 1});
  const auto ref_ckpt = io::ShardedCheckpoint::open(ref.path());
  const Architecture arch = load_architecture(ref.path());
  const std::string router = "model.layers.1.mlp.gate.weight";
  std::vector<io::NamedTensor> tensors;
  int experts_dequantized = 0;
  for (const std::string& name : ref_ckpt.names()) {
    const Tensor t = ref_ckpt.get(name);
    if (name.find(".mlp.experts.") != std::string::npos && name.ends_with("_scale_inv")) continue;
    if (name.find(".mlp.experts.") != std::string::npos && t.dtype() == DType::kF8E4M3) {
      // q · scale per 16 x 16 block, exact in f32
      const Tensor s = ref_ckpt.get(name + "_scale_inv"), qf = t.to(DType::kF32);
      Tensor w = Tensor::zeros(DType::kF32, t.shape());
      for (int64_t r = 0; r < t.dim(0); ++r)
        for (int64_t c = 0; c < t.dim(1); ++c)
          w.mutable_data_as<float>()[r * t.dim(1) + c] =
              qf.data_as<float>()[r * t.dim(1) + c] *
              s.data_as<float>()[(r / 16) * s.dim(1) + c / 16];
      tensors.push_back({name, std::move(w)});
      ++experts_dequantized;
      continue;
    }
    tensors.push_back({name, t});
  }
  ASSERT_GT(experts_dequantized, 20);
  write_config(ref.path(), mixed.path(), false);
  std::filesystem::copy_file(ref.file("config.json"), mixed.file("config.json"),
                             std::filesystem::copy_options::overwrite_existing);
  io::write_safetensors(mixed.file("model.safetensors"), tensors);
  const auto mixed_ckpt = io::ShardedCheckpoint::open(mixed.path());
  const std::vector<std::string> notes = verify_checkpoint(mixed_ckpt, build_inventory(arch));
  ASSERT_EQ(notes.size(), size_t(experts_dequantized));
  EXPECT_NE(notes[0].find(": f32, not quantized (the config's layout stores it fp8)"),
            std::string::npos)
      << notes[0];

  auto be = backend::Backend::open({"cpu", "", nlohmann::json::object()});
  const std::vector<int64_t> prompt = {1000, 17, 256, 3, 999, 42, 511};
  Executor a(arch, ref_ckpt, *be, {}), b(arch, mixed_ckpt, *be, {});
  const Tensor la = a.forward(a.new_sequence(), prompt), lb = b.forward(b.new_sequence(), prompt);
  for (int64_t i = 0; i < la.numel(); ++i)
    ASSERT_NEAR(la.at(i), lb.at(i), 1e-4 * (1 + std::fabs(la.at(i)))) << i;

  // The router of layer 1 stored fp8 with 16 x 16 block scales: read as stored, run by
  // scaled_linear.
  const ops::OpDef& quantize = ops::quantize_op();
  const ops::Json attrs = ops::validate_attrs(
      quantize,
      {{"dtype", "f8_e4m3"}, {"granularity", "block2d"}, {"block_rows", 16}, {"block", 16}});
  const Tensor gate = ref_ckpt.get(router).to(DType::kF32);
  Tensor q = Tensor::zeros(DType::kF8E4M3, gate.shape()),
         s = Tensor::zeros(DType::kF32, {(gate.dim(0) + 15) / 16, (gate.dim(1) + 15) / 16});
  quantize.reference({&gate}, {&q, &s}, attrs);
  for (auto& t : tensors) {
    if (t.name == router) t.tensor = q;
  }
  tensors.push_back({router + "_scale_inv", s});
  h0::test::TempDir quantized_router;
  write_config(ref.path(), quantized_router.path(), false);
  std::filesystem::copy_file(ref.file("config.json"), quantized_router.file("config.json"),
                             std::filesystem::copy_options::overwrite_existing);
  io::write_safetensors(quantized_router.file("model.safetensors"), tensors);
  const auto qr_ckpt = io::ShardedCheckpoint::open(quantized_router.path());
  const std::vector<std::string> qr_notes = verify_checkpoint(qr_ckpt, build_inventory(arch));
  bool noted = false;
  for (const auto& n : qr_notes)
    noted =
        noted || n == router + ": f8_e4m3 with block scales (the reference layout keeps it bf16)";
  EXPECT_TRUE(noted);
  Executor c(arch, qr_ckpt, *be, {});
  const Tensor lc = c.forward(c.new_sequence(), prompt);
  EXPECT_EQ(c.ops().routes().at("scaled_linear"), "native");
  double diff = 0;
  for (int64_t i = 0; i < lc.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(lc.at(i)));
    diff = std::max(diff, std::fabs(lc.at(i) - lb.at(i)));
  }
  EXPECT_GT(diff, 0.0);  // the router's weights changed by their quantization
}

}  // namespace
}  // namespace h0::model
