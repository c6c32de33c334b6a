// Images for the vision paths: decoding (JPEG through libjpeg-turbo, as PIL decodes it; PNG and
// the rest through stb_image) and the image processors' host steps as transformers' PIL backend
// does them, bit for bit on 8-bit images (PIL's fixed-point bicubic resampler):
//   CLIP (LLaVA): resize of the shortest edge, center crop, rescale; normalization ((x - mean) /
//     std) runs on the backend (Executor::image_features);
//   Qwen2-VL (Qwen2.5-VL): smart_resize to multiples of patch·merge within min/max pixels,
//     rescale, normalize, the temporal patch (the image repeated) and the patch flattening.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/vision/qwen_vision.h"
#include "tensor/tensor.h"

namespace h0::model {

struct Image {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> rgb;  // height·width·3, row-major
};

// One image as its tower takes it (config/tower.h ImageProcessor::pixels).
struct TowerPixels {
  // CLIP: rescaled [3, H, W] (clip_rescaled_pixels); Qwen2.5-VL: pixel_values [patches, K].
  tensor::Tensor pixels;
  ImageGrid grid;  // Qwen2.5-VL's image_grid_thw (M-RoPE places the image by it); CLIP: none
  // The feature rows it gives where that depends on the image (Qwen2.5-VL: its grid's tokens);
  // 0: the tower's fixed count (Tower::image_tokens).
  int64_t tokens = 0;
  bool has_grid() const { return grid.h > 0; }
};

// Throws InputError naming the file when it cannot be read or decoded.
Image decode_image(const std::string& path);
Image decode_image_memory(const void* data, size_t bytes, const std::string& label);

// PIL Image.resize(size, BICUBIC) of an 8-bit RGB image: separable, support 2·max(scale, 1),
// a = -0.5, 22-bit fixed-point coefficients, rounding and clipping to 8 bits after each pass;
// the horizontal pass first unless the width grows and the height shrinks (Pillow's order).
// Decoding: an image with alpha is composited onto white (transformers' convert_to_rgb).
Image resize_bicubic(const Image& in, int64_t width, int64_t height);

struct ClipProcessor {
  int64_t shortest_edge = 224, crop_height = 224, crop_width = 224;
  double rescale_factor = 1.0 / 255.0;
  std::array<double, 3> mean{0.48145466, 0.4578275, 0.40821073},
      std{0.26862954, 0.26130258, 0.27577711};
  bool do_resize = true, do_center_crop = true;
};
// Reads preprocessor_config.json (CLIPImageProcessor fields). Missing file → CLIP's defaults.
ClipProcessor load_clip_processor(const std::string& model_dir);

// Resize + center crop + rescale: [3, crop_h, crop_w] f32 (channels first), not normalized.
tensor::Tensor clip_rescaled_pixels(const Image& image, const ClipProcessor& p);

// Qwen2VLImageProcessor's settings (preprocessor_config.json; the class defaults when absent).
struct QwenVlProcessor {
  int64_t min_pixels = 56 * 56, max_pixels = 28 * 28 * 1280;
  int64_t patch_size = 14, temporal_patch_size = 2, merge_size = 2;
  double rescale_factor = 1.0 / 255.0;
  std::array<double, 3> mean{0.48145466, 0.4578275, 0.40821073},
      std{0.26862954, 0.26130258, 0.27577711};
  bool do_resize = true, do_rescale = true, do_normalize = true;
};
// Reads preprocessor_config.json under `model_dir` (size.shortest_edge / longest_edge, or the
// older min_pixels / max_pixels). Missing file → the defaults. InputError naming the file and key.
QwenVlProcessor load_qwen_vl_processor(const std::string& model_dir);
// The max_pixels of the preprocessor_config.json under `model_dir` (a config.json path: its
// directory); 0 when there is none (the memory planner then takes the class default).
int64_t qwen_vl_max_pixels(const std::string& model_dir);

// transformers' smart_resize: (height, width) rounded (half to even, as Python's round) to
// multiples of `factor`, scaled down by √(h·w / max_pixels) or up by √(min_pixels / (h·w)) (floor
// or ceil to the factor) to keep the pixel count in range. InputError when the aspect ratio
// exceeds 200 (as transformers).
std::pair<int64_t, int64_t> smart_resize(int64_t height, int64_t width, int64_t factor,
                                         int64_t min_pixels, int64_t max_pixels);

// An image as the Qwen2-VL processor gives it to the vision tower.
struct QwenVlPixels {
  // [grid_h·grid_w, 3·T·P·P] f32: one row per patch, patches in merge-block order (rows of merge
  // blocks, each block's m×m patches row-major), a row ordered (channel, temporal, y, x).
  tensor::Tensor pixel_values;
  int64_t grid_t = 1, grid_h = 0, grid_w = 0;  // image_grid_thw (patches)
  int64_t tokens(int64_t merge) const { return grid_t * grid_h * grid_w / (merge * merge); }
};
// Resize (PIL bicubic) to smart_resize's size, rescale (f64 product, rounded to f32), normalize in
// f32 ((x - mean) / std), patchify: exactly Qwen2VLImageProcessorPil.
QwenVlPixels qwen_vl_pixels(const Image& image, const QwenVlProcessor& p);

}  // namespace h0::model
