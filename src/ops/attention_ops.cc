// attention and paged_attention: scaled dot-product attention with grouped KV heads.
//   attention(q[T,Hq,Dh], k[S,Hkv,Dh], v[S,Hkv,Dv]) = o[T,Hq,Dv]
//   paged_attention(q[T,Hq,Dh], k_cache[NB,B,Hkv,Dh], v_cache[NB,B,Hkv,Dv], block_table[n] i32)
//     = o[T,Hq,Dv], key j < context_len at block block_table[j / B], slot j % B (vLLM's layout);
//     optional sinks[Hq] (GPT-OSS's attention sinks): head h's softmax denominator gains
//     e^(sinks[h] − m), m the max over the visible scores and sinks[h]; the sink has no value.
// Query t sits at position p = q_offset + t (default S − T: the queries are the last T keys);
// it sees key j iff (!causal || j <= p) && (sliding_window == 0 || j > p − sliding_window)
// (both ops: Mistral's, Gemma 3's and GPT-OSS's sliding layers run paged_attention with it).
// Query head h reads kv head h / (Hq / Hkv) (HF repeat_kv). o = softmax(scale · q·kᵀ) · v over
// the visible keys, max-subtracted, in f64; a query that sees no key gets zeros.
// flops 2·T·S·Hq·(Dh + Dv) + 5·T·S·Hq (the softmax), masked pairs included; reduction S.
#include <algorithm>
#include <cmath>

#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

struct AttentionGeometry {
  int64_t t, hq, hkv, dh, dv, s;
};

struct AttentionMask {
  bool causal;
  int64_t q_offset;
  int64_t window;  // 0 = none
  bool visible(int64_t j, int64_t p) const {
    return (!causal || j <= p) && (window == 0 || j > p - window);
  }
};

// q is (T, Hq, Dh). Key j's head hk is row rows[j]·Hkv + hk of k (Dh wide) and of v (Dv wide).
// Returns o (T, Hq, Dv).
// `sinks` (Hq values, or empty): a per-head logit in each softmax's denominator.
std::vector<double> attend(const std::vector<double>& q, const std::vector<double>& k,
                           const std::vector<double>& v, const std::vector<int64_t>& rows,
                           const AttentionGeometry& g, const AttentionMask& mask, double scale,
                           const std::vector<double>& sinks = {}) {
  std::vector<double> o(static_cast<size_t>(g.t * g.hq * g.dv), 0.0);
  const int64_t group = g.hq / g.hkv;
  std::vector<double> scores;
  std::vector<int64_t> keys;
  for (int64_t t = 0; t < g.t; ++t) {
    const int64_t p = mask.q_offset + t;
    keys.clear();
    for (int64_t j = 0; j < g.s; ++j) {
      if (mask.visible(j, p)) keys.push_back(j);
    }
    if (keys.empty()) continue;
    for (int64_t h = 0; h < g.hq; ++h) {
      const int64_t hk = h / group;
      const double* qv = &q[static_cast<size_t>((t * g.hq + h) * g.dh)];
      scores.assign(keys.size(), 0.0);
      for (size_t n = 0; n < keys.size(); ++n) {
        const double* kv =
            &k[static_cast<size_t>((rows[static_cast<size_t>(keys[n])] * g.hkv + hk) * g.dh)];
        double dot = 0;
        for (int64_t d = 0; d < g.dh; ++d) dot += qv[d] * kv[d];
        scores[n] = scale * dot;
      }
      if (sinks.empty()) {
        util::softmax_inplace(scores.data(), static_cast<int64_t>(scores.size()));
      } else {  // softmax over the scores and the sink, the sink's share dropped (HF's eager path)
        const double sink = sinks[static_cast<size_t>(h)];
        double mx = sink, sum = 0;
        for (double sc : scores) mx = std::max(mx, sc);
        for (double& sc : scores) sum += (sc = std::exp(sc - mx));
        sum += std::exp(sink - mx);
        for (double& sc : scores) sc /= sum;
      }
      double* ov = &o[static_cast<size_t>((t * g.hq + h) * g.dv)];
      for (size_t n = 0; n < keys.size(); ++n) {
        const double* vv =
            &v[static_cast<size_t>((rows[static_cast<size_t>(keys[n])] * g.hkv + hk) * g.dv)];
        for (int64_t d = 0; d < g.dv; ++d) ov[d] += scores[n] * vv[d];
      }
    }
  }
  return o;
}

