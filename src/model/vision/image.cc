#include "model/vision/image.h"

#include <jpeglib.h>
#include <stb/stb_image.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

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

// libjpeg-turbo with PIL's settings (the default islow IDCT and fancy upsampling, output RGB):
// PIL decodes JPEG with libjpeg-turbo, so the pixels are the processor's to the bit. A libjpeg
// error longjmps back here; `error` then holds its message.
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr c) {
  JpegError* e = reinterpret_cast<JpegError*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

bool decode_jpeg(const uint8_t* data, size_t bytes, Image* out, std::string* error) {
  jpeg_decompress_struct cinfo;
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.output_message = [](j_common_ptr) {};
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    *error = err.message;
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(bytes));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space =
      JCS_RGB;  // grayscale is replicated, as PIL's convert("RGB"); CMYK is refused
  jpeg_start_decompress(&cinfo);
  out->height = cinfo.output_height;
  out->width = cinfo.output_width;
  out->rgb.resize(size_t(out->height) * size_t(out->width) * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->rgb.data() + size_t(cinfo.output_scanline) * size_t(out->width) * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

Image decode_image_memory(const void* data, size_t bytes, const std::string& label) {
  const auto* b = static_cast<const uint8_t*>(data);
  if (bytes >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    Image img;
    std::string error;
    if (!decode_jpeg(b, bytes, &img, &error))
      throw InputError(label, "cannot decode JPEG image: " + error);
    return img;
  }
  int w = 0, h = 0, channels = 0;
  if (stbi_info_from_memory(b, int(bytes), &w, &h, &channels) == 0) {
    throw InputError(label, std::string("cannot decode image: ") + stbi_failure_reason());
  }
  const bool alpha = channels == 2 || channels == 4;
  stbi_uc* pixels = stbi_load_from_memory(b, int(bytes), &w, &h, &channels, alpha ? 4 : 3);
  if (pixels == nullptr)
    throw InputError(label, std::string("cannot decode image: ") + stbi_failure_reason());
  Image img{h, w, std::vector<uint8_t>(size_t(w) * size_t(h) * 3)};
  if (!alpha) {
    std::copy(pixels, pixels + img.rgb.size(), img.rgb.begin());
  } else {
    // transformers' convert_to_rgb: alpha composited onto white (PIL.Image.alpha_composite, its
    // integer arithmetic: 7 extra bits, rounded divisions by 255).
    constexpr uint32_t kBits = 7;
    const auto div255 = [](uint32_t a) { return ((a >> 8) + a) >> 8; };
    for (size_t i = 0; i < size_t(w) * size_t(h); ++i) {
      const stbi_uc* px = pixels + i * 4;
      const uint32_t a = px[3];
      for (size_t c = 0; c < 3; ++c) {
        if (a == 0) {
          img.rgb[i * 3 + c] = 255;
          continue;
        }
        const uint32_t out_a255 = a * 255 + 255 * (255 - a);
        const uint32_t coef1 = a * 255 * 255 * (1u << kBits) / out_a255,
                       coef2 = 255 * (1u << kBits) - coef1;
        const uint32_t t = px[c] * coef1 + 255 * coef2;
        img.rgb[i * 3 + c] = uint8_t(div255(t + (0x80u << kBits)) >> kBits);
      }
    }
  }
  stbi_image_free(pixels);
  return img;
}

Image decode_image(const std::string& path) {
  const std::string bytes = base::read_regular_file(path);
  return decode_image_memory(bytes.data(), bytes.size(), path);
}

Image resize_bicubic(const Image& in, int64_t width, int64_t height) {
  Image out = in;
  // Pillow (13): the horizontal pass first, then the vertical one — except when the width grows
  // and the height shrinks, where the shrinking vertical pass runs first (measured against
  // Pillow on every combination of growing and shrinking axes; the rounding to 8 bits after each
  // pass makes the order visible).
  if (width > in.width && height < in.height) {
    out = resample(out, out.width, height, false);
    return resample(out, width, out.height, true);
  }
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
    if (j.contains("size"))
      p.shortest_edge = j["size"].is_object() ? j["size"].value("shortest_edge", p.shortest_edge)
                                              : j["size"].get<int64_t>();
    if (j.contains("crop_size")) {
      const auto& c = j["crop_size"];
      p.crop_height = c.is_object() ? c.value("height", p.crop_height) : c.get<int64_t>();
      p.crop_width = c.is_object() ? c.value("width", p.crop_width) : c.get<int64_t>();
    }
    p.rescale_factor = j.value("rescale_factor", p.rescale_factor);
    if (j.contains("image_mean"))
      for (size_t i = 0; i < 3; ++i) p.mean[i] = j["image_mean"].at(i).get<double>();
    if (j.contains("image_std"))
      for (size_t i = 0; i < 3; ++i) p.std[i] = j["image_std"].at(i).get<double>();
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
    const int64_t short_side = wide ? img.height : img.width,
                  long_side = wide ? img.width : img.height;
    const int64_t new_long =
        int64_t(double(p.shortest_edge) * double(long_side) / double(short_side));
    img = wide ? resize_bicubic(img, new_long, p.shortest_edge)
               : resize_bicubic(img, p.shortest_edge, new_long);
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
        dst[(c * h + y) * w + x] =
            float(double(v) * p.rescale_factor);  // f64 product, one rounding (HF)
      }
    }
  }
  return out;
}

