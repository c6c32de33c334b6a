// argmax and sample: logits to token ids, identical on every platform.
//   argmax(x[T,V]) = ids[T] i64, the first index of the row's maximum (a NaN counts as the
//     maximum, as torch.argmax).
//   sample(logits[T,V]) = ids[T] i64. Row r: temperature <= 0 is argmax. Else z = logits /
//     temperature (f64); the indices by z descending, ties -> lower index; top_k > 0 keeps the
//     first top_k; p = exp(z − max z) normalised over the kept; top_p < 1 keeps the shortest
//     prefix with cumulative p >= top_p (at least one) and renormalises; u = Philox(seed,
//     stream = step).uniform(r); the first kept index whose cumulative p exceeds u (the last
//     kept if none). A NaN logit is an InputError.
// Both ~V flops per row (sample: a few more, plus the sort); reduction V.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/op_list.h"
#include "ops/op_util.h"
#include "tensor/philox.h"

namespace h0::ops {
namespace {

using util::desc;

std::vector<TensorDesc> logits_operands(const OpDef& op, const Dims& dims, DType dtype) {
  return {desc(dtype, {util::dim(op, dims, "T"), util::dim(op, dims, "V")})};
}

std::vector<TensorDesc> ids_infer(const OpDef& op, const std::vector<TensorDesc>& in) {
  const TensorDesc& x = in[0];
  util::require_shape(op, x.shape.size() == 2 && x.shape[1] >= 1, op.inputs[0].name, x,
                      "[T, V] with V >= 1");
  return {desc(DType::kI64, {x.shape[0]})};
}

Cost ids_cost(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
              double flops_per_element) {
  return {flops_per_element * static_cast<double>(tensor::numel(in[0].shape)),
          util::bytes_of(in) + util::bytes_of(out), static_cast<double>(in[0].shape[1])};
}

// Index of the first maximum of row[0..v); NaN beats everything.
int64_t argmax_row(const double* row, int64_t v) {
  int64_t best = 0;
  for (int64_t i = 1; i < v; ++i) {
    if (std::isnan(row[best])) break;
    if (std::isnan(row[i]) || row[i] > row[best]) best = i;
  }
  return best;
}

struct SampleConfig {
  double temperature;
  int64_t top_k;
  double top_p;
  uint64_t seed, step;
};

// The attrs of sample, checked: top_k >= 0, top_p in (0, 1], seed and step >= 0.
SampleConfig sample_config(const Json& a) {
  const OpDef& op = sample_op();
  const int64_t top_k = util::attr_i(a, "top_k"), seed = util::attr_i(a, "seed"),
                step = util::attr_i(a, "step");
  const double top_p = util::attr_f(a, "top_p");
  if (top_k < 0) {
    util::fail(op, "attr 'top_k' must be >= 0 (0 = off), got " + std::to_string(top_k));
  }
  if (!(top_p > 0 && top_p <= 1)) {
    util::fail(op, "attr 'top_p' must be in (0, 1], got " + a.at("top_p").dump());
  }
  if (seed < 0) util::fail(op, "attr 'seed' must be >= 0, got " + std::to_string(seed));
  if (step < 0) util::fail(op, "attr 'step' must be >= 0, got " + std::to_string(step));
  return {util::attr_f(a, "temperature"), top_k, top_p, static_cast<uint64_t>(seed),
          static_cast<uint64_t>(step)};
}

// Row r of logits, v wide.
int64_t sample_row(const double* row, int64_t v, int64_t r, const SampleConfig& c) {
  if (c.temperature <= 0) return argmax_row(row, v);
  std::vector<double> z(row, row + v);
  for (int64_t i = 0; i < v; ++i) {
    if (std::isnan(z[static_cast<size_t>(i)])) {
      util::fail(sample_op(),
                 "logit " + std::to_string(i) + " of row " + std::to_string(r) + " is NaN");
    }
    z[static_cast<size_t>(i)] /= c.temperature;
  }
  std::vector<int64_t> order(static_cast<size_t>(v));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return z[static_cast<size_t>(a)] > z[static_cast<size_t>(b)];
  });
  if (c.top_k > 0 && c.top_k < v) order.resize(static_cast<size_t>(c.top_k));
  const double zmax = z[static_cast<size_t>(order[0])];
  std::vector<double> p(order.size());
  double sum = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const double zi = z[static_cast<size_t>(order[i])];
    p[i] = zi == zmax ? 1.0 : std::exp(zi - zmax);  // == also covers zmax = ±inf
    sum += p[i];
  }
  for (double& pi : p) pi /= sum;
  if (c.top_p < 1) {
    size_t keep = 0;
    double cumulative = 0;
    while (keep < p.size() && (keep == 0 || cumulative < c.top_p)) cumulative += p[keep++];
    p.resize(keep);
    order.resize(keep);
    for (double& pi : p) pi /= cumulative;
  }
  const double u =
      static_cast<double>(tensor::Philox(c.seed, c.step).uniform(static_cast<uint64_t>(r)));
  double cumulative = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    cumulative += p[i];
    if (cumulative > u) return order[i];
  }
  return order.back();
}

