// Linear attention: the Gated DeltaNet layers of Qwen3-Next / Qwen3.5.
//   causal_conv1d(x[T,C], w[C,K], state[C,K-1], bias[C]?) -> y[T,C], state_out[C,K-1]
//     xp = the K-1 state columns, then x, along time: xp[i] = state[:, i] (i < K-1),
//     xp[K-1+t] = x[t]; y[t,c] = act(Σ_j w[c,j] · xp[t+j, c] + bias[c]) (act: silu | none);
//     state_out[:, i] = xp[T+i]: the last K-1 inputs, what the next call's state is
//     (transformers' causal_conv1d_fn / causal_conv1d_update; its cache holds K columns, the
//     first of which no output reads; vLLM and causal-conv1d hold these K-1)
//   gated_delta_rule(q[T,Hk,Dk], k[T,Hk,Dk], v[T,Hv,Dv], g[T,Hv] f32, beta[T,Hv],
//                    state[Hv,Dk,Dv] f32) -> o[T,Hv,Dv], state_out[Hv,Dk,Dv] f32
//     value head h reads key head h / (Hv/Hk) (transformers' repeat_interleave); q and k
//     L2-normalized (x / sqrt(Σx² + eps)) when l2norm_qk, q times scale; then per token,
//     in this order: S ← exp(g_t)·S; S ← S + k_t ⊗ beta_t·(v_t − Sᵀk_t); o_t = Sᵀq_t
//     (transformers' torch_recurrent_gated_delta_rule; a chunked kernel must equal it).
//     The state is the sequence's: zeros for a fresh one, state_out of the previous call else.
//   gdn_gating(a[T,Hv], b[T,Hv], A_log[Hv], dt_bias[Hv]) -> g[T,Hv] f32, beta[T,Hv]
//     g = -exp(A_log[h]) · softplus(a[t,h] + dt_bias[h]), softplus(x) = log(1 + e^x) (x when
//     x > 20, torch's threshold); beta = sigmoid(b) (transformers' Qwen3NextGatedDeltaNet,
//     vLLM's fused_gdn_gating): the delta rule's decay and write strength.
// References in f64, rounded once per output.
#include <cmath>

#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

// --- causal_conv1d ---------------------------------------------------------------------------

void conv_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                    const Json& attrs) {
  const int64_t t = in[0]->dim(0), c = in[0]->dim(1), k = in[1]->dim(1);
  const auto x = util::to_f64(*in[0]), w = util::to_f64(*in[1]), state = util::to_f64(*in[2]);
  const auto bias =
      in.size() > 3 && in[3] != nullptr ? util::to_f64(*in[3]) : std::vector<double>();
  const bool silu = util::attr_s(attrs, "activation") == "silu";
  // xp(i, ch): the i-th column of state ++ x along time.
  auto xp = [&](int64_t i, int64_t ch) {
    return i < k - 1 ? state[size_t(ch * (k - 1) + i)] : x[size_t((i - (k - 1)) * c + ch)];
  };
  std::vector<double> y(size_t(t * c)), next(size_t(c * (k - 1)));
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = bias.empty() ? 0.0 : bias[size_t(ch)];
      for (int64_t j = 0; j < k; ++j) s += w[size_t(ch * k + j)] * xp(r + j, ch);
      y[size_t(r * c + ch)] = silu ? util::silu(s) : s;
    }
  }
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < k - 1; ++i) next[size_t(ch * (k - 1) + i)] = xp(t + i, ch);
  }
  util::from_f64(y, out[0]);
  util::from_f64(next, out[1]);
}

// --- gated_delta_rule ------------------------------------------------------------------------

struct DeltaDims {
  int64_t t, hk, dk, hv, dv;
};

DeltaDims delta_dims(const std::vector<TensorDesc>& in) {
  return {in[0].shape[0], in[0].shape[1], in[0].shape[2], in[2].shape[1], in[2].shape[2]};
}

