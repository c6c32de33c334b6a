#include "ops/op_util.h"

#include "tensor/convert.h"

namespace h0::ops::util {

int64_t dim(const OpDef& op, const Dims& dims, const char* name) {
  if (auto it = dims.find(name); it != dims.end()) return it->second;
  if (auto it = op.dim_defaults.find(name); it != op.dim_defaults.end()) return it->second;
  throw InputError(std::string("op '") + op.name + "'", std::string("missing dim '") + name + "'");
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
    if (d.present) total += static_cast<double>(tensor::numel(d.shape) * static_cast<int64_t>(tensor::dtype_size(d.dtype)));
  }
  return total;
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
