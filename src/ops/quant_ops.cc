// quantize, dequantize and scaled_linear: symmetric absmax quantization to i8 or fp8.
//   quantize(x[..., N]) = q[..., N] (attr dtype: i8, f8_e4m3, f8_e5m2), scale (f32)
//   dequantize(q[..., N], scale) = x[..., N] (attr out_dtype: f32, bf16, f16), x = q · scale
//   scaled_linear(x[T,K], w[N,K] (attr dtype), w_scale[ceil(N/block_n), ceil(K/block_k)] (f32),
//                 optional bias[N]) = y[T,N] = x'·(w ⊙ w_scale)ᵀ + bias, in x's dtype:
//     a linear over a block-quantized weight (DeepSeek-V3 / Kimi-K2 / Qwen3-FP8 checkpoints:
//     F8_E4M3 with weight_scale_inv of 128 × 128 blocks). x' = x, or with attr act_quant
//     "dynamic" x quantized to f8_e4m3 per token in groups of block_k (quantize granularity
//     block) and taken back, as DeepSeek's inference code and vLLM quantize activations.
//     2TKN flops; reduction K.
// A group shares one scale (attr granularity):
//   tensor:  all of x                              scale [1]
//   channel: one row of the last axis              scale x.shape[:-1]
//   block:   `block` consecutive elements of a row scale x.shape[:-1] + [ceil(N / block)]
//   block2d: a `block_rows` × `block` tile of a 2-D x[M, N]
//                                                  scale [ceil(M / block_rows), ceil(N / block)]
//            (DeepSeek-V3's weight_scale_inv: 128 × 128, the last tiles ragged)
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
#include "tensor/convert.h"

namespace h0::ops {
namespace {

using util::desc;

const AttrSpec kDtypeAttr = {"dtype", AttrType::kString, "\"i8\"", "i8|f8_e4m3|f8_e5m2",
                             "quantized dtype"};
const AttrSpec kGranularityAttr = {"granularity", AttrType::kString, "\"tensor\"",
                                   "tensor|channel|block|block2d", "which elements share a scale"};
const AttrSpec kBlockAttr = {"block", AttrType::kInt, "128", nullptr,
                             "elements of the last axis per scale (granularity block, block2d)"};
const AttrSpec kBlockRowsAttr = {"block_rows", AttrType::kInt, "128", nullptr,
                                 "rows per scale (granularity block2d)"};
const AttrSpec kWeightDtypeAttr = {"dtype", AttrType::kString, "\"f8_e4m3\"", "f8_e4m3|f8_e5m2|i8",
                                   "dtype of w"};

// How x's elements map to scales.
struct Grouping {
  enum Kind { kTensor, kChannel, kBlock, kBlock2d } kind;
  int64_t block;
  int64_t block_rows;

  // Group of element j of row r of the last axis (n wide).
  int64_t group(int64_t r, int64_t j, int64_t n) const {
    const int64_t blocks = (n + block - 1) / block;
    switch (kind) {
      case kTensor:
        return 0;
      case kChannel:
        return r;
      case kBlock:
        return r * blocks + j / block;
      default:
        return (r / block_rows) * blocks + j / block;
    }
  }
};

// The op's grouping (attrs granularity, block, block_rows).
Grouping grouping(const OpDef& op, const Json& attrs) {
  const std::string g = util::attr_s(attrs, "granularity");
  const int64_t block = util::attr_i(attrs, "block");
  const int64_t rows = util::attr_i(attrs, "block_rows");
  if (block <= 0) util::fail(op, "attr 'block' must be positive, got " + std::to_string(block));
  if (rows <= 0) util::fail(op, "attr 'block_rows' must be positive, got " + std::to_string(rows));
  return {g == "tensor"    ? Grouping::kTensor
          : g == "channel" ? Grouping::kChannel
          : g == "block"   ? Grouping::kBlock
                           : Grouping::kBlock2d,
          block, rows};
}

DType quant_dtype(const Json& attrs) { return *tensor::parse_dtype(util::attr_s(attrs, "dtype")); }

double qmax(DType dtype) {
  return dtype == DType::kI8 ? 127.0 : dtype == DType::kF8E4M3 ? 448.0 : 57344.0;
}

// The scale's shape for x of shape `x` (block2d: x is 2-D, checked by the callers).
Shape scale_shape(const Shape& x, const Grouping& g) {
  if (g.kind == Grouping::kTensor) return {1};
  if (g.kind == Grouping::kBlock2d) {
    return {(x[0] + g.block_rows - 1) / g.block_rows, (x[1] + g.block - 1) / g.block};
  }
  Shape s(x.begin(), x.end() - 1);
  if (g.kind == Grouping::kBlock) s.push_back((x.back() + g.block - 1) / g.block);
  return s;
}

// Throws unless operand `d` (named `name`) can be grouped by `g`: [..., N], 2-D for block2d.
void require_groupable(const OpDef& op, const TensorDesc& d, const char* name, const Grouping& g) {
  if (g.kind == Grouping::kBlock2d) {
    util::require_shape(op, d.shape.size() == 2, name, d, "[M, N] (granularity block2d)");
  } else {
    util::require_shape(op, !d.shape.empty(), name, d, "[..., N]");
  }
}

std::string bracketed(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// x (rows × n, row-major) quantized by `g`: q before its rounding to `dtype` (an i8 value is
// already an integer), and the f32 scales, both as f64.
struct Quantized {
  std::vector<double> q, scale;
};
Quantized quantize_values(const std::vector<double>& x, int64_t rows, int64_t n, const Grouping& g,
                          size_t groups, DType dtype) {
  const double limit = qmax(dtype);
  std::vector<double> amax(groups, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double& m = amax[static_cast<size_t>(g.group(r, j, n))];
      m = std::max(m, std::fabs(x[static_cast<size_t>(r * n + j)]));
    }
  }
  Quantized out{std::vector<double>(x.size()), std::vector<double>(groups)};
  for (size_t i = 0; i < groups; ++i) {
    out.scale[i] = amax[i] == 0 ? 1.0 : static_cast<double>(static_cast<float>(amax[i] / limit));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      double v = x[i] / out.scale[static_cast<size_t>(g.group(r, j, n))];
      if (dtype == DType::kI8) v = std::nearbyint(v);  // the default rounding mode: ties to even
      out.q[i] = std::clamp(v, -limit, limit);
    }
  }
  return out;
}

// x is (R, N) seen flat. Writes q (same shape, attr dtype) and scale (scale_shape).
void quantize_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                        const Json& attrs) {
  const int64_t n = in[0]->dim(in[0]->ndim() - 1), rows = n == 0 ? 0 : in[0]->numel() / n;
  const Quantized qs =
      quantize_values(util::to_f64(*in[0]), rows, n, grouping(quantize_op(), attrs),
                      static_cast<size_t>(out[1]->numel()), quant_dtype(attrs));
  util::from_f64(qs.q, out[0]);
  util::from_f64(qs.scale, out[1]);
}

