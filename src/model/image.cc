#include "model/image.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <stb/stb_image.h>

#include "base/error.h"
#include "base/input_file.h"
#include "base/json_read.h"

namespace h0::model {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // PIL's PRECISION_BITS for 8-bit images

double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// PIL precompute_coeffs + normalize_coeffs_8bpc for one axis: per output index, the first
// input index and the fixed-point weights.
struct Coeffs {
  std::vector<int64_t> first, count;
  std::vector<int32_t> weights;  // out_size · ksize
  int64_t ksize = 0;
};

Coeffs coefficients(int64_t in_size, int64_t out_size) {
  const double scale = double(in_size) / double(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = 2.0 * filterscale;
  Coeffs c;
  c.ksize = int64_t(std::ceil(support)) * 2 + 1;
  c.weights.assign(size_t(out_size * c.ksize), 0);
  std::vector<double> k(size_t(c.ksize));
  for (int64_t xx = 0; xx < out_size; ++xx) {
    const double center = (double(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int64_t xmin = int64_t(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int64_t xmax = int64_t(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0;
    for (int64_t x = 0; x < xmax; ++x) {
      k[size_t(x)] = bicubic((double(x + xmin) - center + 0.5) * ss);
      ww += k[size_t(x)];
    }
    for (int64_t x = 0; x < xmax; ++x) {
      const double w = ww != 0 ? k[size_t(x)] / ww : k[size_t(x)];
      c.weights[size_t(xx * c.ksize + x)] =
          int32_t(w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits));
    }
    c.first.push_back(xmin);
    c.count.push_back(xmax);
  }
  return c;
}

uint8_t clip8(int64_t v) {
  v >>= kPrecisionBits;
  return uint8_t(std::clamp<int64_t>(v, 0, 255));
}

// One separable pass along x (horizontal) or y, 3 channels.
Image resample(const Image& in, int64_t out_w, int64_t out_h, bool horizontal) {
  const Coeffs c = coefficients(horizontal ? in.width : in.height, horizontal ? out_w : out_h);
  Image out{out_h, out_w, std::vector<uint8_t>(size_t(out_h * out_w * 3))};
  for (int64_t y = 0; y < out_h; ++y) {
    for (int64_t x = 0; x < out_w; ++x) {
      const int64_t o = horizontal ? x : y;
      for (int ch = 0; ch < 3; ++ch) {
        int64_t ss = int64_t(1) << (kPrecisionBits - 1);
        for (int64_t i = 0; i < c.count[size_t(o)]; ++i) {
          const int64_t src = c.first[size_t(o)] + i;
          const int64_t idx = horizontal ? (y * in.width + src) : (src * in.width + x);
          ss += int64_t(in.rgb[size_t(idx * 3 + ch)]) * c.weights[size_t(o * c.ksize + i)];
        }
        out.rgb[size_t((y * out_w + x) * 3 + ch)] = clip8(ss);
      }
    }
  }
  return out;
}

}  // namespace

Image decode_image_memory(const void* data, size_t bytes, const std::string& label) {
  int w = 0, h = 0, channels = 0;
  stbi_uc* pixels = stbi_load_from_memory(static_cast<const stbi_uc*>(data), int(bytes), &w, &h, &channels, 3);
  if (pixels == nullptr) throw InputError(label, std::string("cannot decode image: ") + stbi_failure_reason());
  Image img{h, w, std::vector<uint8_t>(pixels, pixels + size_t(w) * size_t(h) * 3)};
  stbi_image_free(pixels);
  return img;
}

Image decode_image(const std::string& path) {
  const std::string bytes = base::read_regular_file(path);
  return decode_image_memory(bytes.data(), bytes.size(), path);
}

Image resize_bicubic(const Image& in, int64_t width, int64_t height) {
  Image out = in;
  // PIL: the horizontal pass first when the width changes, then the vertical pass.
  if (width != in.width) out = resample(out, width, out.height, true);
  if (height != in.height) out = resample(out, out.width, height, false);
  return out;
}

ClipProcessor load_clip_processor(const std::string& model_dir) {
  ClipProcessor p;
  const std::filesystem::path file = std::filesystem::path(model_dir) / "preprocessor_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return p;
  const nlohmann::json j = base::read_json_file(file.string());
  try {
    if (j.contains("size")) p.shortest_edge = j["size"].is_object() ? j["size"].value("shortest_edge", p.shortest_edge) : j["size"].get<int64_t>();
    if (j.contains("crop_size")) {
      const auto& c = j["crop_size"];
      p.crop_height = c.is_object() ? c.value("height", p.crop_height) : c.get<int64_t>();
      p.crop_width = c.is_object() ? c.value("width", p.crop_width) : c.get<int64_t>();
    }
    p.rescale_factor = j.value("rescale_factor", p.rescale_factor);
    if (j.contains("image_mean")) for (size_t i = 0; i < 3; ++i) p.mean[i] = j["image_mean"].at(i).get<double>();
    if (j.contains("image_std")) for (size_t i = 0; i < 3; ++i) p.std[i] = j["image_std"].at(i).get<double>();
    p.do_resize = j.value("do_resize", true);
    p.do_center_crop = j.value("do_center_crop", true);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file.string(), std::string("bad CLIP processor config: ") + e.what());
  }
  return p;
}

tensor::Tensor clip_rescaled_pixels(const Image& image, const ClipProcessor& p) {
  Image img = image;
  if (p.do_resize) {  // shortest edge to `shortest_edge`, the other int(size · long / short)
    const bool wide = img.width >= img.height;
    const int64_t short_side = wide ? img.height : img.width, long_side = wide ? img.width : img.height;
    const int64_t new_long = int64_t(double(p.shortest_edge) * double(long_side) / double(short_side));
    img = wide ? resize_bicubic(img, new_long, p.shortest_edge) : resize_bicubic(img, p.shortest_edge, new_long);
  }
  int64_t top = 0, left = 0, h = img.height, w = img.width;
  if (p.do_center_crop) {
    if (img.height < p.crop_height || img.width < p.crop_width) {
      throw InputError("image", "smaller than the crop size after resizing");
    }
    top = (img.height - p.crop_height) / 2;
    left = (img.width - p.crop_width) / 2;
    h = p.crop_height;
    w = p.crop_width;
  }
  tensor::Tensor out = tensor::Tensor::zeros(tensor::DType::kF32, {3, h, w});
  float* dst = out.mutable_data_as<float>();
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const uint8_t v = img.rgb[size_t(((y + top) * img.width + x + left) * 3 + c)];
        dst[(c * h + y) * w + x] = float(double(v) * p.rescale_factor);  // f64 product, one rounding (HF)
      }
    }
  }
  return out;
}

}  // namespace h0::model