int64_t qwen_vl_max_pixels(const std::string& model_dir) {
  std::filesystem::path dir(model_dir);
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir, ec)) dir = dir.parent_path();
  if (!std::filesystem::is_regular_file(dir / "preprocessor_config.json", ec)) return 0;
  return load_qwen_vl_processor(dir.string()).max_pixels;
}

QwenVlProcessor load_qwen_vl_processor(const std::string& model_dir) {
  QwenVlProcessor p;
  const std::filesystem::path file = std::filesystem::path(model_dir) / "preprocessor_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return p;
  const nlohmann::json j = base::read_json_file(file.string());
  const std::string where = file.string();
  const auto integer = [&](const nlohmann::json& obj, const char* key, int64_t* v) {
    if (!obj.contains(key) || obj[key].is_null()) return;
    if (!obj[key].is_number_integer() || obj[key].get<int64_t>() < 1) {
      throw InputError(where + ": " + key, "must be a positive integer, got " + obj[key].dump());
    }
    *v = obj[key].get<int64_t>();
  };
  const auto flag = [&](const char* key, bool* v) {
    if (!j.contains(key)) return;
    if (!j[key].is_boolean())
      throw InputError(where + ": " + key, "must be true or false, got " + j[key].dump());
    *v = j[key].get<bool>();
  };
  if (!j.is_object()) throw InputError(where, "must be a JSON object");
  if (j.contains("size") && j["size"].is_object()) {
    integer(j["size"], "shortest_edge", &p.min_pixels);
    integer(j["size"], "longest_edge", &p.max_pixels);
  }
  integer(j, "min_pixels", &p.min_pixels);
  integer(j, "max_pixels", &p.max_pixels);
  integer(j, "patch_size", &p.patch_size);
  integer(j, "temporal_patch_size", &p.temporal_patch_size);
  integer(j, "merge_size", &p.merge_size);
  flag("do_resize", &p.do_resize);
  flag("do_rescale", &p.do_rescale);
  flag("do_normalize", &p.do_normalize);
  if (j.contains("rescale_factor")) {
    if (!j["rescale_factor"].is_number())
      throw InputError(where + ": rescale_factor", "must be a number");
    p.rescale_factor = j["rescale_factor"].get<double>();
  }
  for (const char* key : {"image_mean", "image_std"}) {
    if (!j.contains(key)) continue;
    const nlohmann::json& v = j[key];
    if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() ||
        !v[2].is_number()) {
      throw InputError(where + ": " + key, "must be 3 numbers, got " + v.dump());
    }
    std::array<double, 3>& dst = std::string(key) == "image_mean" ? p.mean : p.std;
    for (size_t i = 0; i < 3; ++i) dst[i] = v[i].get<double>();
  }
  for (double s : p.std) {
    if (!(s != 0)) throw InputError(where + ": image_std", "holds a zero");
  }
  if (p.min_pixels > p.max_pixels)
    throw InputError(where + ": size", "min_pixels is above max_pixels");
  return p;
}

