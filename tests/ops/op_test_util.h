// Helpers for the catalogue tests: tensors from values, Philox-filled tensors, and one call of
// an op's reference kernel the way the host API makes it (attrs validated, outputs inferred and
// allocated, absent optional inputs passed as nullptr).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ops/op.h"
#include "tensor/convert.h"
#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace h0::ops::testing {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

// A tensor of `dtype` holding `values` (row-major), each rounded once from f64.
inline Tensor make(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  tensor::convert(values.data(), DType::kF64, t.mutable_data(), dtype, values.size());
  return t;
}

// Standard normals from Philox(seed, stream 0), rounded to `dtype`.
inline Tensor normal(DType dtype, Shape shape, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(tensor::numel(shape)));
  tensor::Philox(seed, 0).fill_normal(v.data(), v.size());
  return make(dtype, std::move(shape), v);
}

// A tensor's elements as f64.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  tensor::convert(t.data(), t.dtype(), out.data(), DType::kF64, out.size());
  return out;
}

// Runs op `name`'s reference kernel on `inputs` (optional trailing inputs may be left out).
inline std::vector<Tensor> run(const std::string& name, const std::vector<Tensor>& inputs,
                               const nlohmann::json& attrs = nlohmann::json::object()) {
  const OpDef& op = require_op(name);
  const Json a = validate_attrs(op, attrs);
  std::vector<TensorDesc> descs;
  for (const Tensor& t : inputs) descs.push_back({t.dtype(), t.shape(), true});
  std::vector<Tensor> outs;
  for (const TensorDesc& d : infer_outputs(op, descs, a))
    outs.push_back(Tensor::zeros(d.dtype, d.shape));
  std::vector<const Tensor*> in_ptrs(op.inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) in_ptrs[i] = &inputs[i];
  std::vector<Tensor*> out_ptrs;
  for (Tensor& t : outs) out_ptrs.push_back(&t);
  op.reference(in_ptrs, out_ptrs, a);
  return outs;
}

// The single output of run().
inline std::vector<double> run1(const std::string& name, const std::vector<Tensor>& inputs,
                                const nlohmann::json& attrs = nlohmann::json::object()) {
  return values(run(name, inputs, attrs).at(0));
}

// Element-wise closeness, relative to max(1, |want|).
inline void expect_near_all(const std::vector<double>& got, const std::vector<double>& want,
                            double tol, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << what << " [" << i << "]";
  }
}

inline double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
inline double silu(double x) { return x * sigmoid(x); }

}  // namespace h0::ops::testing
