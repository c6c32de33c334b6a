// dequantize_mxfp4: OCP microscaling FP4, as GPT-OSS stores its experts.
//   dequantize_mxfp4(blocks[..., G, 16] u8, scales[..., G] u8) = x[..., G·32] (attr out_dtype)
// Each byte holds two E2M1 values, the low nibble first: element 2i of a block is
// E2M1(blocks[i] & 0xF), element 2i + 1 is E2M1(blocks[i] >> 4); E2M1 codes 0..7 are +0, 0.5,
// 1, 1.5, 2, 3, 4, 6 and 8..15 the same negated. A block of 32 elements shares one E8M0 scale:
// x = E2M1 · 2^(scales − 127) (transformers' convert_moe_packed_tensors). Exact in every out
// dtype whose exponent range holds the scale (f32, bf16); rounded once into f16.
// 1 flop per element; reduction 1.
#include <cmath>

#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

constexpr double kE2M1[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};

void mxfp4_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) {
  const auto* blocks = static_cast<const uint8_t*>(in[0]->data());
  const auto* scales = static_cast<const uint8_t*>(in[1]->data());
  const int64_t groups = in[1]->numel();
  if (out[0]->dtype() == tensor::DType::kF32) {
    // Straight into f32 (GPT-OSS's stored experts are widened this way every step): each product
    // is a power of two times an E2M1 value, exact in f32 as in f64 (2^-127 is an f32 subnormal),
    // or past f32's range in both. The scale 2^128 (E8M0 255) is not an f32: applied as 2^127 · 2.
    float* x = out[0]->mutable_data_as<float>();
    for (int64_t g = 0; g < groups; ++g) {
      const bool top = scales[g] == 255;
      const float scale = std::ldexp(1.0f, top ? 127 : int(scales[g]) - 127);
      for (int64_t i = 0; i < 32; ++i) {
        const uint8_t b = blocks[g * 16 + i / 2];
        const float v = static_cast<float>(kE2M1[i % 2 ? b >> 4 : b & 0xF]) * scale;
        x[g * 32 + i] = top ? v * 2.0f : v;
      }
    }
    return;
  }
  std::vector<double> x(static_cast<size_t>(groups * 32));
  for (int64_t g = 0; g < groups; ++g) {
    const double scale = std::ldexp(1.0, int(scales[g]) - 127);
    for (int64_t i = 0; i < 16; ++i) {
      const uint8_t b = blocks[g * 16 + i];
      x[size_t(g * 32 + 2 * i)] = kE2M1[b & 0xF] * scale;
      x[size_t(g * 32 + 2 * i + 1)] = kE2M1[b >> 4] * scale;
    }
  }
  util::from_f64(x, out[0]);
}

}  // namespace

const OpDef& dequantize_mxfp4_op() {
  static const OpDef op = {
      .name = "dequantize_mxfp4",
      .inputs = {{"blocks", OperandKind::kU8}, {"scales", OperandKind::kU8}},
      .outputs = {{"x", OperandKind::kFloat}},
      .attrs = {{"out_dtype", AttrType::kString, "\"f32\"", "f32|bf16|f16", "dtype of x"}},
      .dims = {"*"},  // the scales' shape [..., G]
      .dim_defaults = {},
      .tolerance = ToleranceClass::kElementwise,
      .operands =
          [](const Dims& dims, const Json&, DType, DType, const std::set<std::string>&) {
            Shape scales = util::full_shape(dims);
            if (scales.empty()) scales = {1};
            Shape blocks = scales;
            blocks.push_back(16);
            return std::vector<TensorDesc>{desc(DType::kU8, blocks), desc(DType::kU8, scales)};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = dequantize_mxfp4_op();
            const TensorDesc &blocks = in[0], &scales = in[1];
            Shape want = scales.shape;
            want.push_back(16);
            util::require_shape(self, !scales.shape.empty(), "scales", scales, "[..., G]");
            util::require_shape(self, blocks.shape == want, "blocks", blocks,
                                "[..., G, 16] = " + tensor::shape_string(want) +
                                    " (16 bytes: 32 E2M1 values per scale)");
            Shape x(scales.shape);
            x.back() *= 32;
            return std::vector<TensorDesc>{
                desc(*tensor::parse_dtype(util::attr_s(attrs, "out_dtype")), x)};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            double n = 1;
            for (int64_t d : out[0].shape) n *= double(d);
            return Cost{n, util::bytes_of(in) + util::bytes_of(out), 1};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json&) { mxfp4_reference(in, out); },
      .default_inputs =
          [](const Dims&, const Json&) {
            // Every byte value; scales around 2^0 (E8M0 120..134).
            return Json{{"blocks", {{"ints", {{"low", 0}, {"high", 256}}}}},
                        {"scales", {{"ints", {{"low", 120}, {"high", 135}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
