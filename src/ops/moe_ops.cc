// Mixture-of-experts routing and expert FFNs.
//   moe_gate(logits[T,E], optional bias[E]) = weights[T,k] f32, ids[T,k] i32
//     scores = softmax(logits) over E, or sigmoid(logits) (attr scoring); sel = scores + bias
//     (the bias only steers selection, as DeepSeek-V3's e_score_correction_bias).
//     n_group > 1 (DeepSeek-V3): E splits into n_group contiguous groups; a group scores the
//     sum of its top min(2, E/n_group) sel values; the best topk_group groups stay (ties ->
//     lower group id) and the other groups' experts are out.
//     The top_k experts by sel, descending, ties -> lower expert id, in that order;
//     weights = their unbiased scores, / their sum if normalize, × routed_scaling_factor.
//     flops T·E·(4 + top_k); reduction E (the softmax sum).
//   moe_experts(x[T,D], weights[T,k] f32, ids[T,k] i32, w_gate[E,F,D], w_up[E,F,D],
//               w_down[E,D,F]) = y[T,D]
//     y[t] = Σ_j weights[t,j] · w_down[e] (silu(w_gate[e] x[t]) · w_up[e] x[t]), e = ids[t,j]
//     (the SwiGLU experts of Mixtral / Qwen-MoE / DeepSeek). An id outside [0, E) is an
//     InputError. flops T·k·(6·F·D + 5·F + 2·D); reduction max(D, F).
//     Optional biases b_gate[E,F], b_up[E,F], b_down[E,D] (all three: GPT-OSS's) add to each
//     projection. attr activation "clamped_swiglu" (GPT-OSS): with g, u the biased gate and up,
//     g' = min(g, limit), u' = clamp(u, −limit, limit), h = (u' + 1) · g' · sigmoid(alpha · g').
// All in f64, one rounding per output.
#include <algorithm>
#include <cmath>

#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

struct GateConfig {
  int64_t top_k, n_group, topk_group;
  bool sigmoid, normalize;
  double routed_scaling_factor;
};

GateConfig gate_config(const Json& a) {
  return {util::attr_i(a, "top_k"),      util::attr_i(a, "n_group"),
          util::attr_i(a, "topk_group"), util::attr_s(a, "scoring") == "sigmoid",
          util::attr_b(a, "normalize"),  util::attr_f(a, "routed_scaling_factor")};
}

// Checks the routing attrs against E experts; throws InputError naming the attr.
void check_gate_config(const GateConfig& c, int64_t e) {
  const OpDef& op = moe_gate_op();
  if (c.n_group < 1 || e % c.n_group != 0) {
    util::fail(op, "attr 'n_group' must divide E = " + std::to_string(e) + ", got " +
                       std::to_string(c.n_group));
  }
  if (c.topk_group < 1 || c.topk_group > c.n_group) {
    util::fail(op, "attr 'topk_group' must be in [1, n_group = " + std::to_string(c.n_group) +
                       "], got " + std::to_string(c.topk_group));
  }
  const int64_t eligible = c.topk_group * (e / c.n_group);
  if (c.top_k < 1 || c.top_k > eligible) {
    util::fail(op, "attr 'top_k' must be in [1, " + std::to_string(eligible) +
                       "] (the experts of topk_group groups), got " + std::to_string(c.top_k));
  }
}

