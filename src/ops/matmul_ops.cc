// matmul, linear and linear_widen.
//   matmul(a[M,K], b[K,N]) = c[M,N]                         flops 2MKN
//   linear(x[T,K], w[N,K], optional bias[N]) = x·wᵀ + bias  flops 2TKN (+ TN with bias),
//     w stored [out, in] as torch.nn.Linear keeps it
//   linear_widen(x[T,K], w[N,K], optional bias[N]) = linear with w in attr `dtype` (bf16, f16
//     or f32) whatever x's float dtype: a weight kept as its checkpoint stores it (bf16) while the
//     model runs in f32, widened inside the kernel, tile by tile. bf16 and f16 widen to f32
//     exactly, so the result is linear's on the widened weight; bytes count w at its own size.
// Dot products over K in f64; one rounding to the output dtype. Reduction length K.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

// c[M,N] = a[M,K] · op(b), where op(b) is b[K,N] or, with `b_transposed`, b[N,K]ᵀ.
void gemm_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                    bool b_transposed) {
  const int64_t m = in[0]->dim(0), k = in[0]->dim(1);
  const int64_t n = b_transposed ? in[1]->dim(0) : in[1]->dim(1);
  const auto a = util::to_f64(*in[0]);
  const auto b = util::to_f64(*in[1]);
  const auto bias =
      in.size() > 2 && in[2] != nullptr ? util::to_f64(*in[2]) : std::vector<double>();
  // op(b)'s columns eight at a time, interleaved (packed[p·8 + r] = op(b)[p, j0 + r]): eight dots
  // side by side on contiguous memory, each still summed over p in order (a plain loop's f64
  // result, bit for bit). A ragged last group computes its missing columns on zeros.
  std::vector<double> c(static_cast<size_t>(m * n));
  std::vector<double> packed(static_cast<size_t>(k * 8));
  for (int64_t j0 = 0; j0 < n; j0 += 8) {
    const int64_t w = std::min<int64_t>(8, n - j0);
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t r = 0; r < 8; ++r) {
        const int64_t j = j0 + r;
        packed[static_cast<size_t>(p * 8 + r)] = r >= w         ? 0.0
                                                 : b_transposed ? b[static_cast<size_t>(j * k + p)]
                                                                : b[static_cast<size_t>(p * n + j)];
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      const double* ai = &a[static_cast<size_t>(i * k)];
      // Two columns per vector, lane by lane the scalar x·b then + (no reassociation, no FMA).
      typedef double Pair __attribute__((vector_size(16)));
      Pair s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0;
      for (int64_t p = 0; p < k; ++p) {
        const Pair x = {ai[p], ai[p]};
        const double* col = &packed[static_cast<size_t>(p * 8)];
        Pair b0, b1, b2, b3;
        std::memcpy(&b0, col, sizeof b0);
        std::memcpy(&b1, col + 2, sizeof b1);
        std::memcpy(&b2, col + 4, sizeof b2);
        std::memcpy(&b3, col + 6, sizeof b3);
        s0 += x * b0;
        s1 += x * b1;
        s2 += x * b2;
        s3 += x * b3;
      }
      const double sum[8] = {s0[0], s0[1], s1[0], s1[1], s2[0], s2[1], s3[0], s3[1]};
      for (int64_t r = 0; r < w; ++r) {
        double acc = sum[r];
        if (!bias.empty()) acc += bias[static_cast<size_t>(j0 + r)];
        c[static_cast<size_t>(i * n + j0 + r)] = acc;
      }
    }
  }
  util::from_f64(c, out[0]);
}

// linear's and linear_widen's default inputs: w's rows of unit norm in expectation.
Json linear_default_inputs(const OpDef& op, const Dims& dims) {
  const double k = static_cast<double>(util::dim(op, dims, "K"));
  return Json{{"x", {{"normal", {{"mean", 0}, {"std", 1}}}}},
              {"w", {{"normal", {{"mean", 0}, {"std", 1 / std::sqrt(k)}}}}},
              {"bias", {{"normal", {{"mean", 0}, {"std", 0.1}}}}}};
}

// linear's and linear_widen's operands: x[T, K] in `x_dtype`, w[N, K] in `w_dtype`, bias[N].
std::vector<TensorDesc> linear_descs(const OpDef& op, const Dims& dims, DType x_dtype,
                                     DType w_dtype, const std::set<std::string>& with) {
  const int64_t t = util::dim(op, dims, "T"), k = util::dim(op, dims, "K"),
                n = util::dim(op, dims, "N");
  std::vector<TensorDesc> in = {desc(x_dtype, {t, k}), desc(w_dtype, {n, k})};
  if (with.count("bias")) in.push_back(desc(x_dtype, {n}));
  return in;
}

