// DeepSeek sparse attention (DeepSeek-V3.2's DSA): the lightning indexer picks, per query, the
// keys that attention then reads.
//   lightning_indexer(q[T,H,D], k_cache[NB,B,D], weights[T,H], block_table[n] i32)
//     -> indices[T,topk] i32
//     query t at position p = q_offset + t scores every key j < context_len it may see
//     (!causal || j <= p): score(t, j) = Σ_h weights[t,h] · max(0, scale · q[t,h]·k_j), k_j at
//     block block_table[j / B], slot j % B (one key head: the indexer's keys are shared by its
//     heads). indices[t] lists the topk best keys by score descending, ties to the lower key
//     id; when fewer than topk keys are visible, the rest of the row is -1. (transformers'
//     DeepseekV32Indexer: weights = weights_proj(x) · H^-0.5, scale = D^-0.5; its
//     topk leaves the order of equal scores unspecified, this op fixes it.)
//   sparse_attention(q[T,Hq,Dh], k_cache[NB,B,Hkv,Dh], v_cache[NB,B,Hkv,Dv], block_table[n] i32,
//                    indices[T,K] i32) -> o[T,Hq,Dv]
//     paged_attention where query t sees key j iff j is listed in indices[t] (-1: no key; a key
//     listed twice counts once) and the causal mask lets it (transformers folds the indexer's
//     selection into the attention mask the same way). An index outside [-1, context_len) is
//     an InputError.
// References in f64; the indexer's scores are compared exactly through the keys they select.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

// context_len of a paged op: the attr, or every slot of the table; checked against capacity.
int64_t paged_len(const OpDef& op, const Json& attrs, int64_t capacity) {
  const int64_t len = util::attr_i_or(attrs, "context_len", capacity);
  if (len < 0 || len > capacity) {
    util::fail(op, "attr 'context_len' must be in [0, n * B = " + std::to_string(capacity) +
                       "], got " + std::to_string(len));
  }
  return len;
}

int64_t q_position(const Json& attrs, int64_t len, int64_t t, int64_t row) {
  return util::attr_i_or(attrs, "q_offset", len - t) + row;
}

// --- lightning_indexer -----------------------------------------------------------------------

// The indexer's f64 scores of query r over its visible keys [0, visible(r)).
class IndexerScores {
 public:
  IndexerScores(const std::vector<const Tensor*>& in, const Json& a)
      : t_(in[0]->dim(0)),
        h_(in[0]->dim(1)),
        d_(in[0]->dim(2)),
        b_(in[1]->dim(1)),
        len_(paged_len(lightning_indexer_op(), a, in[3]->dim(0) * b_)),
        rows_(util::paged_rows(lightning_indexer_op(), *in[3], in[1]->dim(0), b_, len_)),
        q_(util::to_f64(*in[0])),
        k_(util::to_f64(*in[1])),
        w_(util::to_f64(*in[2])),
        scale_(util::attr_f_or(a, "scale", 1.0 / std::sqrt(static_cast<double>(d_)))),
        attrs_(a) {}

  int64_t queries() const { return t_; }
  int64_t visible(int64_t r) const {
    return util::attr_b(attrs_, "causal")
               ? std::clamp<int64_t>(q_position(attrs_, len_, t_, r) + 1, 0, len_)
               : len_;
  }
  double score(int64_t r, int64_t j) const {
    const double* kj = &k_[static_cast<size_t>(rows_[static_cast<size_t>(j)] * d_)];
    dots_.resize(static_cast<size_t>(h_));
    util::dots_f64(kj, &q_[static_cast<size_t>(r * h_ * d_)], h_, d_, d_, dots_.data());
    double sum = 0;
    for (int64_t head = 0; head < h_; ++head) {
      sum += w_[static_cast<size_t>(r * h_ + head)] *
             std::max(0.0, scale_ * dots_[static_cast<size_t>(head)]);
    }
    return sum;
  }

 private:
  int64_t t_, h_, d_, b_, len_;
  std::vector<int64_t> rows_;
  std::vector<double> q_, k_, w_;
  mutable std::vector<double> dots_;  // score()'s per-head dots
  double scale_;
  const Json& attrs_;
};