// q is (R, N) seen flat; scale as scale_shape. x = q · scale.
void dequantize_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                          const Json& attrs) {
  const Grouping g = grouping(dequantize_op(), attrs);
  // An f32 output of 8-bit values (scales are f32): each product is exact in f64 (at most 8 + 24
  // significant bits), so the f32 product rounds as the f64 one does. Computed in f32 with a
  // 256-entry table, without the f64 copies (one routed expert of DeepSeek-V3 is 44M values,
  // widened each time a step routes to it).
  if (out[0]->dtype() == DType::kF32 && tensor::dtype_size(in[0]->dtype()) == 1) {
    uint8_t bytes[256];
    float table[256];
    for (int v = 0; v < 256; ++v) bytes[v] = static_cast<uint8_t>(v);
    tensor::convert(bytes, in[0]->dtype(), table, DType::kF32, 256);
    const float* scale = in[1]->data_as<float>();
    const auto* q = static_cast<const uint8_t*>(in[0]->data());
    float* x = out[0]->mutable_data_as<float>();
    const int64_t n = in[0]->dim(in[0]->ndim() - 1), rows = n == 0 ? 0 : in[0]->numel() / n;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        const size_t i = static_cast<size_t>(r * n + j);
        x[i] = table[q[i]] * scale[g.group(r, j, n)];
      }
    }
    return;
  }
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
      .attrs = {kDtypeAttr, kGranularityAttr, kBlockAttr, kBlockRowsAttr},
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
            const Grouping g = grouping(self, attrs);
            require_groupable(self, x, "x", g);
            return std::vector<TensorDesc>{desc(quant_dtype(attrs), x.shape),
                                           desc(DType::kF32, scale_shape(x.shape, g))};
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
                kBlockRowsAttr,
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
                desc(DType::kF32,
                     shape.empty() || (g.kind == Grouping::kBlock2d && shape.size() != 2)
                         ? Shape{1}
                         : scale_shape(shape, g))};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = dequantize_op();
            const TensorDesc &q = in[0], &scale = in[1];
            const Grouping g = grouping(self, attrs);
            require_groupable(self, q, "q", g);
            const Shape want = scale_shape(q.shape, g);
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