// linear's and linear_widen's output: y[T, N] in x's dtype.
std::vector<TensorDesc> linear_infer(const OpDef& op, const std::vector<TensorDesc>& in) {
  const TensorDesc bias = in.size() > 2 ? in[2] : util::absent();
  return {util::linear_output(op, in[0], in[1], bias)};
}

// linear's and linear_widen's: x·wᵀ (+ bias), w as [N, K].
Cost linear_cost(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) {
  return util::linear_cost(in, out, in.size() > 2 && in[2].present);
}
void linear_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json&) {
  gemm_reference(in, out, true);
}

}  // namespace

const OpDef& matmul_op() {
  static const OpDef op = {
      .name = "matmul",
      .inputs = {{"a", OperandKind::kFloat}, {"b", OperandKind::kFloat}},
      .outputs = {{"c", OperandKind::kFloat}},
      .attrs = {},
      .dims = {"M", "K", "N"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            const OpDef& self = matmul_op();
            const int64_t m = util::dim(self, dims, "M"), k = util::dim(self, dims, "K"),
                          n = util::dim(self, dims, "N");
            return std::vector<TensorDesc>{desc(dtype, {m, k}), desc(dtype, {k, n})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json&) {
            const OpDef& self = matmul_op();
            const TensorDesc &a = in[0], &b = in[1];
            util::require_shape(self, a.shape.size() == 2, "a", a, "[M, K]");
            util::require_shape(self, b.shape.size() == 2 && b.shape[0] == a.shape[1], "b", b,
                                "[K, N] with K = " + std::to_string(a.shape[1]));
            return std::vector<TensorDesc>{desc(a.dtype, {a.shape[0], b.shape[1]})};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            const double m = static_cast<double>(in[0].shape[0]),
                         k = static_cast<double>(in[0].shape[1]),
                         n = static_cast<double>(in[1].shape[1]);
            return Cost{2 * m * k * n, util::bytes_of(in) + util::bytes_of(out), k};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json&) { gemm_reference(in, out, false); },
      .default_inputs =
          [](const Dims& dims, const Json&) {
            const double k = static_cast<double>(util::dim(matmul_op(), dims, "K"));
            return Json{{"a", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"b", {{"normal", {{"mean", 0}, {"std", 1 / std::sqrt(k)}}}}}};
          },
  };
  return op;
}

const OpDef& linear_op() {
  static const OpDef op = {
      .name = "linear",
      .inputs = {{"x", OperandKind::kFloat},
                 {"w", OperandKind::kFloat},
                 {"bias", OperandKind::kFloat, true}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {},
      .dims = {"T", "K", "N"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>& with) {
            return linear_descs(linear_op(), dims, dtype, dtype, with);
          },
      .infer = [](const std::vector<TensorDesc>& in,
                  const Json&) { return linear_infer(linear_op(), in); },
      .cost = linear_cost,
      .reference = linear_reference,
      .default_inputs = [](const Dims& dims,
                           const Json&) { return linear_default_inputs(linear_op(), dims); },
  };
  return op;
}

const OpDef& linear_widen_op() {
  static const OpDef op = {
      .name = "linear_widen",
      .inputs = {{"x", OperandKind::kFloat},
                 {"w", OperandKind::kStored},
                 {"bias", OperandKind::kFloat, true}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {{"dtype", AttrType::kString, "\"bf16\"", "bf16|f16|f32",
                 "dtype of w (as stored), widened to x's inside the kernel"}},
      .dims = {"T", "K", "N"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json& attrs, DType dtype, DType,
             const std::set<std::string>& with) {
            return linear_descs(linear_widen_op(), dims, dtype,
                                *tensor::parse_dtype(util::attr_s(attrs, "dtype")), with);
          },
      .infer = [](const std::vector<TensorDesc>& in,
                  const Json&) { return linear_infer(linear_widen_op(), in); },
      .cost = linear_cost,
      .reference = linear_reference,
      .default_inputs = [](const Dims& dims,
                           const Json&) { return linear_default_inputs(linear_widen_op(), dims); },
  };
  return op;
}

}  // namespace h0::ops
