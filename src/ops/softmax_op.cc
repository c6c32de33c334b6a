// softmax over the last axis: softmax(x[..., N]) = y[..., N], y = exp(x − max) / Σ exp(x − max),
// max-subtracted, summed in f64 (torch.softmax(x, dim=-1)). 5 flops per element (max, subtract,
// exp, sum, divide); reduction length N.
#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

// x is (R, N) seen flat; each row of N is normalised on its own.
void softmax_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) {
  const int64_t n = in[0]->dim(in[0]->ndim() - 1);
  auto y = util::to_f64(*in[0]);
  for (size_t row = 0; n > 0 && row < y.size(); row += static_cast<size_t>(n)) {
    util::softmax_inplace(&y[row], n);
  }
  util::from_f64(y, out[0]);
}

}  // namespace

const OpDef& softmax_op() {
  static const OpDef op = {
      .name = "softmax",
      .inputs = {{"x", OperandKind::kFloat}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {},
      .dims = {"*"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            return std::vector<TensorDesc>{desc(dtype, util::full_shape(dims))};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json&) {
            util::require_shape(softmax_op(), !in[0].shape.empty(), "x", in[0], "[..., N]");
            return std::vector<TensorDesc>{desc(in[0].dtype, in[0].shape)};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            const double n = static_cast<double>(tensor::numel(in[0].shape));
            return Cost{5 * n, util::bytes_of(in) + util::bytes_of(out),
                        static_cast<double>(in[0].shape.back())};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json&) { softmax_reference(in, out); },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"x", {{"normal", {{"mean", 0}, {"std", 1}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