// The k best of `candidates` (ascending ids) by v, descending; ties -> lower id (earlier).
// A plain selection scan: total order not needed, so NaN cannot break it.
std::vector<int64_t> top_k_of(const std::vector<double>& v, std::vector<int64_t> candidates,
                              int64_t k) {
  std::vector<int64_t> picked;
  while (static_cast<int64_t>(picked.size()) < k && !candidates.empty()) {
    size_t best = 0;
    for (size_t i = 1; i < candidates.size(); ++i) {
      if (v[static_cast<size_t>(candidates[i])] > v[static_cast<size_t>(candidates[best])]) {
        best = i;
      }
    }
    picked.push_back(candidates[best]);
    candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return picked;
}

// logits is (T, E); bias is (E) or absent. Writes weights (T, k) and ids (T, k).
void gate_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                    const GateConfig& c) {
  const int64_t t = in[0]->dim(0), e = in[0]->dim(1), group_size = e / c.n_group;
  const auto logits = util::to_f64(*in[0]);
  const auto bias =
      in.size() > 1 && in[1] != nullptr ? util::to_f64(*in[1]) : std::vector<double>();
  std::vector<double> weights, ids;
  for (int64_t r = 0; r < t; ++r) {
    std::vector<double> scores(logits.begin() + r * e, logits.begin() + (r + 1) * e);
    if (c.sigmoid) {
      for (double& s : scores) s = util::sigmoid(s);
    } else {
      util::softmax_inplace(scores.data(), e);
    }
    std::vector<double> sel = scores;
    for (size_t i = 0; i < bias.size(); ++i) sel[i] += bias[i];
    std::vector<int64_t> candidates;
    if (c.n_group > 1) {
      std::vector<double> group_scores(static_cast<size_t>(c.n_group));
      std::vector<int64_t> groups;
      for (int64_t g = 0; g < c.n_group; ++g) {
        std::vector<int64_t> members;
        for (int64_t i = 0; i < group_size; ++i) members.push_back(g * group_size + i);
        for (int64_t m : top_k_of(sel, members, std::min<int64_t>(2, group_size))) {
          group_scores[static_cast<size_t>(g)] += sel[static_cast<size_t>(m)];
        }
        groups.push_back(g);
      }
      std::vector<int64_t> kept = top_k_of(group_scores, groups, c.topk_group);
      std::sort(kept.begin(), kept.end());
      for (int64_t g : kept) {
        for (int64_t i = 0; i < group_size; ++i) candidates.push_back(g * group_size + i);
      }
    } else {
      for (int64_t i = 0; i < e; ++i) candidates.push_back(i);
    }
    const std::vector<int64_t> picked = top_k_of(sel, candidates, c.top_k);
    double sum = 0;
    for (int64_t id : picked) sum += scores[static_cast<size_t>(id)];
    for (int64_t id : picked) {
      double w = scores[static_cast<size_t>(id)];
      if (c.normalize) w /= sum;
      weights.push_back(w * c.routed_scaling_factor);
      ids.push_back(static_cast<double>(id));
    }
  }
  util::from_f64(weights, out[0]);
  util::from_f64(ids, out[1]);
}

struct ExpertActivation {
  bool clamped;  // GPT-OSS's clamped SwiGLU; else silu(g)·u
  double alpha, limit;
  double operator()(double g, double u) const {
    if (!clamped) return util::silu(g) * u;
    g = std::min(g, limit);
    u = std::clamp(u, -limit, limit);
    return (u + 1) * g * util::sigmoid(alpha * g);
  }
};

ExpertActivation expert_activation(const Json& a) {
  return {util::attr_s(a, "activation") == "clamped_swiglu", util::attr_f(a, "alpha"),
          util::attr_f(a, "limit")};
}

// x (T, D), weights (T, k), ids (T, k), w_gate and w_up (E, F, D), w_down (E, D, F), optional
// b_gate and b_up (E, F), b_down (E, D) -> y (T, D).
void experts_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                       const ExpertActivation& act) {
  const int64_t t = in[0]->dim(0), d = in[0]->dim(1), k = in[1]->dim(1);
  const int64_t e = in[3]->dim(0), f = in[3]->dim(1);
  const auto x = util::to_f64(*in[0]);
  const auto weights = util::to_f64(*in[1]);
  const auto ids = util::to_f64(*in[2]);
  const auto w_gate = util::to_f64(*in[3]);
  const auto w_up = util::to_f64(*in[4]);
  const auto w_down = util::to_f64(*in[5]);
  const bool biased = in.size() > 8 && in[6] != nullptr;
  const auto b_gate = biased ? util::to_f64(*in[6]) : std::vector<double>();
  const auto b_up = biased ? util::to_f64(*in[7]) : std::vector<double>();
  const auto b_down = biased ? util::to_f64(*in[8]) : std::vector<double>();
  std::vector<double> y(static_cast<size_t>(t * d), 0.0), h(static_cast<size_t>(f));
  for (int64_t r = 0; r < t; ++r) {
    const double* xr = &x[static_cast<size_t>(r * d)];
    for (int64_t j = 0; j < k; ++j) {
      const auto id = static_cast<int64_t>(ids[static_cast<size_t>(r * k + j)]);
      if (id < 0 || id >= e) {
        util::fail(moe_experts_op(), "id " + std::to_string(id) + " at position [" +
                                         std::to_string(r) + ", " + std::to_string(j) +
                                         "] is outside [0, " + std::to_string(e) + ")");
      }
      for (int64_t i = 0; i < f; ++i) {
        const double* g_row = &w_gate[static_cast<size_t>((id * f + i) * d)];
        const double* u_row = &w_up[static_cast<size_t>((id * f + i) * d)];
        double g = biased ? b_gate[static_cast<size_t>(id * f + i)] : 0,
               u = biased ? b_up[static_cast<size_t>(id * f + i)] : 0;
        for (int64_t c = 0; c < d; ++c) {
          g += g_row[c] * xr[c];
          u += u_row[c] * xr[c];
        }
        h[static_cast<size_t>(i)] = act(g, u);
      }
      const double w = weights[static_cast<size_t>(r * k + j)];
      for (int64_t c = 0; c < d; ++c) {
        const double* d_row = &w_down[static_cast<size_t>((id * d + c) * f)];
        double acc = biased ? b_down[static_cast<size_t>(id * d + c)] : 0;
        for (int64_t i = 0; i < f; ++i) acc += d_row[i] * h[static_cast<size_t>(i)];
        y[static_cast<size_t>(r * d + c)] += w * acc;
      }
    }
  }
  util::from_f64(y, out[0]);
}

