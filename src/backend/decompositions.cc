// Decompositions of ops into others, for backends that lack an op but have its parts. The
// heavy work runs on the backend; the host only moves small tensors (a transpose, a [T]
// vector of inverse norms, a broadcast), except scaled_linear and linear_widen, whose weight the
// host dequantizes or widens (the catalogue's dequantize reference, block2d) before the backend's
// linear runs (in f32 where the backend has it). Intermediates are in the call's dtype, so a
// decomposed op may round more often than a native one.
#include <cmath>
#include <cstring>

#include "backend/fallback.h"
#include "ops/op_list.h"
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
void swiglu(Backend& b, const std::vector<const DeviceTensor*>& in,
            const std::vector<DeviceTensor*>& out, const ops::Json&) {
  DeviceTensor act = b.allocate(in[0]->dtype(), in[0]->shape());
  b.run_op("silu", {in[0]}, {&act}, "{}");
  b.run_op("mul", {&act, in[1]}, {out[0]}, "{}");
}

// linear(x[T,K], w[N,K], bias[N]) = matmul(x, wᵀ) (+ add of the broadcast bias).
void linear(Backend& b, const std::vector<const DeviceTensor*>& in,
            const std::vector<DeviceTensor*>& out, const ops::Json&) {
  const Tensor w = b.download(*in[1]);
  const int64_t n = w.dim(0), k = w.dim(1);
  const size_t esize = tensor::dtype_size(w.dtype());
  Tensor wt = Tensor::zeros(w.dtype(), {k, n});
  const auto* src = static_cast<const std::byte*>(w.data());
  auto* dst = static_cast<std::byte*>(wt.mutable_data());
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c)
      std::memcpy(dst + (c * n + r) * esize, src + (r * k + c) * esize, esize);
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
    std::memcpy(static_cast<std::byte*>(broadcast.mutable_data()) + r * n * esize, bias.data(),
                n * esize);
  }
  const DeviceTensor bias_dev = b.upload(broadcast);
  b.run_op("add", {&product, &bias_dev}, {out[0]}, "{}");
}

// linear_widen(x, w, bias) = linear(x, w widened to x's dtype, bias): the widening on the host
// (exact for bf16 and f16 into f32), the product on the backend.
void linear_widen(Backend& b, const std::vector<const DeviceTensor*>& in,
                  const std::vector<DeviceTensor*>& out, const ops::Json&) {
  const DeviceTensor w = b.upload(b.download(*in[1]).to(in[0]->dtype()));
  std::vector<const DeviceTensor*> args = {in[0], &w};
  if (in.size() > 2 && in[2] != nullptr) args.push_back(in[2]);
  b.run_op("linear", args, {out[0]}, "{}");
}

// scaled_linear(x, w, w_scale, bias) = linear(x', dequantize(w, w_scale), bias): the weight
// dequantized on the host by the block rule (the catalogue's dequantize reference, block2d); with
// act_quant dynamic, x' is x quantized per token (f8_e4m3, groups of block_k) and taken back, also
// on the host. The linear runs in f32 when the backend has it (x and the bias widened, the result
// rounded once to the call's dtype, as a native kernel does): a bf16 copy of the dequantized
// weight would round every weight once more.
void scaled_linear(Backend& b, const std::vector<const DeviceTensor*>& in,
                   const std::vector<DeviceTensor*>& out, const ops::Json& attrs) {
  const DType dtype = in[0]->dtype();
  const DType work = b.supports("linear", DType::kF32) ? DType::kF32 : dtype;
  const auto reference = [](const ops::OpDef& op, const std::vector<const Tensor*>& args,
                            const std::vector<Tensor*>& results, const ops::Json& a) {
    op.reference(args, results, ops::validate_attrs(op, a));
  };
  const Tensor w = b.download(*in[1]), scale = b.download(*in[2]);
  Tensor dense = Tensor::zeros(work, w.shape());
  reference(ops::dequantize_op(), {&w, &scale}, {&dense},
            {{"dtype", attrs.at("dtype")},
             {"granularity", "block2d"},
             {"block", attrs.at("block_k")},
             {"block_rows", attrs.at("block_n")},
             {"out_dtype", tensor::dtype_name(work)}});
  Tensor x = b.download(*in[0]);
  if (attrs.at("act_quant") == "dynamic") {
    const int64_t bk = attrs.at("block_k").get<int64_t>();
    const ops::Json group = {{"dtype", "f8_e4m3"}, {"granularity", "block"}, {"block", bk}};
    Tensor q = Tensor::zeros(DType::kF8E4M3, x.shape());
    Tensor s = Tensor::zeros(DType::kF32, {x.dim(0), (x.dim(1) + bk - 1) / bk});
    reference(ops::quantize_op(), {&x}, {&q, &s}, group);
    ops::Json back = group;
    back["out_dtype"] = tensor::dtype_name(work);
    x = Tensor::zeros(work, x.shape());
    reference(ops::dequantize_op(), {&q, &s}, {&x}, back);
  }
  const DeviceTensor x_dev = b.upload(x.to(work)), dense_dev = b.upload(dense);
  std::vector<const DeviceTensor*> args = {&x_dev, &dense_dev};
  DeviceTensor bias_dev;
  if (in.size() > 3 && in[3] != nullptr) {
    bias_dev = b.upload(b.download(*in[3]).to(work));
    args.push_back(&bias_dev);
  }
  if (work == dtype) {
    b.run_op("linear", args, {out[0]}, "{}");
    return;
  }
  DeviceTensor y = b.allocate(work, out[0]->shape());
  b.run_op("linear", args, {&y}, "{}");
  b.upload_into(b.download(y).to(dtype), out[0]);
}

// rmsnorm(x[T,D], w[D]): row sums of x*x by a matmul with ones, 1/sqrt(mean + eps) on the host
// ([T] values), broadcast back by matmuls with ones, then two muls.
void rmsnorm(Backend& b, const std::vector<const DeviceTensor*>& in,
             const std::vector<DeviceTensor*>& out, const ops::Json& attrs) {
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
    inv.mutable_data_as<float>()[r] =
        static_cast<float>(1.0 / std::sqrt(sums_host.at(r) / static_cast<double>(d) + eps));
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
      {"swiglu", {"silu", "mul"}, &swiglu},        {"linear", {"matmul", "add"}, &linear},
      {"rmsnorm", {"mul", "matmul"}, &rmsnorm},    {"scaled_linear", {"linear"}, &scaled_linear},
      {"linear_widen", {"linear"}, &linear_widen},
  };
  return table;
}

}  // namespace h0::backend
