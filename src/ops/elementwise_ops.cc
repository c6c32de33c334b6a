// Element-wise ops; each output element is one f64 expression of the input elements at the
// same index, rounded once. Reduction length 1.
//   add(a, b) = a + b, mul(a, b) = a · b     a and b of one shape (any rank)    1 flop/element
//   silu(x) = x · sigmoid(x)                 any shape                          4 flops/element
//   sigmoid(x) = 1 / (1 + e^−x)              any shape                          4 flops/element
//   gelu(x), attr approximate:                any shape
//     "none": 0.5·x·(1 + erf(x/√2))                                             5 flops/element
//     "tanh": 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))   (HF gelu_pytorch_tanh) 8 flops/element
//   swiglu(gate[T,F], up[T,F]) = silu(gate) · up                                5 flops/element
#include <cmath>
#include <numbers>

#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

// The two same-shaped operands of add and mul (dims = {"*"}).
std::vector<TensorDesc> binary_operands(const Dims& dims, DType dtype) {
  const Shape shape = util::full_shape(dims);
  return {desc(dtype, shape), desc(dtype, shape)};
}

std::vector<TensorDesc> binary_infer(const OpDef& op, const std::vector<TensorDesc>& in) {
  const TensorDesc &a = in[0], &b = in[1];
  util::require_shape(
      op, b.shape == a.shape, op.inputs[1].name, b,
      std::string("the shape of ") + op.inputs[0].name + ", " + tensor::shape_string(a.shape));
  return {desc(a.dtype, a.shape)};
}

Cost elementwise_cost(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                      double flops_per_element) {
  const double n = static_cast<double>(tensor::numel(out[0].shape));
  return {flops_per_element * n, util::bytes_of(in) + util::bytes_of(out), 1};
}

// out[i] = f(in[0][i], in[1][i]) (f(x, 0) for unary ops).
template <typename F>
void map_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, F f) {
  const auto x = util::to_f64(*in[0]);
  const auto y = in.size() > 1 ? util::to_f64(*in[1]) : std::vector<double>(x.size(), 0.0);
  std::vector<double> z(x.size());
  for (size_t i = 0; i < x.size(); ++i) z[i] = f(x[i], y[i]);
  util::from_f64(z, out[0]);
}

double gelu(double x, bool tanh_approximation) {
  if (tanh_approximation) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
}

Json normal_inputs(std::initializer_list<const char*> names) {
  Json out = Json::object();
  for (const char* name : names) out[name] = {{"normal", {{"mean", 0}, {"std", 1}}}};
  return out;
}

// y = f(x): one operand of the op's shape.
std::vector<TensorDesc> unary_operands(const Dims& dims, const Json&, DType dtype, DType,
                                       const std::set<std::string>&) {
  return {desc(dtype, util::full_shape(dims))};
}

std::vector<TensorDesc> unary_infer(const std::vector<TensorDesc>& in) {
  return {desc(in[0].dtype, in[0].shape)};
}

// add and mul differ only in their name and their scalar function; one definition each.
template <const OpDef& (*kSelf)(), double (*kFn)(double, double)>
const OpDef& binary_op(const char* name) {
  static const OpDef op = {
      .name = name,
      .inputs = {{"a", OperandKind::kFloat}, {"b", OperandKind::kFloat}},
      .outputs = {{"c", OperandKind::kFloat}},
      .attrs = {},
      .dims = {"*"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kElementwise,
      .operands = [](const Dims& dims, const Json&, DType dtype, DType,
                     const std::set<std::string>&) { return binary_operands(dims, dtype); },
      .infer = [](const std::vector<TensorDesc>& in,
                  const Json&) { return binary_infer(kSelf(), in); },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return elementwise_cost(in, out, 1); },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json&) { map_reference(in, out, kFn); },
      .default_inputs =
          [](const Dims&, const Json&) {
            return normal_inputs({"a", "b"});
          },
  };
  return op;
}

double plus(double a, double b) { return a + b; }
double times(double a, double b) { return a * b; }
double silu_of(double x, double) { return util::silu(x); }
double sigmoid_of(double x, double) { return util::sigmoid(x); }

// silu and sigmoid: y = f(x), one transcendental of each element (4 flops), no attrs.
template <const OpDef& (*kSelf)(), double (*kFn)(double, double)>
const OpDef& transcendental_op(const char* name) {
  static const OpDef op = {
      .name = name,
      .inputs = {{"x", OperandKind::kFloat}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {},
      .dims = {"*"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kTranscendental,
      .operands = unary_operands,
      .infer = [](const std::vector<TensorDesc>& in, const Json&) { return unary_infer(in); },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return elementwise_cost(in, out, 4); },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json&) { map_reference(in, out, kFn); },
      .default_inputs = [](const Dims&, const Json&) { return normal_inputs({"x"}); },
  };
  return op;
}

}  // namespace

const OpDef& add_op() { return binary_op<&add_op, &plus>("add"); }
const OpDef& mul_op() { return binary_op<&mul_op, &times>("mul"); }
const OpDef& silu_op() { return transcendental_op<&silu_op, &silu_of>("silu"); }
const OpDef& sigmoid_op() { return transcendental_op<&sigmoid_op, &sigmoid_of>("sigmoid"); }

const OpDef& gelu_op() {
  static const OpDef op = {
      .name = "gelu",
      .inputs = {{"x", OperandKind::kFloat}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs =
          {{"approximate", AttrType::kString, "\"none\"", "none|tanh",
            "none: exact erf form; tanh: the tanh approximation (torch's approximate='tanh')"}},
      .dims = {"*"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kTranscendental,
      .operands = unary_operands,
      .infer = [](const std::vector<TensorDesc>& in, const Json&) { return unary_infer(in); },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json& a) {
            return elementwise_cost(in, out, util::attr_s(a, "approximate") == "tanh" ? 8 : 5);
          },
      .reference =
          [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, const Json& a) {
            const bool tanh_approximation = util::attr_s(a, "approximate") == "tanh";
            map_reference(in, out, [&](double x, double) { return gelu(x, tanh_approximation); });
          },
      .default_inputs = [](const Dims&, const Json&) { return normal_inputs({"x"}); },
  };
  return op;
}

const OpDef& swiglu_op() {
  static const OpDef op = {
      .name = "swiglu",
      .inputs = {{"gate", OperandKind::kFloat}, {"up", OperandKind::kFloat}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {},
      .dims = {"T", "F"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kTranscendental,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            const OpDef& self = swiglu_op();
            const int64_t t = util::dim(self, dims, "T"), f = util::dim(self, dims, "F");
            return std::vector<TensorDesc>{desc(dtype, {t, f}), desc(dtype, {t, f})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json&) {
            const OpDef& self = swiglu_op();
            util::require_shape(self, in[0].shape.size() == 2, "gate", in[0], "[T, F]");
            return binary_infer(self, in);
          },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return elementwise_cost(in, out, 5); },
      .reference =
          [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, const Json&) {
            map_reference(in, out, [](double gate, double up) { return util::silu(gate) * up; });
          },
      .default_inputs =
          [](const Dims&, const Json&) {
            return normal_inputs({"gate", "up"});
          },
  };
  return op;
}

}  // namespace h0::ops
