// Helpers of the cpu backend tests: Philox inputs in checks/input_synth.h's distribution
// language, and one op run through the backend's ABI (alloc, copy in, run_op, copy out).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace h0::test {

using Json = nlohmann::json;
using tensor::DType;
using tensor::Tensor;

// Element i of operand `stream` drawn from `dist`: {normal: {mean, std}}, {uniform: {low, high}},
// {ints: {low, high}}, {arange: {start, step}}, {constant: {value}}, {permutation: {}} or
// {topk_ids: {experts}}, as checks/input_synth.h defines them.
inline Tensor synthesize(const Json& dist, DType dtype, const tensor::Shape& shape, uint64_t seed,
                         uint64_t stream) {
  const tensor::Philox rng(seed, stream);
  const int64_t n = tensor::numel(shape);
  std::vector<double> v(static_cast<size_t>(n));
  const std::string kind = dist.begin().key();
  const Json& p = dist.begin().value();
  if (kind == "normal") {
    for (int64_t i = 0; i < n; ++i)
      v[i] = p.value("mean", 0.0) + p.value("std", 1.0) * rng.normal(i);
  } else if (kind == "uniform") {
    const double lo = p.value("low", 0.0), hi = p.value("high", 1.0);
    for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * rng.uniform(i);
  } else if (kind == "ints") {
    const int64_t lo = p.value("low", 0), hi = p.value("high", 100);
    for (int64_t i = 0; i < n; ++i)
      v[i] = static_cast<double>(
          lo + static_cast<int64_t>((uint64_t{rng.word(i)} * uint64_t(hi - lo)) >> 32));
  } else if (kind == "arange") {
    for (int64_t i = 0; i < n; ++i)
      v[i] = p.value("start", 0.0) + static_cast<double>(i) * p.value("step", 1.0);
  } else if (kind == "constant") {
    std::fill(v.begin(), v.end(), p.value("value", 0.0));
  } else if (kind == "permutation" || kind == "topk_ids") {
    const int64_t width = kind == "permutation" ? n : p.at("experts").get<int64_t>();
    const int64_t k = kind == "permutation" ? n : shape.back(), rows = n / std::max<int64_t>(1, k);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> idx(static_cast<size_t>(width));
      for (int64_t i = 0; i < width; ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
        return rng.word(r * width + a) < rng.word(r * width + b);
      });
      for (int64_t j = 0; j < k; ++j) v[r * k + j] = static_cast<double>(idx[j]);
    }
  } else {
    ADD_FAILURE() << "unknown distribution " << dist.dump();
  }
  // In f64, rounded to f32, then to the dtype (input_synth.h's rule).
  const Tensor f64 = Tensor::copy_of(DType::kF64, shape, v.data());
  return tensor::is_float(dtype) ? f64.to(DType::kF32).to(dtype) : f64.to(dtype);
}

// The cpu backend, initialised once.
inline const hb_backend* backend() {
  static const hb_backend* be = [] {
    const hb_backend* b = h0_cpu_backend_entry();
    EXPECT_EQ(b->init(b->self, nullptr, "{}"), HB_OK) << b->last_error(b->self);
    return b;
  }();
  return be;
}

inline hb_tensor device_tensor(const hb_backend* be, DType dtype, const tensor::Shape& shape,
                               const void* host) {
  hb_tensor t{};
  t.dtype = static_cast<hb_dtype>(dtype);
  t.ndim = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  const size_t bytes = static_cast<size_t>(tensor::numel(shape)) * tensor::dtype_size(dtype);
  EXPECT_EQ(be->alloc(be->self, bytes, &t.data), HB_OK);
  if (host != nullptr) {
    EXPECT_EQ(be->copy_to_device(be->self, t.data, host, bytes), HB_OK);
  }
  return t;
}

// Runs `op` on the backend; fills `outputs` (already allocated host tensors) on HB_OK.
inline hb_status run_on_backend(const char* op, const std::vector<const Tensor*>& inputs,
                                std::vector<Tensor>& outputs, const Json& attrs) {
  const hb_backend* be = backend();
  std::vector<hb_tensor> in, out;
  for (const Tensor* t : inputs) {
    if (t != nullptr) in.push_back(device_tensor(be, t->dtype(), t->shape(), t->data()));
  }
  for (const Tensor& t : outputs) out.push_back(device_tensor(be, t.dtype(), t.shape(), nullptr));
  const std::string attrs_json = attrs.dump();
  const hb_status s = be->run_op(be->self, op, in.data(), static_cast<int32_t>(in.size()),
                                 out.data(), static_cast<int32_t>(out.size()), attrs_json.c_str());
  EXPECT_EQ(be->synchronize(be->self), HB_OK);
  for (size_t i = 0; s == HB_OK && i < out.size(); ++i) {
    EXPECT_EQ(
        be->copy_to_host(be->self, outputs[i].mutable_data(), out[i].data, outputs[i].nbytes()),
        HB_OK);
  }
  for (auto& t : in) be->free(be->self, t.data);
  for (auto& t : out) be->free(be->self, t.data);
  return s;
}

}  // namespace h0::test