// x[0..n) divided by sqrt(Σx² + eps), in place.
void l2_normalize(double* x, int64_t n, double eps) {
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(sq + eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void delta_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                     const Json& attrs) {
  const int64_t t = in[0]->dim(0), hk = in[0]->dim(1), dk = in[0]->dim(2), hv = in[2]->dim(1),
                dv = in[2]->dim(2);
  auto q = util::to_f64(*in[0]), k = util::to_f64(*in[1]);
  const auto v = util::to_f64(*in[2]), g = util::to_f64(*in[3]), beta = util::to_f64(*in[4]);
  auto s = util::to_f64(*in[5]);
  const double scale = util::attr_f_or(attrs, "scale", 1.0 / std::sqrt(double(dk)));
  if (util::attr_b(attrs, "l2norm_qk")) {
    const double eps = util::attr_f(attrs, "l2norm_eps");
    for (int64_t r = 0; r < t * hk; ++r) {
      l2_normalize(&q[size_t(r * dk)], dk, eps);
      l2_normalize(&k[size_t(r * dk)], dk, eps);
    }
  }
  std::vector<double> o(size_t(t * hv * dv)), kv(static_cast<size_t>(dv));
  const int64_t group = hv / hk;
  for (int64_t h = 0; h < hv; ++h) {
    double* sh = &s[size_t(h * dk * dv)];  // [Dk, Dv]
    for (int64_t r = 0; r < t; ++r) {
      const double* qr = &q[size_t((r * hk + h / group) * dk)];
      const double* kr = &k[size_t((r * hk + h / group) * dk)];
      const double* vr = &v[size_t((r * hv + h) * dv)];
      const double decay = std::exp(g[size_t(r * hv + h)]), b = beta[size_t(r * hv + h)];
      for (int64_t i = 0; i < dk * dv; ++i) sh[i] *= decay;
      std::fill(kv.begin(), kv.end(), 0.0);
      for (int64_t i = 0; i < dk; ++i) {
        for (int64_t j = 0; j < dv; ++j) kv[size_t(j)] += sh[i * dv + j] * kr[i];
      }
      for (int64_t j = 0; j < dv; ++j) kv[size_t(j)] = b * (vr[j] - kv[size_t(j)]);  // the delta
      for (int64_t i = 0; i < dk; ++i) {
        for (int64_t j = 0; j < dv; ++j) sh[i * dv + j] += kr[i] * kv[size_t(j)];
      }
      double* orow = &o[size_t((r * hv + h) * dv)];
      for (int64_t i = 0; i < dk; ++i) {
        for (int64_t j = 0; j < dv; ++j) orow[j] += sh[i * dv + j] * qr[i] * scale;
      }
    }
  }
  util::from_f64(o, out[0]);
  util::from_f64(s, out[1]);
}

// --- gdn_gating ------------------------------------------------------------------------------

// torch.nn.functional.softplus with beta 1, threshold 20.
double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

void gating_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) {
  const int64_t t = in[0]->dim(0), hv = in[0]->dim(1);
  const auto a = util::to_f64(*in[0]), b = util::to_f64(*in[1]), a_log = util::to_f64(*in[2]),
             dt = util::to_f64(*in[3]);
  std::vector<double> g(size_t(t * hv)), beta(size_t(t * hv));
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t h = 0; h < hv; ++h) {
      const size_t i = size_t(r * hv + h);
      g[i] = -std::exp(a_log[size_t(h)]) * softplus(a[i] + dt[size_t(h)]);
      beta[i] = util::sigmoid(b[i]);
    }
  }
  util::from_f64(g, out[0]);
  util::from_f64(beta, out[1]);
}

}  // namespace