Json normal(double std) { return {{"normal", {{"mean", 0}, {"std", std}}}}; }

}  // namespace

const OpDef& moe_gate_op() {
  static const OpDef op = {
      .name = "moe_gate",
      .inputs = {{"logits", OperandKind::kFloat}, {"bias", OperandKind::kFloat, true}},
      .outputs = {{"weights", OperandKind::kF32}, {"ids", OperandKind::kI32}},
      .attrs = {{"top_k", AttrType::kInt, "2", nullptr, "experts per token"},
                {"scoring", AttrType::kString, "\"softmax\"", "softmax|sigmoid",
                 "logits -> scores"},
                {"normalize", AttrType::kBool, "false", nullptr,
                 "divide the k weights by their sum"},
                {"n_group", AttrType::kInt, "1", nullptr, "expert groups (DeepSeek-V3); 1 = none"},
                {"topk_group", AttrType::kInt, "1", nullptr, "groups kept per token"},
                {"routed_scaling_factor", AttrType::kFloat, "1.0", nullptr,
                 "multiplies the weights last"}},
      .dims = {"T", "E"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kTranscendental,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>& with) {
            const OpDef& self = moe_gate_op();
            const int64_t t = util::dim(self, dims, "T"), e = util::dim(self, dims, "E");
            std::vector<TensorDesc> in = {desc(dtype, {t, e})};
            if (with.count("bias")) in.push_back(desc(dtype, {e}));
            return in;
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = moe_gate_op();
            const TensorDesc& logits = in[0];
            const TensorDesc bias = in.size() > 1 ? in[1] : util::absent();
            util::require_shape(self, logits.shape.size() == 2, "logits", logits, "[T, E]");
            const int64_t e = logits.shape[1];
            if (bias.present) {
              util::require_shape(self, bias.shape == Shape{e}, "bias", bias,
                                  "[E] = [" + std::to_string(e) + "]");
            }
            const GateConfig c = gate_config(attrs);
            check_gate_config(c, e);
            return std::vector<TensorDesc>{desc(DType::kF32, {logits.shape[0], c.top_k}),
                                           desc(DType::kI32, {logits.shape[0], c.top_k})};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
             const Json& attrs) {
            const double t = static_cast<double>(in[0].shape[0]),
                         e = static_cast<double>(in[0].shape[1]);
            const double k = static_cast<double>(util::attr_i(attrs, "top_k"));
            return Cost{t * e * (4 + k), util::bytes_of(in) + util::bytes_of(out), e};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { gate_reference(in, out, gate_config(a)); },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"logits", normal(1)}, {"bias", normal(0.1)}};
          },
  };
  return op;
}

