// Decompositions of ops into others, for backends that lack an op but have its parts. The
// heavy work runs on the backend; the host only moves small tensors (a transpose, a [T]
// vector of inverse norms, a broadcast). Intermediates are in the call's dtype, so a
// decomposed op may round more often than a native one.
#include <cmath>
#include <cstring>

#include "backend/executor.h"
#include "tensor/tensor.h"

namespace h0::backend {
namespace {

using tensor::DType;
using tensor::Tensor;

// A host tensor of `shape` filled with `value`, in `dtype`.
Tensor filled(DType dtype, const tensor::Shape& shape, float value) {
  Tensor f = Tensor::zeros(DType::kF32, shape);
  for (int64_t i = 0; i < f.numel(); ++i) f.mutable_data_as<float>()[i] = value;
  return f.to(dtype);
}

// swiglu(gate, up) = silu(gate) * up.
void swiglu(Backend& b, const std::vector<const DeviceTensor*>& in, const std::vector<DeviceTensor*>& out,
            const ops::Json&) {
  DeviceTensor act = b.allocate(in[0]->dtype(), in[0]->shape());
  b.run_op("silu", {in[0]}, {&act}, "{}");
  b.run_op("mul", {&act, in[1]}, {out[0]}, "{}");
}

// linear(x[T,K], w[N,K], bias[N]) = matmul(x, wᵀ) (+ add of the broadcast bias).
void linear(Backend& b, const std::vector<const DeviceTensor*>& in, const std::vector<DeviceTensor*>& out,
            const ops::Json&) {
  const Tensor w = b.download(*in[1]);
  const int64_t n = w.dim(0), k = w.dim(1);
  const size_t esize = tensor::dtype_size(w.dtype());
  Tensor wt = Tensor::zeros(w.dtype(), {k, n});
  const auto* src = static_cast<const std::byte*>(w.data());
  auto* dst = static_cast<std::byte*>(wt.mutable_data());
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) std::memcpy(dst + (c * n + r) * esize, src + (r * k + c) * esize, esize);
  }
  const DeviceTensor wt_dev = b.upload(wt);
  if (in.size() < 3) {
    b.run_op("matmul", {in[0], &wt_dev}, {out[0]}, "{}");
    return;
  }
  DeviceTensor product = b.allocate(out[0]->dtype(), out[0]->shape());
  b.run_op("matmul", {in[0], &wt_dev}, {&product}, "{}");
  const Tensor bias = b.download(*in[2]);
  const int64_t t = out[0]->shape()[0];
  Tensor broadcast = Tensor::zeros(bias.dtype(), {t, n});
  for (int64_t r = 0; r < t; ++r) {
    std::memcpy(static_cast<std::byte*>(broadcast.mutable_data()) + r * n * esize, bias.data(), n * esize);
  }
  const DeviceTensor bias_dev = b.upload(broadcast);
  b.run_op("add", {&product, &bias_dev}, {out[0]}, "{}");
}

// rmsnorm(x[T,D], w[D]): row sums of x*x by a matmul with ones, 1/sqrt(mean + eps) on the host
// ([T] values), broadcast back by matmuls with ones, then two muls.
void rmsnorm(Backend& b, const std::vector<const DeviceTensor*>& in, const std::vector<DeviceTensor*>& out,
             const ops::Json& attrs) {
  const DType dtype = in[0]->dtype();
  const int64_t t = in[0]->shape()[0], d = in[0]->shape()[1];
  DeviceTensor squares = b.allocate(dtype, {t, d});
  b.run_op("mul", {in[0], in[0]}, {&squares}, "{}");
  const DeviceTensor ones_col = b.upload(filled(dtype, {d, 1}, 1.0f));
  DeviceTensor sums = b.allocate(dtype, {t, 1});
  b.run_op("matmul", {&squares, &ones_col}, {&sums}, "{}");
  const Tensor sums_host = b.download(sums);
  const double eps = attrs.at("eps").get<double>();
  Tensor inv = Tensor::zeros(DType::kF32, {t, 1});
  for (int64_t r = 0; r < t; ++r) {
    inv.mutable_data_as<float>()[r] = static_cast<float>(1.0 / std::sqrt(sums_host.at(r) / static_cast<double>(d) + eps));
  }
  const DeviceTensor inv_dev = b.upload(inv.to(dtype));
  const DeviceTensor ones_row = b.upload(filled(dtype, {1, d}, 1.0f));
  DeviceTensor scale = b.allocate(dtype, {t, d});
  b.run_op("matmul", {&inv_dev, &ones_row}, {&scale}, "{}");
  DeviceTensor normed = b.allocate(dtype, {t, d});
  b.run_op("mul", {in[0], &scale}, {&normed}, "{}");
  const DeviceTensor ones_t = b.upload(filled(dtype, {t, 1}, 1.0f));
  const Tensor w = b.download(*in[1]);
  const DeviceTensor w_row = b.upload(w.reshape({1, d}));
  DeviceTensor w_broadcast = b.allocate(dtype, {t, d});
  b.run_op("matmul", {&ones_t, &w_row}, {&w_broadcast}, "{}");
  b.run_op("mul", {&normed, &w_broadcast}, {out[0]}, "{}");
}

}  // namespace

const std::vector<Decomposition>& decompositions() {
  static const std::vector<Decomposition> table = {
      {"swiglu", {"silu", "mul"}, &swiglu},
      {"linear", {"matmul", "add"}, &linear},
      {"rmsnorm", {"mul", "matmul"}, &rmsnorm},
  };
  return table;
}

}  // namespace h0::backend