const OpDef& gdn_gating_op() {
  static const OpDef op = {
      .name = "gdn_gating",
      .inputs = {{"a", OperandKind::kFloat},
                 {"b", OperandKind::kFloat},
                 {"A_log", OperandKind::kFloat},
                 {"dt_bias", OperandKind::kFloat}},
      .outputs = {{"g", OperandKind::kF32}, {"beta", OperandKind::kFloat}},
      .attrs = {},
      .dims = {"T", "Hv"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kTranscendental,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            const OpDef& self = gdn_gating_op();
            const int64_t t = util::dim(self, dims, "T"), hv = util::dim(self, dims, "Hv");
            return std::vector<TensorDesc>{desc(dtype, {t, hv}), desc(dtype, {t, hv}),
                                           desc(dtype, {hv}), desc(dtype, {hv})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json&) {
            const OpDef& self = gdn_gating_op();
            const TensorDesc &a = in[0], &b = in[1], &a_log = in[2], &dt = in[3];
            util::require_shape(self, a.shape.size() == 2, "a", a, "[T, Hv]");
            util::require_shape(self, b.shape == a.shape, "b", b,
                                "[T, Hv] = " + tensor::shape_string(a.shape));
            const std::string hv = "[Hv] = [" + std::to_string(a.shape[1]) + "]";
            util::require_shape(self, a_log.shape == Shape{a.shape[1]}, "A_log", a_log, hv);
            util::require_shape(self, dt.shape == Shape{a.shape[1]}, "dt_bias", dt, hv);
            return std::vector<TensorDesc>{desc(DType::kF32, a.shape), desc(a.dtype, a.shape)};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            return Cost{double(tensor::numel(in[0].shape)) * 12,
                        util::bytes_of(in) + util::bytes_of(out), 1};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json&) { gating_reference(in, out); },
      .default_inputs =
          [](const Dims&, const Json&) {
            // Qwen3-Next's initialization: A = e^A_log in [0.01, 16], dt_bias = log(expm1(dt)) for
            // dt in [1e-3, 0.1] (about -7..-2.3); a and b are projections of the hidden state.
            return Json{{"a", {{"normal", {{"mean", 0}, {"std", 2}}}}},
                        {"b", {{"normal", {{"mean", 0}, {"std", 2}}}}},
                        {"A_log", {{"uniform", {{"low", -4.6}, {"high", 2.77}}}}},
                        {"dt_bias", {{"uniform", {{"low", -7}, {"high", -2.3}}}}}};
          },
  };
  return op;
}

const OpDef& causal_conv1d_op() {
  static const OpDef op = {
      .name = "causal_conv1d",
      .inputs = {{"x", OperandKind::kFloat},
                 {"w", OperandKind::kFloat},
                 {"state", OperandKind::kFloat},
                 {"bias", OperandKind::kFloat, true}},
      .outputs = {{"y", OperandKind::kFloat}, {"state_out", OperandKind::kFloat}},
      .attrs = {{"activation", AttrType::kString, "\"silu\"", "silu|none",
                 "applied to each output (Qwen3-Next, Mamba: silu)"}},
      .dims = {"T", "C", "K"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>& with) {
            const OpDef& self = causal_conv1d_op();
            const int64_t t = util::dim(self, dims, "T"), c = util::dim(self, dims, "C"),
                          k = util::dim(self, dims, "K");
            if (k < 2) util::fail(self, "dim 'K' must be at least 2, got " + std::to_string(k));
            std::vector<TensorDesc> in = {desc(dtype, {t, c}), desc(dtype, {c, k}),
                                          desc(dtype, {c, k - 1})};
            if (with.count("bias")) in.push_back(desc(dtype, {c}));
            return in;
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json&) {
            const OpDef& self = causal_conv1d_op();
            const TensorDesc &x = in[0], &w = in[1], &state = in[2];
            util::require_shape(self, x.shape.size() == 2, "x", x, "[T, C]");
            const int64_t c = x.shape[1];
            util::require_shape(self, w.shape.size() == 2 && w.shape[0] == c && w.shape[1] >= 2,
                                "w", w, "[C, K] with C = " + std::to_string(c) + " and K >= 2");
            const int64_t k = w.shape[1];
            util::require_shape(self, state.shape == Shape{c, k - 1}, "state", state,
                                "[C, K - 1] = [" + std::to_string(c) + ", " +
                                    std::to_string(k - 1) +
                                    "] (the last K - 1 inputs; zeros for a fresh sequence)");
            if (in.size() > 3 && in[3].present) {
              util::require_shape(self, in[3].shape == Shape{c}, "bias", in[3],
                                  "[C] = [" + std::to_string(c) + "]");
            }
            return std::vector<TensorDesc>{desc(x.dtype, x.shape), desc(x.dtype, state.shape)};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            const double tc = double(tensor::numel(in[0].shape)), k = double(in[1].shape[1]);
            return Cost{tc * (2 * k + 4), util::bytes_of(in) + util::bytes_of(out), k};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { conv_reference(in, out, a); },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"x", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"w", {{"normal", {{"mean", 0}, {"std", 0.5}}}}},
                        {"state", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"bias", {{"normal", {{"mean", 0}, {"std", 0.1}}}}}};
          },
  };
  return op;
}