namespace {

// y[t][n] = Σ_k x'[t][k] · w[n][k] · w_scale[n / bn][k / bk] (+ bias[n]) in f64.
void scaled_linear_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                             const Json& attrs) {
  const int64_t t = in[0]->dim(0), k = in[0]->dim(1), n = in[1]->dim(0);
  const int64_t bn = util::attr_i(attrs, "block_n"), bk = util::attr_i(attrs, "block_k");
  std::vector<double> x = util::to_f64(*in[0]);
  if (util::attr_s(attrs, "act_quant") == "dynamic") {
    const Grouping g{Grouping::kBlock, bk, 1};
    const size_t groups = static_cast<size_t>(t * ((k + bk - 1) / bk));
    const Quantized qs = quantize_values(x, t, k, g, groups, DType::kF8E4M3);
    Tensor q = Tensor::zeros(DType::kF8E4M3, {t, k});
    util::from_f64(qs.q, &q);
    x = util::to_f64(q);
    for (int64_t r = 0; r < t; ++r) {
      for (int64_t j = 0; j < k; ++j)
        x[static_cast<size_t>(r * k + j)] *= qs.scale[static_cast<size_t>(g.group(r, j, k))];
    }
  }
  const auto w = util::to_f64(*in[1]);
  const auto scale = util::to_f64(*in[2]);
  const auto bias =
      in.size() > 3 && in[3] != nullptr ? util::to_f64(*in[3]) : std::vector<double>();
  const int64_t kb = (k + bk - 1) / bk;
  std::vector<double> y(static_cast<size_t>(t * n));
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < k; ++j) {
        acc += x[static_cast<size_t>(r * k + j)] * w[static_cast<size_t>(c * k + j)] *
               scale[static_cast<size_t>((c / bn) * kb + j / bk)];
      }
      if (!bias.empty()) acc += bias[static_cast<size_t>(c)];
      y[static_cast<size_t>(r * n + c)] = acc;
    }
  }
  util::from_f64(y, out[0]);
}

int64_t positive_attr(const OpDef& op, const Json& attrs, const char* name) {
  const int64_t v = util::attr_i(attrs, name);
  if (v <= 0)
    util::fail(op, "attr '" + std::string(name) + "' must be positive, got " + std::to_string(v));
  return v;
}

// scaled_linear's operands: x [T, K], w [N, K] in its quantized dtype, one f32 scale per
// block_n x block_k tile of w, and the bias [N] when asked for.
std::vector<TensorDesc> scaled_linear_operands(const Dims& dims, const Json& attrs, DType dtype,
                                               DType, const std::set<std::string>& with) {
  const OpDef& self = scaled_linear_op();
  const int64_t t = util::dim(self, dims, "T"), k = util::dim(self, dims, "K"),
                n = util::dim(self, dims, "N");
  const int64_t bn = positive_attr(self, attrs, "block_n"),
                bk = positive_attr(self, attrs, "block_k");
  std::vector<TensorDesc> in = {desc(dtype, {t, k}), desc(quant_dtype(attrs), {n, k}),
                                desc(DType::kF32, {(n + bn - 1) / bn, (k + bk - 1) / bk})};
  if (with.count("bias")) in.push_back(desc(dtype, {n}));
  return in;
}

}  // namespace

const OpDef& scaled_linear_op() {
  static const OpDef op = {
      .name = "scaled_linear",
      .inputs = {{"x", OperandKind::kFloat},
                 {"w", OperandKind::kQuant},
                 {"w_scale", OperandKind::kF32},
                 {"bias", OperandKind::kFloat, true}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {kWeightDtypeAttr,
                {"block_n", AttrType::kInt, "128", nullptr, "rows of w per scale"},
                {"block_k", AttrType::kInt, "128", nullptr,
                 "columns of w per scale (and of x per activation scale)"},
                {"act_quant", AttrType::kString, "\"none\"", "none|dynamic",
                 "dynamic: x quantized to f8_e4m3 per token in groups of block_k first"}},
      .dims = {"T", "K", "N"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands = scaled_linear_operands,
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = scaled_linear_op();
            const TensorDesc &x = in[0], &w = in[1], &scale = in[2];
            const TensorDesc bias = in.size() > 3 ? in[3] : util::absent();
            const int64_t bn = positive_attr(self, attrs, "block_n"),
                          bk = positive_attr(self, attrs, "block_k");
            const TensorDesc y = util::linear_output(self, x, w, bias);
            const Shape want = {(w.shape[0] + bn - 1) / bn, (w.shape[1] + bk - 1) / bk};
            util::require_shape(self, scale.shape == want, "w_scale", scale,
                                bracketed(want) + " (w " + tensor::shape_string(w.shape) + " in " +
                                    std::to_string(bn) + "x" + std::to_string(bk) + " blocks)");
            return std::vector<TensorDesc>{y};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            return util::linear_cost(in, out, in.size() > 3 && in[3].present);
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { scaled_linear_reference(in, out, a); },
      .default_inputs =
          [](const Dims& dims, const Json& attrs) {
            const double k = static_cast<double>(util::dim(scaled_linear_op(), dims, "K"));
            const DType dtype = quant_dtype(attrs);
            const double limit = qmax(dtype);
            const Json w = dtype == DType::kI8
                               ? Json{{"ints", {{"low", -127}, {"high", 128}}}}
                               : Json{{"uniform", {{"low", -limit}, {"high", limit}}}};
            // w ⊙ w_scale has a standard deviation near 1/sqrt(K), as linear's default w
            const double s = std::sqrt(3.0) / (limit * std::sqrt(k));
            return Json{{"x", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"w", w},
                        {"w_scale", {{"uniform", {{"low", 0.5 * s}, {"high", 1.5 * s}}}}},
                        {"bias", {{"normal", {{"mean", 0}, {"std", 0.1}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