// q must be (T, Hq, Dh), with Hq a multiple of the kv heads (require_heads).
void require_q(const OpDef& op, const TensorDesc& q) {
  util::require_shape(op, q.shape.size() == 3, "q", q, "[T, Hq, Dh]");
}

void require_heads(const OpDef& op, const TensorDesc& q, int64_t hkv) {
  util::require_shape(op, hkv > 0 && q.shape[1] % hkv == 0, "q", q,
                      "[T, Hq, Dh] with Hq a multiple of Hkv = " + std::to_string(hkv));
}

Cost attention_cost(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                    double s) {
  const double t = static_cast<double>(in[0].shape[0]), hq = static_cast<double>(in[0].shape[1]);
  const double dh = static_cast<double>(in[0].shape[2]), dv = static_cast<double>(out[0].shape[2]);
  return {2 * t * s * hq * (dh + dv) + 5 * t * s * hq, util::bytes_of(in) + util::bytes_of(out), s};
}

// Dv, or Dh when the suite leaves it out (no MLA-style split).
int64_t value_dim(const OpDef& op, const Dims& dims) {
  return dims.count("Dv") ? dims.at("Dv") : util::dim(op, dims, "Dh");
}

Json qkv_inputs(const char* k, const char* v) {
  const Json normal = {{"normal", {{"mean", 0}, {"std", 1}}}};
  return Json{{"q", normal}, {k, normal}, {v, normal}};
}

// Context length of paged_attention: attr context_len or all n·B slots of the block table.
int64_t context_len(const Json& attrs, int64_t capacity) {
  return util::attr_i_or(attrs, "context_len", capacity);
}

// q (T, Hq, Dh), k (S, Hkv, Dh), v (S, Hkv, Dv) -> o (T, Hq, Dv).
void attention_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                         const Json& a) {
  const AttentionGeometry g = {in[0]->dim(0), in[0]->dim(1), in[1]->dim(1),
                               in[0]->dim(2), in[2]->dim(2), in[1]->dim(0)};
  const AttentionMask mask = {util::attr_b(a, "causal"), util::attr_i_or(a, "q_offset", g.s - g.t),
                              util::attr_i(a, "sliding_window")};
  std::vector<int64_t> rows(static_cast<size_t>(g.s));
  for (int64_t j = 0; j < g.s; ++j) rows[static_cast<size_t>(j)] = j;
  const double scale = util::attr_f_or(a, "scale", 1.0 / std::sqrt(static_cast<double>(g.dh)));
  util::from_f64(attend(util::to_f64(*in[0]), util::to_f64(*in[1]), util::to_f64(*in[2]), rows, g,
                        mask, scale),
                 out[0]);
}

// q (T, Hq, Dh), k_cache (NB, B, Hkv, Dh), v_cache (NB, B, Hkv, Dv), block_table (n) -> o.
// A block_table entry outside [0, NB) that a key < context_len needs is an InputError.
void paged_attention_reference(const std::vector<const Tensor*>& in,
                               const std::vector<Tensor*>& out, const Json& a) {
  const int64_t nb = in[1]->dim(0), b = in[1]->dim(1);
  const auto table = util::to_f64(*in[3]);
  const int64_t len = context_len(a, static_cast<int64_t>(table.size()) * b);
  const AttentionGeometry g = {in[0]->dim(0), in[0]->dim(1), in[1]->dim(2),
                               in[0]->dim(2), in[2]->dim(3), len};
  const AttentionMask mask = {util::attr_b(a, "causal"), util::attr_i_or(a, "q_offset", len - g.t),
                              util::attr_i(a, "sliding_window")};
  const std::vector<int64_t> rows = util::paged_rows(paged_attention_op(), *in[3], nb, b, len);
  const double scale = util::attr_f_or(a, "scale", 1.0 / std::sqrt(static_cast<double>(g.dh)));
  const std::vector<double> sinks =
      in.size() > 4 && in[4] != nullptr ? util::to_f64(*in[4]) : std::vector<double>();
  util::from_f64(attend(util::to_f64(*in[0]), util::to_f64(*in[1]), util::to_f64(*in[2]), rows, g,
                        mask, scale, sinks),
                 out[0]);
}

}  // namespace