void indexer_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                       const Json& a) {
  const IndexerScores scores(in, a);
  const int64_t topk = util::attr_i(a, "topk");
  std::vector<double> idx(static_cast<size_t>(scores.queries() * topk), -1.0);
  std::vector<double> score;
  std::vector<int64_t> keys;
  for (int64_t r = 0; r < scores.queries(); ++r) {
    const int64_t visible = scores.visible(r);
    score.resize(static_cast<size_t>(visible));
    for (int64_t j = 0; j < visible; ++j) score[static_cast<size_t>(j)] = scores.score(r, j);
    keys.resize(static_cast<size_t>(visible));
    std::iota(keys.begin(), keys.end(), 0);
    std::stable_sort(keys.begin(), keys.end(), [&](int64_t x, int64_t y) {
      return score[static_cast<size_t>(x)] > score[static_cast<size_t>(y)];
    });
    for (int64_t i = 0; i < std::min(topk, visible); ++i) {
      idx[static_cast<size_t>(r * topk + i)] = static_cast<double>(keys[static_cast<size_t>(i)]);
    }
  }
  util::from_f64(idx, out[0]);
}

// The score of every listed id (NaN for -1 and for a key the query may not see).
std::vector<double> indexer_selection_scores(const std::vector<const Tensor*>& in,
                                             const Tensor& ids, const Json& a) {
  const IndexerScores scores(in, a);
  const std::vector<double> id = util::to_f64(ids);
  const int64_t k = ids.dim(1);
  std::vector<double> out(id.size(), std::nan(""));
  for (int64_t r = 0; r < scores.queries(); ++r) {
    for (int64_t i = 0; i < k; ++i) {
      const auto j = static_cast<int64_t>(id[static_cast<size_t>(r * k + i)]);
      if (j >= 0 && j < scores.visible(r)) out[static_cast<size_t>(r * k + i)] = scores.score(r, j);
    }
  }
  return out;
}

// --- sparse_attention ------------------------------------------------------------------------

void sparse_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) {
  const OpDef& self = sparse_attention_op();
  const int64_t t = in[0]->dim(0), hq = in[0]->dim(1), dh = in[0]->dim(2);
  const int64_t nb = in[1]->dim(0), b = in[1]->dim(1), hkv = in[1]->dim(2), dv = in[2]->dim(3);
  const int64_t n_idx = in[4]->dim(1);
  const int64_t len = paged_len(self, a, in[3]->dim(0) * b);
  const std::vector<int64_t> rows = util::paged_rows(self, *in[3], nb, b, len);
  const auto q = util::to_f64(*in[0]), k = util::to_f64(*in[1]), v = util::to_f64(*in[2]);
  const auto indices = util::to_f64(*in[4]);
  const double scale = util::attr_f_or(a, "scale", 1.0 / std::sqrt(static_cast<double>(dh)));
  const bool causal = util::attr_b(a, "causal");
  std::vector<double> o(static_cast<size_t>(t * hq * dv), 0.0), scores;
  std::vector<int64_t> keys;
  for (int64_t r = 0; r < t; ++r) {
    const int64_t p = q_position(a, len, t, r);
    keys.clear();
    for (int64_t i = 0; i < n_idx; ++i) {
      const auto j = static_cast<int64_t>(indices[static_cast<size_t>(r * n_idx + i)]);
      if (j < -1 || j >= len) {
        util::fail(self, "indices[" + std::to_string(r) + ", " + std::to_string(i) +
                             "] = " + std::to_string(j) +
                             " is outside [-1, context_len = " + std::to_string(len) + ")");
      }
      if (j >= 0 && (!causal || j <= p)) keys.push_back(j);
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    if (keys.empty()) continue;
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / (hq / hkv);
      const double* qh = &q[static_cast<size_t>((r * hq + h) * dh)];
      scores.assign(keys.size(), 0.0);
      for (size_t n = 0; n < keys.size(); ++n) {
        const double* kj =
            &k[static_cast<size_t>((rows[static_cast<size_t>(keys[n])] * hkv + g) * dh)];
        double dot = 0;
        for (int64_t i = 0; i < dh; ++i) dot += qh[i] * kj[i];
        scores[n] = scale * dot;
      }
      util::softmax_inplace(scores.data(), static_cast<int64_t>(scores.size()));
      double* oh = &o[static_cast<size_t>((r * hq + h) * dv)];
      for (size_t n = 0; n < keys.size(); ++n) {
        const double* vj =
            &v[static_cast<size_t>((rows[static_cast<size_t>(keys[n])] * hkv + g) * dv)];
        for (int64_t i = 0; i < dv; ++i) oh[i] += scores[n] * vj[i];
      }
    }
  }
  util::from_f64(o, out[0]);
}

