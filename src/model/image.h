// Images for the LLaVA path: decoding (PNG/JPEG through stb_image) and the CLIP image
// processor's host steps as transformers' PIL backend does them: bicubic resize of the shortest
// edge (PIL's fixed-point resampler, bit for bit on 8-bit images), center crop, rescale.
// Normalization ((x - mean) / std) runs on the backend (Executor::image_features).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace h0::model {

struct Image {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> rgb;  // height·width·3, row-major
};

// Throws InputError naming the file when it cannot be read or decoded.
Image decode_image(const std::string& path);
Image decode_image_memory(const void* data, size_t bytes, const std::string& label);

// PIL Image.resize(size, BICUBIC) of an 8-bit RGB image: separable, support 2·max(scale, 1),
// a = -0.5, 22-bit fixed-point coefficients, rounding and clipping to 8 bits after each pass.
Image resize_bicubic(const Image& in, int64_t width, int64_t height);

struct ClipProcessor {
  int64_t shortest_edge = 224, crop_height = 224, crop_width = 224;
  double rescale_factor = 1.0 / 255.0;
  std::array<double, 3> mean{0.48145466, 0.4578275, 0.40821073}, std{0.26862954, 0.26130258, 0.27577711};
  bool do_resize = true, do_center_crop = true;
};
// Reads preprocessor_config.json (CLIPImageProcessor fields). Missing file → CLIP's defaults.
ClipProcessor load_clip_processor(const std::string& model_dir);

// Resize + center crop + rescale: [3, crop_h, crop_w] f32 (channels first), not normalized.
tensor::Tensor clip_rescaled_pixels(const Image& image, const ClipProcessor& p);

}  // namespace h0::model
