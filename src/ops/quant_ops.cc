// quantize and dequantize: symmetric absmax quantization to i8 or fp8.
//   quantize(x[..., N]) = q[..., N] (attr dtype: i8, f8_e4m3, f8_e5m2), scale (f32)
//   dequantize(q[..., N], scale) = x[..., N] (attr out_dtype: f32, bf16, f16), x = q · scale
// A group shares one scale (attr granularity):
//   tensor:  all of x                              scale [1]
//   channel: one row of the last axis              scale x.shape[:-1]
//   block:   `block` consecutive elements of a row scale x.shape[:-1] + [ceil(N / block)]
// scale = f32(amax / qmax) over the group (1 if amax = 0), qmax = 127, 448, 57344.
// q = x / scale in f64 (from the f32 scale), rounded to nearest even integer for i8, saturated
// to [−qmax, qmax], then stored. f8 goes through f32 (RNE twice, as torch's .to(float8) and an
// f32 kernel do), which can differ by one f8 step from a direct f64 -> f8 rounding when the
// quotient sits within an f32 ulp of an f8 tie. 3 flops per element for quantize, 1 for
// dequantize; reduction 1 (amax is exact).
#include <algorithm>
#include <cmath>

#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

const AttrSpec kDtypeAttr = {"dtype", AttrType::kString, "\"i8\"", "i8|f8_e4m3|f8_e5m2",
                             "quantized dtype"};
const AttrSpec kGranularityAttr = {"granularity", AttrType::kString, "\"tensor\"",
                                   "tensor|channel|block", "which elements share a scale"};
const AttrSpec kBlockAttr = {"block", AttrType::kInt, "128", nullptr,
                             "elements of the last axis per scale (granularity block)"};

// How x's elements map to scales.
struct Grouping {
  enum Kind { kTensor, kChannel, kBlock } kind;
  int64_t block;

  // Group of element j of row r of the last axis (n wide).
  int64_t group(int64_t r, int64_t j, int64_t n) const {
    switch (kind) {
      case kTensor:
        return 0;
      case kChannel:
        return r;
      default:
        return r * ((n + block - 1) / block) + j / block;
    }
  }
};

Grouping grouping(const OpDef& op, const Json& attrs) {
  const std::string g = util::attr_s(attrs, "granularity");
  const int64_t block = util::attr_i(attrs, "block");
  if (block <= 0) util::fail(op, "attr 'block' must be positive, got " + std::to_string(block));
  return {g == "tensor"    ? Grouping::kTensor
          : g == "channel" ? Grouping::kChannel
                           : Grouping::kBlock,
          block};
}

DType quant_dtype(const Json& attrs) { return *tensor::parse_dtype(util::attr_s(attrs, "dtype")); }

double qmax(DType dtype) {
  return dtype == DType::kI8 ? 127.0 : dtype == DType::kF8E4M3 ? 448.0 : 57344.0;
}

// The scale's shape for x of shape `x`.
Shape scale_shape(const Shape& x, const Grouping& g) {
  if (g.kind == Grouping::kTensor) return {1};
  Shape s(x.begin(), x.end() - 1);
  if (g.kind == Grouping::kBlock) s.push_back((x.back() + g.block - 1) / g.block);
  return s;
}

std::string bracketed(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// x is (R, N) seen flat. Writes q (same shape, attr dtype) and scale (scale_shape).
void quantize_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                        const Json& attrs) {
  const Grouping g = grouping(quantize_op(), attrs);
  const DType dtype = quant_dtype(attrs);
  const double limit = qmax(dtype);
  const auto x = util::to_f64(*in[0]);
  const int64_t n = in[0]->dim(in[0]->ndim() - 1), rows = n == 0 ? 0 : in[0]->numel() / n;
  std::vector<double> amax(static_cast<size_t>(out[1]->numel()), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double& m = amax[static_cast<size_t>(g.group(r, j, n))];
      m = std::max(m, std::fabs(x[static_cast<size_t>(r * n + j)]));
    }
  }
  std::vector<double> scale(amax.size());
  for (size_t i = 0; i < amax.size(); ++i) {
    scale[i] = amax[i] == 0 ? 1.0 : static_cast<double>(static_cast<float>(amax[i] / limit));
  }
  std::vector<double> q(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      double v = x[i] / scale[static_cast<size_t>(g.group(r, j, n))];
      if (dtype == DType::kI8) v = std::nearbyint(v);  // the default rounding mode: ties to even
      q[i] = std::clamp(v, -limit, limit);
    }
  }
  util::from_f64(q, out[0]);
  util::from_f64(scale, out[1]);
}