// x is (T, V); writes ids (T) with pick(row, V, r).
template <typename Pick>
void ids_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                   Pick pick) {
  const int64_t t = in[0]->dim(0), v = in[0]->dim(1);
  const auto x = util::to_f64(*in[0]);
  std::vector<double> ids(static_cast<size_t>(t));
  for (int64_t r = 0; r < t; ++r) {
    ids[static_cast<size_t>(r)] = static_cast<double>(pick(&x[static_cast<size_t>(r * v)], v, r));
  }
  util::from_f64(ids, out[0]);
}

}  // namespace

const OpDef& argmax_op() {
  static const OpDef op = {
      .name = "argmax",
      .inputs = {{"x", OperandKind::kFloat}},
      .outputs = {{"ids", OperandKind::kI64}},
      .attrs = {},
      .dims = {"T", "V"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kExact,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            return logits_operands(argmax_op(), dims, dtype);
          },
      .infer = [](const std::vector<TensorDesc>& in,
                  const Json&) { return ids_infer(argmax_op(), in); },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return ids_cost(in, out, 1); },
      .reference =
          [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, const Json&) {
            ids_reference(in, out,
                          [](const double* row, int64_t v, int64_t) { return argmax_row(row, v); });
          },
      // Integral values from a small range: ties are common, and must go to the lowest index.
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"x", {{"ints", {{"low", -8}, {"high", 8}}}}}};
          },
  };
  return op;
}

const OpDef& sample_op() {
  static const OpDef op = {
      .name = "sample",
      .inputs = {{"logits", OperandKind::kFloat}},
      .outputs = {{"ids", OperandKind::kI64}},
      .attrs = {{"temperature", AttrType::kFloat, "1.0", nullptr,
                 "logits are divided by it; <= 0 = argmax"},
                {"top_k", AttrType::kInt, "0", nullptr, "keep the k most likely tokens; 0 = off"},
                {"top_p", AttrType::kFloat, "1.0", nullptr,
                 "keep the smallest prefix with this mass"},
                {"seed", AttrType::kInt, "0", nullptr, "Philox key"},
                {"step", AttrType::kInt, "0", nullptr, "Philox stream: the decoding step"}},
      .dims = {"T", "V"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kExact,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            return logits_operands(sample_op(), dims, dtype);
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            sample_config(attrs);  // validates the attrs
            return ids_infer(sample_op(), in);
          },
      .cost = [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                 const Json&) { return ids_cost(in, out, 5); },
      .reference =
          [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, const Json& a) {
            const SampleConfig c = sample_config(a);
            ids_reference(in, out, [&](const double* row, int64_t v, int64_t r) {
              return sample_row(row, v, r, c);
            });
          },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"logits", {{"normal", {{"mean", 0}, {"std", 2}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
