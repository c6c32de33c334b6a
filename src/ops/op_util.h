// Helpers for writing catalogue entries: dims, descs, f64 views of tensors. Used only by the
// files under src/ops/.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "ops/op.h"

namespace h0::ops::util {

// The value of dim `name`, or its default; throws InputError("op 'x'", "missing dim 'D'").
int64_t dim(const OpDef& op, const Dims& dims, const char* name);

// The full shape of an op that takes any shape (dims = {"*"}): dims "d0", "d1", ... in order.
Shape full_shape(const Dims& dims);

inline TensorDesc desc(DType dtype, Shape shape) { return {dtype, std::move(shape), true}; }
inline TensorDesc absent() { return {DType::kF32, {}, false}; }

// Throws InputError("op 'x'", "<operand> must be <what>, got <shape>") unless `ok`.
void require_shape(const OpDef& op, bool ok, const char* operand, const TensorDesc& d,
                   const std::string& what);

// Throws InputError("op 'x'", message): an attr value or input data the op cannot take.
[[noreturn]] void fail(const OpDef& op, const std::string& message);

// Bytes of a list of descs (absent ones count zero).
double bytes_of(const std::vector<TensorDesc>& descs);

// The shape rule of a linear: x[T,K], w[N,K], bias[N] (absent: present = false) -> y[T,N] in x's
// dtype; throws naming the operand that does not fit. Shared by linear and scaled_linear.
TensorDesc linear_output(const OpDef& op, const TensorDesc& x, const TensorDesc& w,
                         const TensorDesc& bias);
// Its cost: 2TKN flops (+ TN with a bias), every operand read once, reduction K.
Cost linear_cost(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, bool bias);

// A tensor's elements as f64, row-major (any dtype).
std::vector<double> to_f64(const Tensor& t);
// Writes f64 values into `out`, rounding once to its dtype (RNE; saturating/NaN rules of
// tensor/convert.h). values.size() must equal out->numel().
void from_f64(const std::vector<double>& values, Tensor* out);

// out[r] = Σ_p x[p]·rows[r·stride + p] for r < count, p < n: each sum taken in p order, as a
// plain loop takes it (the same f64 result), eight rows at a time so the sums do not wait on
// each other.
void dots_f64(const double* x, const double* rows, int64_t count, int64_t stride, int64_t n,
              double* out);

// A paged cache's rows of keys 0..len-1: key j at block table[j / b], slot j % b, row
// block · b + j % b. A table entry outside [0, nb) that a key needs is an InputError naming op.
std::vector<int64_t> paged_rows(const OpDef& op, const Tensor& table, int64_t nb, int64_t b,
                                int64_t len);

// x[0..n) <- softmax(x[0..n)): max-subtracted, summed in f64.
void softmax_inplace(double* x, int64_t n);

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// silu(x) = x * sigmoid(x) (HF SiLU).
inline double silu(double x) { return x * sigmoid(x); }

// Attr accessors (attrs are validated and defaulted before any kernel sees them).
inline double attr_f(const Json& attrs, const char* name) { return attrs.at(name).get<double>(); }
inline int64_t attr_i(const Json& attrs, const char* name) { return attrs.at(name).get<int64_t>(); }
inline bool attr_b(const Json& attrs, const char* name) { return attrs.at(name).get<bool>(); }
// A nullable attr (default null): its value, or `fallback` when null.
inline double attr_f_or(const Json& attrs, const char* name, double fallback) {
  const Json& v = attrs.at(name);
  return v.is_null() ? fallback : v.get<double>();
}
inline int64_t attr_i_or(const Json& attrs, const char* name, int64_t fallback) {
  const Json& v = attrs.at(name);
  return v.is_null() ? fallback : v.get<int64_t>();
}
inline std::string attr_s(const Json& attrs, const char* name) {
  return attrs.at(name).get<std::string>();
}

}  // namespace h0::ops::util