// q is (R, N) seen flat; scale as scale_shape. x = q · scale.
void dequantize_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                          const Json& attrs) {
  const Grouping g = grouping(dequantize_op(), attrs);
  const auto q = util::to_f64(*in[0]);
  const auto scale = util::to_f64(*in[1]);
  const int64_t n = in[0]->dim(in[0]->ndim() - 1), rows = n == 0 ? 0 : in[0]->numel() / n;
  std::vector<double> x(q.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      x[i] = q[i] * scale[static_cast<size_t>(g.group(r, j, n))];
    }
  }
  util::from_f64(x, out[0]);
}

Cost quant_cost(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                double flops_per_element) {
  const double n = static_cast<double>(tensor::numel(in[0].shape));
  return {flops_per_element * n, util::bytes_of(in) + util::bytes_of(out), 1};
}

}  // namespace

const OpDef& quantize_op() {
  static const OpDef op = {
      .name = "quantize",
      .inputs = {{"x", OperandKind::kFloat}},
      .outputs = {{"q", OperandKind::kQuant}, {"scale", OperandKind::kF32}},
      .attrs = {kDtypeAttr, kGranularityAttr, kBlockAttr},
      .dims = {"*"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kElementwise,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            return std::vector<TensorDesc>{desc(dtype, util::full_shape(dims))};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = quantize_op();
            const TensorDesc& x = in[0];
            util::require_shape(self, !x.shape.empty(), "x", x, "[..., N]");
            return std::vector<TensorDesc>{
                desc(quant_dtype(attrs), x.shape),
                desc(DType::kF32, scale_shape(x.shape, grouping(self, attrs)))};
          },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return quant_cost(in, out, 3); },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { quantize_reference(in, out, a); },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"x", {{"normal", {{"mean", 0}, {"std", 1}}}}}};
          },
  };
  return op;
}

const OpDef& dequantize_op() {
  static const OpDef op = {
      .name = "dequantize",
      .inputs = {{"q", OperandKind::kQuant}, {"scale", OperandKind::kF32}},
      .outputs = {{"x", OperandKind::kFloat}},
      .attrs = {kDtypeAttr,
                kGranularityAttr,
                kBlockAttr,
                {"out_dtype", AttrType::kString, "\"f32\"", "f32|bf16|f16", "dtype of x"}},
      .dims = {"*"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kElementwise,
      .operands =
          [](const Dims& dims, const Json& attrs, DType, DType, const std::set<std::string>&) {
            const Shape shape = util::full_shape(dims);
            const Grouping g = grouping(dequantize_op(), attrs);
            return std::vector<TensorDesc>{
                desc(quant_dtype(attrs), shape),
                desc(DType::kF32, shape.empty() ? Shape{1} : scale_shape(shape, g))};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = dequantize_op();
            const TensorDesc &q = in[0], &scale = in[1];
            util::require_shape(self, !q.shape.empty(), "q", q, "[..., N]");
            const Shape want = scale_shape(q.shape, grouping(self, attrs));
            util::require_shape(
                self, scale.shape == want, "scale", scale,
                bracketed(want) + " (granularity " + util::attr_s(attrs, "granularity") + ")");
            return std::vector<TensorDesc>{
                desc(*tensor::parse_dtype(util::attr_s(attrs, "out_dtype")), q.shape)};
          },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return quant_cost(in, out, 1); },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { dequantize_reference(in, out, a); },
      .default_inputs =
          [](const Dims&, const Json& attrs) {
            const DType dtype = quant_dtype(attrs);
            const double limit = qmax(dtype);
            const Json q = dtype == DType::kI8
                               ? Json{{"ints", {{"low", -127}, {"high", 128}}}}
                               : Json{{"uniform", {{"low", -limit}, {"high", limit}}}};
            return Json{{"q", q},
                        {"scale", {{"uniform", {{"low", 0.5 / limit}, {"high", 2 / limit}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