Json normal() { return Json{{"normal", {{"mean", 0}, {"std", 1}}}}; }

void require_table(const OpDef& op, const TensorDesc& table) {
  util::require_shape(op, table.shape.size() == 1, "block_table", table, "[n]");
}

}  // namespace

const OpDef& lightning_indexer_op() {
  static const OpDef op = {
      .name = "lightning_indexer",
      .inputs = {{"q", OperandKind::kFloat},
                 {"k_cache", OperandKind::kFloat},
                 {"weights", OperandKind::kFloat},
                 {"block_table", OperandKind::kI32}},
      .outputs = {{"indices", OperandKind::kI32}},
      .attrs = {{"topk", AttrType::kInt, nullptr, nullptr,
                 "keys kept per query (DeepSeek-V3.2: index_topk 2048)"},
                {"context_len", AttrType::kInt, "null", nullptr, "keys in the cache; null = n * B"},
                {"scale", AttrType::kFloat, "null", nullptr, "inside the ReLU; null = 1/sqrt(D)"},
                {"causal", AttrType::kBool, "true", nullptr,
                 "score only keys at or before the query's position"},
                {"q_offset", AttrType::kInt, "null", nullptr,
                 "position of q[0] among the keys; null = context_len - T"}},
      .dims = {"T", "S", "H", "D", "B"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kExact,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            const OpDef& self = lightning_indexer_op();
            const int64_t t = util::dim(self, dims, "T"), s = util::dim(self, dims, "S"),
                          h = util::dim(self, dims, "H"), d = util::dim(self, dims, "D"),
                          b = util::dim(self, dims, "B");
            if (b <= 0) util::fail(self, "dim 'B' must be positive, got " + std::to_string(b));
            const int64_t n = (s + b - 1) / b;
            return std::vector<TensorDesc>{desc(dtype, {t, h, d}), desc(dtype, {n + 2, b, d}),
                                           desc(dtype, {t, h}), desc(DType::kI32, {n})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = lightning_indexer_op();
            const TensorDesc &q = in[0], &k = in[1], &w = in[2], &table = in[3];
            util::require_shape(self, q.shape.size() == 3, "q", q, "[T, H, D]");
            util::require_shape(self,
                                k.shape.size() == 3 && k.shape[2] == q.shape[2] && k.shape[1] > 0,
                                "k_cache", k, "[NB, B, D] with D = " + std::to_string(q.shape[2]));
            util::require_shape(self, w.shape == Shape{q.shape[0], q.shape[1]}, "weights", w,
                                "[T, H] = " + tensor::shape_string({q.shape[0], q.shape[1]}));
            require_table(self, table);
            paged_len(self, attrs, table.shape[0] * k.shape[1]);
            const int64_t topk = util::attr_i(attrs, "topk");
            if (topk <= 0)
              util::fail(self, "attr 'topk' must be positive, got " + std::to_string(topk));
            return std::vector<TensorDesc>{desc(DType::kI32, {q.shape[0], topk})};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
             const Json& attrs) {
            const double t = double(in[0].shape[0]), h = double(in[0].shape[1]),
                         d = double(in[0].shape[2]);
            const double s =
                double(util::attr_i_or(attrs, "context_len", in[3].shape[0] * in[1].shape[1]));
            // Per (query, key): H dot products of D, the ReLU and the weighted sum; then a top-k.
            return Cost{t * s * h * (2 * d + 3) + t * s * std::log2(std::max(2.0, s)),
                        util::bytes_of(in) + util::bytes_of(out), d * h};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { indexer_reference(in, out, a); },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"q", normal()},
                        {"k_cache", normal()},
                        {"weights", normal()},
                        {"block_table", {{"permutation", Json::object()}}}};
          },
      .selection_scores = indexer_selection_scores,
  };
  return op;
}

