// The LLaVA image path against transformers: stb_image decoding vs PIL, the CLIP processor's
// PIL bicubic resize + crop + rescale, and the vision tower + projector + language model.
#include "model/vision/image.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backend/backend.h"
#include "compare/metrics.h"
#include "io/safetensors_reader.h"
#include "model/config/tower.h"
#include "model/exec/executor.h"
#include "model/exec/generation.h"
#include "model/weights/synth.h"
#include "test_util.h"

namespace h0::model {
namespace {

io::SafetensorsFile pixels_golden(const std::string& stem) {
  return io::SafetensorsFile::open(
      h0::test::golden_path("models/tiny-llava/pixels_" + stem + ".safetensors"));
}

Image image(const std::string& file) {
  return decode_image(h0::test::golden_path("models/images/" + file));
}

int max_rgb_diff(const Image& ours, const tensor::Tensor& pil) {
  EXPECT_EQ(pil.shape(), (tensor::Shape{ours.height, ours.width, 3}));
  int m = 0;
  for (int64_t i = 0; i < pil.numel(); ++i)
    m = std::max(m, std::abs(int(ours.rgb[size_t(i)]) - int(pil.data_as<uint8_t>()[i])));
  return m;
}

TEST(Image, PngDecodesExactlyAsPil) {
  EXPECT_EQ(max_rgb_diff(image("gradient.png"), pixels_golden("gradient").get("image_rgb")), 0);
  EXPECT_EQ(max_rgb_diff(image("checker.png"), pixels_golden("checker").get("image_rgb")), 0);
}

TEST(Image, JpegDecodesExactlyAsPil) {
  // libjpeg-turbo with PIL's settings (stb_image's IDCT and chroma upsampling were a few levels
  // off).
  EXPECT_EQ(max_rgb_diff(image("noise.jpg"), pixels_golden("noise").get("image_rgb")), 0);
}

// PIL's resampler reproduced bit for bit: from PIL's own decode, rescaled pixels equal HF's
// pixel_values un-normalized to within the f32 rounding of the normalization.
TEST(Image, ClipResizeCropRescaleMatchesPil) {
  const ClipProcessor p = load_clip_processor(h0::test::source_path("configs/models/tiny-llava"));
  for (const char* stem : {"gradient", "checker", "noise"}) {
    const io::SafetensorsFile g = pixels_golden(stem);
    const tensor::Tensor rgb = g.get("image_rgb");
    Image pil{rgb.dim(0), rgb.dim(1),
              std::vector<uint8_t>(rgb.data_as<uint8_t>(), rgb.data_as<uint8_t>() + rgb.numel())};
    const tensor::Tensor ours = clip_rescaled_pixels(pil, p);
    const tensor::Tensor want = g.get("pixel_values");
    ASSERT_EQ(ours.shape(), want.shape());
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const size_t c = size_t(i / (32 * 32));
      worst = std::max(
          worst, std::abs(double(ours.data_as<float>()[i]) - (want.at(i) * p.std[c] + p.mean[c])));
    }
    EXPECT_LT(worst, 1e-6) << stem;  // one 8-bit level is 3.9e-3
  }
}

// The library's cosine (compare/metrics.h, checked against numpy), accumulated in f64.
double cosine(const tensor::Tensor& a, const tensor::Tensor& b) {
  return compare::compute_metrics(a, b, {0, 0, false}).cosine;
}

TEST(Image, LlavaImagePromptMatchesTransformers) {
  h0::test::TempDir dir;
  synthesize_checkpoint(h0::test::source_path("configs/models/tiny-llava"), dir.path(), {0, 1});
  const Architecture arch = load_architecture(dir.path());
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(dir.path());
  auto be = backend::Backend::open({"reference", "", nlohmann::json::object()});
  Executor ex(arch, ckpt, *be, {});
  const io::SafetensorsFile g =
      io::SafetensorsFile::open(h0::test::golden_path("models/tiny-llava/p13_image.safetensors"));
  const Tower& tower = *tower_of(arch);
  const std::unique_ptr<ImageProcessor> p = tower.processor(dir.path());
  ProbeRecorder probes;
  const tensor::Tensor features = tower.features(ex, *p, p->pixels(image("checker.png")), &probes);
  const tensor::Tensor ids_t = g.get("input_ids");
  const std::vector<int64_t> ids(ids_t.data_as<int64_t>(),
                                 ids_t.data_as<int64_t>() + ids_t.numel());
  const Generation gen = generate_greedy(ex, ids, 8, &probes, &features);
  int compared = 0;
  for (const auto& [name, value] : probes.probes()) {
    if (g.find(name) == nullptr) continue;
    EXPECT_GE(cosine(value, g.get(name)), 0.99999) << name;
    ++compared;
  }
  EXPECT_GE(compared, 20);
  EXPECT_GE(cosine(gen.prompt_logits, g.get("logits")), 0.99999);
  const tensor::Tensor greedy = g.get("greedy_ids");
  for (int64_t i = 0; i < greedy.numel(); ++i)
    EXPECT_EQ(gen.ids[size_t(i)], greedy.data_as<int64_t>()[i]) << "step " << i;
}

}  // namespace
}  // namespace h0::model
