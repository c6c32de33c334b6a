// Qwen2-VL's image processor against transformers' (Qwen2VLImageProcessorPil): smart_resize, PIL's
// bicubic resize, rescale, normalize, the temporal patch and the patch order, compared byte for
// byte (sha256 of the f32 pixel_values) on odd sizes, a tiny and a large image, PNG, JPEG, RGBA
// and grayscale (golden/models/tiny-qwen2-5-vl/preprocess.json, golden/tools/gen_qwen_vl.py).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_read.h"
#include "base/sha256.h"
#include "model/vision/image.h"
#include "test_util.h"

namespace h0::model {
namespace {

const nlohmann::json& golden() {
  static const nlohmann::json j =
      base::read_json_file(h0::test::golden_path("models/tiny-qwen2-5-vl/preprocess.json"));
  return j;
}

QwenVlProcessor processor(const std::string& setting) {
  if (setting == "model")
    return load_qwen_vl_processor(h0::test::source_path("tests/data/models/tiny-qwen2-5-vl"));
  return QwenVlProcessor{};  // Qwen2-VL's class defaults
}

TEST(QwenVlImage, PixelValuesEqualTheProcessorsByteForByte) {
  int compared = 0;
  for (const auto& [file, settings] : golden().at("images").items()) {
    const Image img = decode_image(h0::test::golden_path("models/images/" + file));
    for (const auto& [setting, want] : settings.items()) {
      SCOPED_TRACE(file + " / " + setting);
      const QwenVlProcessor p = processor(setting);
      EXPECT_EQ(p.max_pixels, golden()["settings"][setting]["max_pixels"].get<int64_t>());
      const QwenVlPixels got = qwen_vl_pixels(img, p);
      EXPECT_EQ((std::vector<int64_t>{got.grid_t, got.grid_h, got.grid_w}),
                want["grid_thw"].get<std::vector<int64_t>>());
      ASSERT_EQ(got.pixel_values.shape(), want["shape"].get<tensor::Shape>());
      const float* v = got.pixel_values.data_as<float>();
      for (size_t i = 0; i < 8; ++i) EXPECT_EQ(v[i], want["head"][i].get<float>()) << "value " << i;
      double sum = 0;
      for (int64_t i = 0; i < got.pixel_values.numel(); ++i) sum += v[i];
      EXPECT_NEAR(sum, want["sum"].get<double>(), 1e-6 * std::max(1.0, std::abs(sum)));
      EXPECT_EQ(base::sha256_hex(v, got.pixel_values.nbytes()), want["sha256"].get<std::string>());
      ++compared;
    }
  }
  EXPECT_EQ(compared, 14);  // 7 images x 2 settings
}

TEST(QwenVlImage, SmartResizeFollowsTransformers) {
  // Python's round is half to even: 42/28 = 1.5 -> 2, 70/28 = 2.5 -> 2.
  EXPECT_EQ(smart_resize(42, 70, 28, 56 * 56, 28 * 28 * 1280),
            (std::pair<int64_t, int64_t>{56, 56}));
  // Below min_pixels: scaled up, ceil to the factor.
  EXPECT_EQ(smart_resize(3, 5, 28, 56 * 56, 28 * 28 * 1280), (std::pair<int64_t, int64_t>{56, 84}));
  // Above max_pixels: scaled down, floor to the factor.
  EXPECT_EQ(smart_resize(900, 1200, 28, 56 * 56, 28 * 28 * 64),
            (std::pair<int64_t, int64_t>{168, 252}));
  EXPECT_THROW(smart_resize(1, 201, 28, 56 * 56, 28 * 28 * 1280), InputError);
}

TEST(QwenVlImage, PatchRowsFollowMergeBlockOrder) {
  // A 56x56 image of distinct levels (no resize, no normalization): patch r of merge block
  // (bh, bw), sub-position (mh, mw) starts at pixel ((bh·2 + mh)·14, (bw·2 + mw)·14).
  Image img{56, 56, std::vector<uint8_t>(56 * 56 * 3)};
  for (int64_t y = 0; y < 56; ++y) {
    for (int64_t x = 0; x < 56; ++x) {
      for (int64_t c = 0; c < 3; ++c)
        img.rgb[size_t((y * 56 + x) * 3 + c)] = uint8_t((y / 14) * 16 + (x / 14) * 4 + c);
    }
  }
  QwenVlProcessor p;
  p.do_resize = p.do_rescale = p.do_normalize = false;
  const QwenVlPixels px = qwen_vl_pixels(img, p);
  ASSERT_EQ(px.pixel_values.shape(), (tensor::Shape{16, 3 * 2 * 14 * 14}));
  const int64_t order[16][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3},
                                {2, 0}, {2, 1}, {3, 0}, {3, 1}, {2, 2}, {2, 3}, {3, 2}, {3, 3}};
  for (int64_t r = 0; r < 16; ++r) {
    const float* row = px.pixel_values.data_as<float>() + r * 1176;
    EXPECT_EQ(row[0], float(order[r][0] * 16 + order[r][1] * 4)) << "patch " << r;
    EXPECT_EQ(row[2 * 196], float(order[r][0] * 16 + order[r][1] * 4 + 1))
        << "patch " << r << ": channel 1";
    EXPECT_EQ(row[196], row[0]) << "the temporal copy";
  }
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(QwenVlImage, BadProcessorConfigIsNamed) {
  h0::test::TempDir dir;
  write(dir.file("preprocessor_config.json"), R"({"image_std": [0.2, 0, 0.3]})");
  try {
    load_qwen_vl_processor(dir.path());
    FAIL() << "a zero std was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("preprocessor_config.json: image_std"), std::string::npos)
        << e.what();
  }
  write(dir.file("preprocessor_config.json"), R"({"size": {"longest_edge": "big"}})");
  EXPECT_THROW(load_qwen_vl_processor(dir.path()), InputError);
}

}  // namespace
}  // namespace h0::model