const OpDef& sparse_attention_op() {
  static const OpDef op = {
      .name = "sparse_attention",
      .inputs = {{"q", OperandKind::kFloat},
                 {"k_cache", OperandKind::kFloat},
                 {"v_cache", OperandKind::kFloat},
                 {"block_table", OperandKind::kI32},
                 {"indices", OperandKind::kI32}},
      .outputs = {{"o", OperandKind::kFloat}},
      .attrs = {{"context_len", AttrType::kInt, "null", nullptr, "keys in the cache; null = n * B"},
                {"scale", AttrType::kFloat, "null", nullptr, "score scale; null = 1/sqrt(Dh)"},
                {"causal", AttrType::kBool, "true", nullptr,
                 "mask keys after the query's position"},
                {"q_offset", AttrType::kInt, "null", nullptr,
                 "position of q[0] among the keys; null = context_len - T"}},
      .dims = {"T", "S", "Hq", "Hkv", "Dh", "Dv", "B", "K"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType, const std::set<std::string>&) {
            const OpDef& self = sparse_attention_op();
            const int64_t t = util::dim(self, dims, "T"), s = util::dim(self, dims, "S"),
                          hq = util::dim(self, dims, "Hq"), hkv = util::dim(self, dims, "Hkv"),
                          dh = util::dim(self, dims, "Dh"), dv = util::dim(self, dims, "Dv"),
                          b = util::dim(self, dims, "B"), k = util::dim(self, dims, "K");
            if (b <= 0) util::fail(self, "dim 'B' must be positive, got " + std::to_string(b));
            const int64_t n = (s + b - 1) / b;
            return std::vector<TensorDesc>{desc(dtype, {t, hq, dh}),
                                           desc(dtype, {n + 2, b, hkv, dh}),
                                           desc(dtype, {n + 2, b, hkv, dv}), desc(DType::kI32, {n}),
                                           desc(DType::kI32, {t, k})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = sparse_attention_op();
            const TensorDesc &q = in[0], &k = in[1], &v = in[2], &table = in[3], &idx = in[4];
            util::require_shape(self, q.shape.size() == 3, "q", q, "[T, Hq, Dh]");
            util::require_shape(
                self, k.shape.size() == 4 && k.shape[3] == q.shape[2] && k.shape[1] > 0, "k_cache",
                k, "[NB, B, Hkv, Dh] with Dh = " + std::to_string(q.shape[2]));
            util::require_shape(
                self, k.shape[2] > 0 && q.shape[1] % k.shape[2] == 0, "q", q,
                "[T, Hq, Dh] with Hq a multiple of Hkv = " + std::to_string(k.shape[2]));
            util::require_shape(self,
                                v.shape.size() == 4 && v.shape[0] == k.shape[0] &&
                                    v.shape[1] == k.shape[1] && v.shape[2] == k.shape[2],
                                "v_cache", v,
                                "[NB, B, Hkv, Dv] with NB, B, Hkv = " + std::to_string(k.shape[0]) +
                                    ", " + std::to_string(k.shape[1]) + ", " +
                                    std::to_string(k.shape[2]));
            require_table(self, table);
            util::require_shape(self, idx.shape.size() == 2 && idx.shape[0] == q.shape[0],
                                "indices", idx, "[T, K] with T = " + std::to_string(q.shape[0]));
            paged_len(self, attrs, table.shape[0] * k.shape[1]);
            return std::vector<TensorDesc>{desc(q.dtype, {q.shape[0], q.shape[1], v.shape[3]})};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            const double t = double(in[0].shape[0]), hq = double(in[0].shape[1]),
                         dh = double(in[0].shape[2]);
            const double dv = double(out[0].shape[2]), k = double(in[4].shape[1]);
            return Cost{2 * t * k * hq * (dh + dv) + 5 * t * k * hq,
                        util::bytes_of(in) + util::bytes_of(out), k};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { sparse_reference(in, out, a); },
      .default_inputs =
          [](const Dims& dims, const Json& attrs) {
            // Indices over the whole context, -1 and repeats among them.
            const bool len =
                attrs.contains("context_len") && attrs.at("context_len").is_number_integer();
            const int64_t s = len               ? attrs.at("context_len").get<int64_t>()
                              : dims.count("S") ? dims.at("S")
                                                : 1;
            return Json{{"q", normal()},
                        {"k_cache", normal()},
                        {"v_cache", normal()},
                        {"block_table", {{"permutation", Json::object()}}},
                        {"indices", {{"ints", {{"low", -1}, {"high", s}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
