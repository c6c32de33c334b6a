#include "ops/op_util.h"

#include <algorithm>
#include <cmath>

#include "tensor/convert.h"

namespace h0::ops::util {

int64_t dim(const OpDef& op, const Dims& dims, const char* name) {
  if (auto it = dims.find(name); it != dims.end()) return it->second;
  if (auto it = op.dim_defaults.find(name); it != op.dim_defaults.end()) return it->second;
  throw InputError(std::string("op '") + op.name + "'", std::string("missing dim '") + name + "'");
}

Shape full_shape(const Dims& dims) {
  Shape shape;
  for (;;) {
    std::string key = "d";
    key += std::to_string(shape.size());
    const auto it = dims.find(key);
    if (it == dims.end()) return shape;
    shape.push_back(it->second);
  }
}

void fail(const OpDef& op, const std::string& message) {
  throw InputError(std::string("op '") + op.name + "'", message);
}

void require_shape(const OpDef& op, bool ok, const char* operand, const TensorDesc& d,
                   const std::string& what) {
  if (ok) return;
  throw InputError(std::string("op '") + op.name + "'",
                   std::string(operand) + " must be " + what + ", got " +
                       tensor::shape_string(d.shape) + " " + tensor::dtype_name(d.dtype));
}

double bytes_of(const std::vector<TensorDesc>& descs) {
  double total = 0;
  for (const auto& d : descs) {
    if (!d.present) continue;
    total += static_cast<double>(tensor::numel(d.shape) *
                                 static_cast<int64_t>(tensor::dtype_size(d.dtype)));
  }
  return total;
}

void softmax_inplace(double* x, int64_t n) {
  if (n <= 0) return;
  const double m = *std::max_element(x, x + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  for (int64_t i = 0; i < n; ++i) x[i] /= sum;
}

std::vector<double> to_f64(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  tensor::convert(t.data(), t.dtype(), out.data(), DType::kF64, out.size());
  return out;
}

void from_f64(const std::vector<double>& values, Tensor* out) {
  H0_CHECK(static_cast<int64_t>(values.size()) == out->numel())
      << values.size() << " values for " << tensor::shape_string(out->shape());
  tensor::convert(values.data(), DType::kF64, out->mutable_data(), out->dtype(), values.size());
}

}  // namespace h0::ops::util
