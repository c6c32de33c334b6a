// Helpers for writing catalogue entries: dims, descs, f64 views of tensors. Used only by the
// files under src/ops/.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "ops/op.h"

namespace h0::ops::util {

// The value of dim `name`, or its default; throws InputError("op 'x'", "missing dim 'D'").
int64_t dim(const OpDef& op, const Dims& dims, const char* name);

inline TensorDesc desc(DType dtype, Shape shape) { return {dtype, std::move(shape), true}; }
inline TensorDesc absent() { return {DType::kF32, {}, false}; }

// Throws InputError("op 'x'", "<operand> must be <what>, got <shape>") unless `ok`.
void require_shape(const OpDef& op, bool ok, const char* operand, const TensorDesc& d,
                   const std::string& what);

// Bytes of a list of descs (absent ones count zero).
double bytes_of(const std::vector<TensorDesc>& descs);

// A tensor's elements as f64, row-major (any dtype).
std::vector<double> to_f64(const Tensor& t);
// Writes f64 values into `out`, rounding once to its dtype (RNE; saturating/NaN rules of
// tensor/convert.h). values.size() must equal out->numel().
void from_f64(const std::vector<double>& values, Tensor* out);

// Attr accessors (attrs are validated and defaulted before any kernel sees them).
inline double attr_f(const Json& attrs, const char* name) { return attrs.at(name).get<double>(); }
inline int64_t attr_i(const Json& attrs, const char* name) { return attrs.at(name).get<int64_t>(); }
inline bool attr_b(const Json& attrs, const char* name) { return attrs.at(name).get<bool>(); }
inline std::string attr_s(const Json& attrs, const char* name) {
  return attrs.at(name).get<std::string>();
}

}  // namespace h0::ops::util