const OpDef& gated_delta_rule_op() {
  static const OpDef op = {
      .name = "gated_delta_rule",
      .inputs = {{"q", OperandKind::kFloat},
                 {"k", OperandKind::kFloat},
                 {"v", OperandKind::kFloat},
                 {"g", OperandKind::kF32},
                 {"beta", OperandKind::kFloat},
                 {"state", OperandKind::kF32}},
      .outputs = {{"o", OperandKind::kFloat}, {"state_out", OperandKind::kF32}},
      .attrs = {{"l2norm_qk", AttrType::kBool, "true", nullptr,
                 "L2-normalize q and k per head first (Qwen3-Next: true)"},
                {"l2norm_eps", AttrType::kFloat, "1e-6", nullptr,
                 "added to Σx² under the square root"},
                {"scale", AttrType::kFloat, "null", nullptr, "q's scale; null = 1/sqrt(Dk)"}},
      .dims = {"T", "Hk", "Dk", "Hv", "Dv"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            const OpDef& self = gated_delta_rule_op();
            const int64_t t = util::dim(self, dims, "T"), hk = util::dim(self, dims, "Hk"),
                          dk = util::dim(self, dims, "Dk"), hv = util::dim(self, dims, "Hv"),
                          dv = util::dim(self, dims, "Dv");
            return std::vector<TensorDesc>{
                desc(dtype, {t, hk, dk}), desc(dtype, {t, hk, dk}),
                desc(dtype, {t, hv, dv}), desc(DType::kF32, {t, hv}),
                desc(dtype, {t, hv}),     desc(DType::kF32, {hv, dk, dv})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = gated_delta_rule_op();
            const TensorDesc &q = in[0], &k = in[1], &v = in[2], &g = in[3], &beta = in[4],
                             &state = in[5];
            util::require_shape(self, q.shape.size() == 3 && q.shape[1] > 0, "q", q, "[T, Hk, Dk]");
            const int64_t t = q.shape[0], hk = q.shape[1], dk = q.shape[2];
            util::require_shape(self, k.shape == q.shape, "k", k,
                                "[T, Hk, Dk] = " + tensor::shape_string(q.shape));
            util::require_shape(
                self,
                v.shape.size() == 3 && v.shape[0] == t && v.shape[1] % hk == 0 && v.shape[1] > 0,
                "v", v,
                "[T, Hv, Dv] with T = " + std::to_string(t) +
                    " and Hv a multiple of Hk = " + std::to_string(hk));
            const int64_t hv = v.shape[1], dv = v.shape[2];
            const std::string th =
                "[T, Hv] = [" + std::to_string(t) + ", " + std::to_string(hv) + "]";
            util::require_shape(self, g.shape == Shape{t, hv}, "g", g, th + " (log decay, <= 0)");
            util::require_shape(self, beta.shape == Shape{t, hv}, "beta", beta, th);
            util::require_shape(self, state.shape == Shape{hv, dk, dv}, "state", state,
                                "[Hv, Dk, Dv] = " + tensor::shape_string({hv, dk, dv}) +
                                    " (zeros for a fresh sequence)");
            if (util::attr_f(attrs, "l2norm_eps") < 0) {
              util::fail(self,
                         "attr 'l2norm_eps' must be >= 0, got " + attrs.at("l2norm_eps").dump());
            }
            return std::vector<TensorDesc>{desc(q.dtype, {t, hv, dv}),
                                           desc(DType::kF32, state.shape)};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            const DeltaDims d = delta_dims(in);
            // Per token and value head: decay, Sᵀk, the rank-1 update, Sᵀq (7·Dk·Dv); the norms.
            const double flops =
                double(d.t) * (double(d.hv) * 7 * double(d.dk * d.dv) + 6 * double(d.hk * d.dk));
            // A state element is a decayed sum over every earlier token of Dk-long products.
            return Cost{flops, util::bytes_of(in) + util::bytes_of(out), double(d.dk + d.t)};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { delta_reference(in, out, a); },
      .default_inputs =
          [](const Dims&, const Json&) {
            // g as Qwen3-Next's -exp(A_log)·softplus(a + dt_bias) spreads: decays exp(g) in (0.05,
            // 1).
            return Json{{"q", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"k", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"v", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"g", {{"uniform", {{"low", -3}, {"high", 0}}}}},
                        {"beta", {{"uniform", {{"low", 0}, {"high", 1}}}}},
                        {"state", {{"normal", {{"mean", 0}, {"std", 0.5}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