const OpDef& moe_experts_op() {
  static const OpDef op = {
      .name = "moe_experts",
      .inputs = {{"x", OperandKind::kFloat},
                 {"weights", OperandKind::kF32},
                 {"ids", OperandKind::kI32},
                 {"w_gate", OperandKind::kFloat},
                 {"w_up", OperandKind::kFloat},
                 {"w_down", OperandKind::kFloat},
                 {"b_gate", OperandKind::kFloat, true},
                 {"b_up", OperandKind::kFloat, true},
                 {"b_down", OperandKind::kFloat, true}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {{"activation", AttrType::kString, "\"silu\"", "silu|clamped_swiglu",
                 "silu(g)·u, or GPT-OSS's (clamp(u) + 1)·g'·sigmoid(alpha·g'), g' = min(g, limit)"},
                {"alpha", AttrType::kFloat, "1.702", nullptr, "clamped_swiglu's sigmoid slope"},
                {"limit", AttrType::kFloat, "7.0", nullptr, "clamped_swiglu's clamp"}},
      .dims = {"T", "D", "F", "E", "k"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>& with) {
            const OpDef& self = moe_experts_op();
            const int64_t t = util::dim(self, dims, "T"), d = util::dim(self, dims, "D"),
                          f = util::dim(self, dims, "F"), e = util::dim(self, dims, "E"),
                          k = util::dim(self, dims, "k");
            std::vector<TensorDesc> in = {desc(dtype, {t, d}),       desc(DType::kF32, {t, k}),
                                          desc(DType::kI32, {t, k}), desc(dtype, {e, f, d}),
                                          desc(dtype, {e, f, d}),    desc(dtype, {e, d, f})};
            if (with.count("b_gate") || with.count("b_up") ||
                with.count("b_down")) {  // all three or none
              in.push_back(desc(dtype, {e, f}));
              in.push_back(desc(dtype, {e, f}));
              in.push_back(desc(dtype, {e, d}));
            }
            return in;
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json&) {
            const OpDef& self = moe_experts_op();
            const TensorDesc &x = in[0], &weights = in[1], &ids = in[2], &w_gate = in[3],
                             &w_up = in[4], &w_down = in[5];
            util::require_shape(self, x.shape.size() == 2, "x", x, "[T, D]");
            const int64_t t = x.shape[0], d = x.shape[1];
            util::require_shape(self, weights.shape.size() == 2 && weights.shape[0] == t, "weights",
                                weights, "[T, k] with T = " + std::to_string(t));
            util::require_shape(self, ids.shape == weights.shape, "ids", ids,
                                "[T, k] = " + tensor::shape_string(weights.shape));
            util::require_shape(self, w_gate.shape.size() == 3 && w_gate.shape[2] == d, "w_gate",
                                w_gate, "[E, F, D] with D = " + std::to_string(d));
            util::require_shape(self, w_up.shape == w_gate.shape, "w_up", w_up,
                                "[E, F, D] = " + tensor::shape_string(w_gate.shape));
            const Shape down = {w_gate.shape[0], d, w_gate.shape[1]};
            util::require_shape(self, w_down.shape == down, "w_down", w_down,
                                "[E, D, F] = " + tensor::shape_string(down));
            const auto present = [&](size_t i) { return in.size() > i && in[i].present; };
            const int biases = int(present(6)) + int(present(7)) + int(present(8));
            if (biases != 0 && biases != 3)
              util::fail(self, "b_gate, b_up and b_down come together (got " +
                                   std::to_string(biases) + " of 3)");
            if (biases == 3) {
              const Shape ef = {w_gate.shape[0], w_gate.shape[1]}, ed = {w_gate.shape[0], d};
              util::require_shape(self, in[6].shape == ef, "b_gate", in[6],
                                  "[E, F] = " + tensor::shape_string(ef));
              util::require_shape(self, in[7].shape == ef, "b_up", in[7],
                                  "[E, F] = " + tensor::shape_string(ef));
              util::require_shape(self, in[8].shape == ed, "b_down", in[8],
                                  "[E, D] = " + tensor::shape_string(ed));
            }
            return std::vector<TensorDesc>{desc(x.dtype, x.shape)};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            const double t = static_cast<double>(in[0].shape[0]),
                         d = static_cast<double>(in[0].shape[1]);
            const double k = static_cast<double>(in[1].shape[1]),
                         f = static_cast<double>(in[3].shape[1]);
            return Cost{t * k * (6 * f * d + 5 * f + 2 * d),
                        util::bytes_of(in) + util::bytes_of(out), std::max(d, f)};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { experts_reference(in, out, expert_activation(a)); },
      .default_inputs =
          [](const Dims& dims, const Json&) {
            const OpDef& self = moe_experts_op();
            const double d = static_cast<double>(util::dim(self, dims, "D")),
                         f = static_cast<double>(util::dim(self, dims, "F"));
            return Json{{"x", normal(1)},
                        {"weights", {{"uniform", {{"low", 0}, {"high", 1}}}}},
                        {"ids", {{"topk_ids", {{"experts", util::dim(self, dims, "E")}}}}},
                        {"w_gate", normal(1 / std::sqrt(d))},
                        {"w_up", normal(1 / std::sqrt(d))},
                        {"w_down", normal(1 / std::sqrt(f))},
                        {"b_gate", normal(0.5)},
                        {"b_up", normal(0.5)},
                        {"b_down", normal(0.5)}};
          },
  };
  return op;
}

}  // namespace h0::ops