std::pair<int64_t, int64_t> smart_resize(int64_t height, int64_t width, int64_t factor,
                                         int64_t min_pixels, int64_t max_pixels) {
  if (height < 1 || width < 1) throw InputError("image", "has no pixels");
  const double h = double(height), w = double(width), f = double(factor);
  if (std::max(h, w) / std::min(h, w) > 200) {
    throw InputError("image",
                     std::to_string(width) + "x" + std::to_string(height) +
                         ": absolute aspect ratio must be smaller than 200 (Qwen2-VL's processor)");
  }
  // Python's round(): half to even, which std::nearbyint does under the default rounding mode.
  int64_t h_bar = int64_t(std::nearbyint(h / f)) * factor,
          w_bar = int64_t(std::nearbyint(w / f)) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(h * w / double(max_pixels));
    h_bar = std::max(factor, int64_t(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, int64_t(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(double(min_pixels) / (h * w));
    h_bar = int64_t(std::ceil(h * beta / f)) * factor;
    w_bar = int64_t(std::ceil(w * beta / f)) * factor;
  }
  return {h_bar, w_bar};
}

QwenVlPixels qwen_vl_pixels(const Image& image, const QwenVlProcessor& p) {
  const int64_t P = p.patch_size, m = p.merge_size, T = p.temporal_patch_size, factor = P * m;
  Image img = image;
  if (p.do_resize) {
    const auto [h, w] = smart_resize(img.height, img.width, factor, p.min_pixels, p.max_pixels);
    img = resize_bicubic(img, w, h);
  }
  if (img.height % factor != 0 || img.width % factor != 0) {
    throw InputError("image", std::to_string(img.width) + "x" + std::to_string(img.height) +
                                  " is not a multiple of patch_size x merge_size = " +
                                  std::to_string(factor) + " (do_resize is off)");
  }
  const int64_t H = img.height, W = img.width;
  // Channel planes in f32, as the processor holds them before patchify.
  std::vector<float> planes(size_t(3 * H * W));
  const std::array<float, 3> mean{float(p.mean[0]), float(p.mean[1]), float(p.mean[2])},
      stdev{float(p.std[0]), float(p.std[1]), float(p.std[2])};
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < H * W; ++i) {
      const uint8_t v = img.rgb[size_t(i * 3 + c)];
      float x = p.do_rescale ? float(double(v) * p.rescale_factor)
                             : float(v);  // HF rescale: f64, then f32
      if (p.do_normalize) x = (x - mean[size_t(c)]) / stdev[size_t(c)];  // HF normalize: f32
      planes[size_t(c * H * W + i)] = x;
    }
  }
  QwenVlPixels out;
  out.grid_h = H / P;
  out.grid_w = W / P;
  const int64_t row = 3 * T * P * P;
  out.pixel_values = tensor::Tensor::zeros(tensor::DType::kF32, {out.grid_h * out.grid_w, row});
  float* dst = out.pixel_values.mutable_data_as<float>();
  int64_t r = 0;
  for (int64_t bh = 0; bh < out.grid_h / m; ++bh) {
    for (int64_t bw = 0; bw < out.grid_w / m; ++bw) {
      for (int64_t mh = 0; mh < m; ++mh) {
        for (int64_t mw = 0; mw < m; ++mw, ++r) {
          float* d = dst + r * row;
          const int64_t y0 = (bh * m + mh) * P, x0 = (bw * m + mw) * P;
          for (int64_t c = 0; c < 3; ++c) {
            for (int64_t t = 0; t < T; ++t) {  // the image repeated over the temporal patch
              for (int64_t y = 0; y < P; ++y) {
                for (int64_t x = 0; x < P; ++x)
                  *d++ = planes[size_t((c * H + y0 + y) * W + x0 + x)];
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace h0::model