const OpDef& attention_op() {
  static const OpDef op = {
      .name = "attention",
      .inputs = {{"q", OperandKind::kFloat},
                 {"k", OperandKind::kFloat},
                 {"v", OperandKind::kFloat}},
      .outputs = {{"o", OperandKind::kFloat}},
      .attrs = {{"causal", AttrType::kBool, "true", nullptr,
                 "mask keys after the query's position"},
                {"scale", AttrType::kFloat, "null", nullptr, "score scale; null = 1/sqrt(Dh)"},
                {"q_offset", AttrType::kInt, "null", nullptr,
                 "position of q[0] among the keys; null = S - T"},
                {"sliding_window", AttrType::kInt, "0", nullptr,
                 "0 = none; else query p sees keys j with p - window < j <= p"}},
      .dims = {"T", "S", "Hq", "Hkv", "Dh", "Dv"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            const OpDef& self = attention_op();
            const int64_t t = util::dim(self, dims, "T"), s = util::dim(self, dims, "S"),
                          hq = util::dim(self, dims, "Hq"), hkv = util::dim(self, dims, "Hkv"),
                          dh = util::dim(self, dims, "Dh"), dv = value_dim(self, dims);
            return std::vector<TensorDesc>{desc(dtype, {t, hq, dh}), desc(dtype, {s, hkv, dh}),
                                           desc(dtype, {s, hkv, dv})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = attention_op();
            const TensorDesc &q = in[0], &k = in[1], &v = in[2];
            require_q(self, q);
            util::require_shape(self, k.shape.size() == 3 && k.shape[2] == q.shape[2], "k", k,
                                "[S, Hkv, Dh] with Dh = " + std::to_string(q.shape[2]));
            require_heads(self, q, k.shape[1]);
            util::require_shape(
                self, v.shape.size() == 3 && v.shape[0] == k.shape[0] && v.shape[1] == k.shape[1],
                "v", v,
                "[S, Hkv, Dv] with S = " + std::to_string(k.shape[0]) +
                    ", Hkv = " + std::to_string(k.shape[1]));
            const int64_t window = util::attr_i(attrs, "sliding_window");
            if (window < 0) {
              util::fail(self, "attr 'sliding_window' must be >= 0, got " + std::to_string(window));
            }
            return std::vector<TensorDesc>{desc(q.dtype, {q.shape[0], q.shape[1], v.shape[2]})};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            return attention_cost(in, out, static_cast<double>(in[1].shape[0]));
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { attention_reference(in, out, a); },
      .default_inputs = [](const Dims&, const Json&) { return qkv_inputs("k", "v"); },
  };
  return op;
}

const OpDef& paged_attention_op() {
  static const OpDef op = {
      .name = "paged_attention",
      .inputs = {{"q", OperandKind::kFloat},
                 {"k_cache", OperandKind::kFloat},
                 {"v_cache", OperandKind::kFloat},
                 {"block_table", OperandKind::kI32},
                 {"sinks", OperandKind::kFloat, true}},
      .outputs = {{"o", OperandKind::kFloat}},
      .attrs = {{"context_len", AttrType::kInt, "null", nullptr, "keys in the cache; null = n * B"},
                {"scale", AttrType::kFloat, "null", nullptr, "score scale; null = 1/sqrt(Dh)"},
                {"causal", AttrType::kBool, "true", nullptr,
                 "mask keys after the query's position"},
                {"q_offset", AttrType::kInt, "null", nullptr,
                 "position of q[0] among the keys; null = context_len - T"},
                {"sliding_window", AttrType::kInt, "0", nullptr,
                 "0 = none; else query p sees keys j with p - window < j <= p"}},
      .dims = {"T", "S", "Hq", "Hkv", "Dh", "Dv", "B"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      // n = ceil(S / B) blocks in the table; the cache holds two more, never referenced.
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>& with) {
            const OpDef& self = paged_attention_op();
            const int64_t t = util::dim(self, dims, "T"), s = util::dim(self, dims, "S"),
                          hq = util::dim(self, dims, "Hq"), hkv = util::dim(self, dims, "Hkv"),
                          dh = util::dim(self, dims, "Dh"), dv = value_dim(self, dims),
                          b = util::dim(self, dims, "B");
            if (b <= 0) util::fail(self, "dim 'B' must be positive, got " + std::to_string(b));
            const int64_t n = (s + b - 1) / b, nb = n + 2;
            std::vector<TensorDesc> in = {desc(dtype, {t, hq, dh}), desc(dtype, {nb, b, hkv, dh}),
                                          desc(dtype, {nb, b, hkv, dv}), desc(DType::kI32, {n})};
            if (with.count("sinks")) in.push_back(desc(dtype, {hq}));
            return in;
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = paged_attention_op();
            const TensorDesc &q = in[0], &k = in[1], &v = in[2], &table = in[3];
            require_q(self, q);
            util::require_shape(self, k.shape.size() == 4 && k.shape[3] == q.shape[2], "k_cache", k,
                                "[NB, B, Hkv, Dh] with Dh = " + std::to_string(q.shape[2]));
            require_heads(self, q, k.shape[2]);
            util::require_shape(self,
                                v.shape.size() == 4 && v.shape[0] == k.shape[0] &&
                                    v.shape[1] == k.shape[1] && v.shape[2] == k.shape[2],
                                "v_cache", v,
                                "[NB, B, Hkv, Dv] with NB = " + std::to_string(k.shape[0]) +
                                    ", B = " + std::to_string(k.shape[1]) +
                                    ", Hkv = " + std::to_string(k.shape[2]));
            util::require_shape(self, table.shape.size() == 1, "block_table", table, "[n]");
            if (in.size() > 4 && in[4].present) {
              util::require_shape(self, in[4].shape == Shape{q.shape[1]}, "sinks", in[4],
                                  "[Hq] = [" + std::to_string(q.shape[1]) + "]");
            }
            const int64_t capacity = table.shape[0] * k.shape[1];
            const int64_t len = context_len(attrs, capacity);
            if (len < 0 || len > capacity) {
              util::fail(self, "attr 'context_len' must be in [0, n * B = " +
                                   std::to_string(capacity) + "], got " + std::to_string(len));
            }
            const int64_t window = util::attr_i(attrs, "sliding_window");
            if (window < 0) {
              util::fail(self, "attr 'sliding_window' must be >= 0, got " + std::to_string(window));
            }
            return std::vector<TensorDesc>{desc(q.dtype, {q.shape[0], q.shape[1], v.shape[3]})};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
             const Json& attrs) {
            const int64_t capacity = in[3].shape[0] * in[1].shape[1];
            return attention_cost(in, out, static_cast<double>(context_len(attrs, capacity)));
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { paged_attention_reference(in, out, a); },
      .default_inputs =
          [](const Dims&, const Json&) {
            Json in = qkv_inputs("k_cache", "v_cache");
            in["block_table"] = {{"permutation", Json::object()}};
            in["sinks"] = {{"normal", {{"mean", 0}, {"std", 1}}}};
            return in;
          },
  };
  return op;
}

}  // namespace h0::ops
