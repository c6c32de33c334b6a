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

TensorDesc linear_output(const OpDef& op, const TensorDesc& x, const TensorDesc& w,
                         const TensorDesc& bias) {
  require_shape(op, x.shape.size() == 2, "x", x, "[T, K]");
  require_shape(op, w.shape.size() == 2 && w.shape[1] == x.shape[1], "w", w,
                "[N, K] with K = " + std::to_string(x.shape[1]));
  if (bias.present)
    require_shape(op, bias.shape == Shape{w.shape[0]}, "bias", bias,
                  "[N] = [" + std::to_string(w.shape[0]) + "]");
  return desc(x.dtype, {x.shape[0], w.shape[0]});
}

Cost linear_cost(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, bool bias) {
  const double t = static_cast<double>(in[0].shape[0]), k = static_cast<double>(in[0].shape[1]),
               n = static_cast<double>(in[1].shape[0]);
  return Cost{2 * t * k * n + (bias ? t * n : 0), bytes_of(in) + bytes_of(out), k};
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

std::vector<int64_t> paged_rows(const OpDef& op, const Tensor& table, int64_t nb, int64_t b,
                                int64_t len) {
  const auto blocks = to_f64(table);
  std::vector<int64_t> rows(static_cast<size_t>(len));
  for (int64_t j = 0; j < len; ++j) {
    const auto block = static_cast<int64_t>(blocks[static_cast<size_t>(j / b)]);
    if (block < 0 || block >= nb) {
      fail(op, "block_table entry " + std::to_string(block) + " at position " +
                   std::to_string(j / b) + " is outside [0, " + std::to_string(nb) + ")");
    }
    rows[static_cast<size_t>(j)] = block * b + j % b;
  }
  return rows;
}

namespace {

template <int kRows>
void dots_block(const double* x, const double* rows, int64_t stride, int64_t n, double* out) {
  double sum[kRows] = {};
  for (int64_t p = 0; p < n; ++p) {
    const double v = x[p];
    for (int r = 0; r < kRows; ++r) sum[r] += v * rows[r * stride + p];
  }
  for (int r = 0; r < kRows; ++r) out[r] = sum[r];
}

}  // namespace

void dots_f64(const double* x, const double* rows, int64_t count, int64_t stride, int64_t n,
              double* out) {
  int64_t r = 0;
  for (; r + 8 <= count; r += 8) dots_block<8>(x, rows + r * stride, stride, n, out + r);
  for (; r + 4 <= count; r += 4) dots_block<4>(x, rows + r * stride, stride, n, out + r);
  for (; r < count; ++r) dots_block<1>(x, rows + r * stride, stride, n, out + r);
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
