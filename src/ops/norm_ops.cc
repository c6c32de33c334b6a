// rmsnorm and layernorm.
//   rmsnorm(x[T,D], w[D]) = x / sqrt(mean(x^2) + eps) * (offset + w)  (HF LlamaRMSNorm; offset 1:
//     Gemma's (1 + w), applied in f32 before the one rounding)
//   layernorm(x[T,D], w[D], b[D]) = (x - mean) / sqrt(var + eps) * w + b  (biased variance)
//   rmsnorm_gated(x[T,D], w[D], z[T,D]) = x / sqrt(mean(x^2) + eps) * w * silu(z)  (Qwen3-Next's
//     Qwen3NextRMSNormGated, FLA's FusedRMSNormGated: norm before gate)
// Reductions over D in f64; one rounding to the output dtype.
#include <cmath>

#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

std::vector<TensorDesc> norm_operands(const OpDef& op, const Dims& dims, DType dtype,
                                      bool with_bias) {
  const int64_t t = util::dim(op, dims, "T"), d = util::dim(op, dims, "D");
  std::vector<TensorDesc> in = {desc(dtype, {t, d}), desc(dtype, {d})};
  if (with_bias) in.push_back(desc(dtype, {d}));
  return in;
}

std::vector<TensorDesc> norm_infer(const OpDef& op, const std::vector<TensorDesc>& in) {
  const TensorDesc& x = in[0];
  util::require_shape(op, x.shape.size() == 2, "x", x, "[T, D]");
  for (size_t i = 1; i < in.size(); ++i) {
    util::require_shape(op, in[i].shape == Shape{x.shape[1]}, op.inputs[i].name, in[i],
                        "[D] = [" + std::to_string(x.shape[1]) + "]");
  }
  return {desc(x.dtype, x.shape)};
}

Cost norm_cost(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
               double flops_per_element) {
  const double n = static_cast<double>(tensor::numel(in[0].shape));
  return {flops_per_element * n, util::bytes_of(in) + util::bytes_of(out),
          static_cast<double>(in[0].shape[1])};
}

// x is (T, D); w and b are (D). `center` subtracts the mean (layernorm) before scaling.
void norm_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                    double eps, bool center, double offset = 0) {
  const int64_t t = in[0]->dim(0), d = in[0]->dim(1);
  const auto x = util::to_f64(*in[0]);
  const auto w = util::to_f64(*in[1]);
  const auto b = in.size() > 2 && in[2] != nullptr ? util::to_f64(*in[2]) : std::vector<double>();
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < t; ++r) {
    const double* row = &x[static_cast<size_t>(r * d)];
    double mean = 0;
    if (center) {
      for (int64_t j = 0; j < d; ++j) mean += row[j];
      mean /= static_cast<double>(d);
    }
    double sq = 0;
    for (int64_t j = 0; j < d; ++j) sq += (row[j] - mean) * (row[j] - mean);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
    for (int64_t j = 0; j < d; ++j) {
      double v = (row[j] - mean) * inv * (offset + w[static_cast<size_t>(j)]);
      if (!b.empty()) v += b[static_cast<size_t>(j)];
      y[static_cast<size_t>(r * d + j)] = v;
    }
  }
  util::from_f64(y, out[0]);
}

void gated_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                     double eps) {
  const int64_t t = in[0]->dim(0), d = in[0]->dim(1);
  const auto x = util::to_f64(*in[0]), w = util::to_f64(*in[1]), z = util::to_f64(*in[2]);
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < t; ++r) {
    const size_t row = size_t(r * d);
    double sq = 0;
    for (int64_t j = 0; j < d; ++j) sq += x[row + size_t(j)] * x[row + size_t(j)];
    const double inv = 1.0 / std::sqrt(sq / double(d) + eps);
    for (int64_t j = 0; j < d; ++j) {
      const size_t i = row + size_t(j);
      y[i] = x[i] * inv * w[size_t(j)] * util::silu(z[i]);
    }
  }
  util::from_f64(y, out[0]);
}

}  // namespace

const OpDef& rmsnorm_op() {
  static const OpDef op = {
      .name = "rmsnorm",
      .inputs = {{"x", OperandKind::kFloat}, {"w", OperandKind::kFloat}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {{"eps", AttrType::kFloat, "1e-6", nullptr, "added to mean(x^2)"},
                {"offset", AttrType::kFloat, "0", nullptr, "added to w (Gemma's 1 + w: 1)"}},
      .dims = {"T", "D"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            return norm_operands(rmsnorm_op(), dims, dtype, false);
          },
      .infer = [](const std::vector<TensorDesc>& in,
                  const Json&) { return norm_infer(rmsnorm_op(), in); },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return norm_cost(in, out, 4); },
      .reference =
          [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, const Json& a) {
            norm_reference(in, out, util::attr_f(a, "eps"), false, util::attr_f(a, "offset"));
          },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"x", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"w", {{"uniform", {{"low", 0.5}, {"high", 1.5}}}}}};
          },
  };
  return op;
}

const OpDef& layernorm_op() {
  static const OpDef op = {
      .name = "layernorm",
      .inputs = {{"x", OperandKind::kFloat},
                 {"w", OperandKind::kFloat},
                 {"b", OperandKind::kFloat}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {{"eps", AttrType::kFloat, "1e-5", nullptr, "added to the variance"}},
      .dims = {"T", "D"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            return norm_operands(layernorm_op(), dims, dtype, true);
          },
      .infer = [](const std::vector<TensorDesc>& in,
                  const Json&) { return norm_infer(layernorm_op(), in); },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return norm_cost(in, out, 7); },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { norm_reference(in, out, util::attr_f(a, "eps"), true); },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"x", {{"normal", {{"mean", 0.5}, {"std", 2}}}}},
                        {"w", {{"uniform", {{"low", 0.5}, {"high", 1.5}}}}},
                        {"b", {{"normal", {{"mean", 0}, {"std", 0.1}}}}}};
          },
  };
  return op;
}

const OpDef& rmsnorm_gated_op() {
  static const OpDef op = {
      .name = "rmsnorm_gated",
      .inputs = {{"x", OperandKind::kFloat},
                 {"w", OperandKind::kFloat},
                 {"z", OperandKind::kFloat}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {{"eps", AttrType::kFloat, "1e-6", nullptr, "added to mean(x^2)"}},
      .dims = {"T", "D"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            const int64_t t = util::dim(rmsnorm_gated_op(), dims, "T"),
                          d = util::dim(rmsnorm_gated_op(), dims, "D");
            return std::vector<TensorDesc>{desc(dtype, {t, d}), desc(dtype, {d}),
                                           desc(dtype, {t, d})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json&) {
            const OpDef& self = rmsnorm_gated_op();
            auto out = norm_infer(self, {in[0], in[1]});
            util::require_shape(
                self, in[2].shape == in[0].shape, "z", in[2],
                "[T, D] = " + tensor::shape_string(in[0].shape) + " (the gate, x's shape)");
            return out;
          },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return norm_cost(in, out, 9); },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { gated_reference(in, out, util::attr_f(a, "eps")); },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"x", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"w", {{"uniform", {{"low", 0.5}, {"high", 1.5}}}}},
                        {"z", {{"normal", {{"mean", 0}, {"std", 2}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
