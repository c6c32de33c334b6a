// embedding and patch_embed: the two ways tokens enter a model.
//   embedding(ids[T], table[V,D]) = out[T,D], out[t] = table[ids[t]] · scale   a gather; bytes
//     count the T rows read, not the whole table. An id outside [0, V) is an InputError. attr
//     scale (default 1: an exact copy): each element times the f32 value of scale, rounded once
//     into the table's dtype (Gemma 3's √D; the model rounds √D to its dtype first, as HF does);
//     T·D flops when scale ≠ 1.
//   patch_embed(pixels[C,Hi,Wi], w[D,C,P,P], optional b[D]) = out[(Hi/P)·(Wi/P), D]:
//     a Conv2d with kernel = stride = P (attr `patch`), flattened row-major over patches
//     (patch (r, c) is row r·(Wi/P) + c), as HF ViT / SigLIP / CLIP patch embeddings.
//     out[p,d] = Σ_{c,i,j} w[d,c,i,j]·pixels[c, r·P+i, cc·P+j] + b[d]; flops 2·Np·D·C·P·P
//     (+ Np·D with b); reduction C·P·P, in f64.
#include <cmath>

#include "ops/op_list.h"
#include "ops/op_util.h"
#include "tensor/convert.h"

namespace h0::ops {
namespace {

using util::desc;

// The patch size P from attr `patch` (required, > 0).
int64_t patch_size(const Json& attrs) {
  const OpDef& op = patch_embed_op();
  if (!attrs.contains("patch") || !attrs.at("patch").is_number_integer()) {
    util::fail(op, "missing attr 'patch'");
  }
  const int64_t p = util::attr_i(attrs, "patch");
  if (p <= 0) util::fail(op, "attr 'patch' must be positive, got " + std::to_string(p));
  return p;
}

// ids is (T); table is (V, D). out[t] = table[ids[t]].
void embedding_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                         double scale) {
  const int64_t t = in[0]->dim(0), v = in[1]->dim(0), d = in[1]->dim(1);
  const auto ids = util::to_f64(*in[0]);
  // Only the gathered rows are widened (a vocabulary-wide table in f64 is GBs).
  const size_t row_bytes = static_cast<size_t>(d) * tensor::dtype_size(in[1]->dtype());
  std::vector<double> row(static_cast<size_t>(d));
  std::vector<double> y(static_cast<size_t>(t * d));
  for (int64_t i = 0; i < t; ++i) {
    const auto id = static_cast<int64_t>(ids[static_cast<size_t>(i)]);
    if (id < 0 || id >= v) {
      util::fail(embedding_op(), "id " + std::to_string(id) + " at position " + std::to_string(i) +
                                     " is outside [0, " + std::to_string(v) + ")");
    }
    tensor::convert(
        static_cast<const std::byte*>(in[1]->data()) + static_cast<size_t>(id) * row_bytes,
        in[1]->dtype(), row.data(), tensor::DType::kF64, row.size());
    for (int64_t j = 0; j < d; ++j)
      y[static_cast<size_t>(i * d + j)] = row[static_cast<size_t>(j)] * scale;
  }
  util::from_f64(y, out[0]);
}

// pixels is (C, Hi, Wi); w is (D, C, P, P); b is (D) or absent.
void patch_embed_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                           int64_t p) {
  const int64_t c = in[0]->dim(0), hi = in[0]->dim(1), wi = in[0]->dim(2), d = in[1]->dim(0);
  const int64_t rows = hi / p, cols = wi / p;
  const auto px = util::to_f64(*in[0]);
  const auto w = util::to_f64(*in[1]);
  const auto b = in.size() > 2 && in[2] != nullptr ? util::to_f64(*in[2]) : std::vector<double>();
  std::vector<double> y(static_cast<size_t>(rows * cols * d));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t cc = 0; cc < cols; ++cc) {
      for (int64_t o = 0; o < d; ++o) {
        double acc = b.empty() ? 0.0 : b[static_cast<size_t>(o)];
        for (int64_t ch = 0; ch < c; ++ch) {
          for (int64_t i = 0; i < p; ++i) {
            for (int64_t j = 0; j < p; ++j) {
              acc += w[static_cast<size_t>(((o * c + ch) * p + i) * p + j)] *
                     px[static_cast<size_t>((ch * hi + r * p + i) * wi + cc * p + j)];
            }
          }
        }
        y[static_cast<size_t>((r * cols + cc) * d + o)] = acc;
      }
    }
  }
  util::from_f64(y, out[0]);
}

}  // namespace

const OpDef& embedding_op() {
  static const OpDef op = {
      .name = "embedding",
      .inputs = {{"ids", OperandKind::kIndex}, {"table", OperandKind::kFloat}},
      .outputs = {{"out", OperandKind::kFloat}},
      .attrs = {{"scale", AttrType::kFloat, "1", nullptr,
                 "multiplies every element (Gemma 3: √D)"}},
      .dims = {"T", "V", "D"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kElementwise,
      .operands =
          [](const Dims& dims, const Json&, DType dtype, DType index_dtype,
             const std::set<std::string>&) {
            const OpDef& self = embedding_op();
            const int64_t t = util::dim(self, dims, "T"), v = util::dim(self, dims, "V"),
                          d = util::dim(self, dims, "D");
            return std::vector<TensorDesc>{desc(index_dtype, {t}), desc(dtype, {v, d})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json&) {
            const OpDef& self = embedding_op();
            const TensorDesc &ids = in[0], &table = in[1];
            util::require_shape(self, ids.shape.size() == 1, "ids", ids, "[T]");
            util::require_shape(self, table.shape.size() == 2, "table", table, "[V, D]");
            return std::vector<TensorDesc>{desc(table.dtype, {ids.shape[0], table.shape[1]})};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json& a) {
            // The gathered rows, not the whole table: a 32000-row table is not read per call.
            const double rows_read = util::bytes_of(out);
            const double flops =
                util::attr_f(a, "scale") == 1 ? 0 : double(out[0].shape[0] * out[0].shape[1]);
            return Cost{flops, util::bytes_of({in[0]}) + rows_read + util::bytes_of(out), 1};
          },
      .reference =
          [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, const Json& a) {
            embedding_reference(in, out, static_cast<float>(util::attr_f(a, "scale")));
          },
      .default_inputs =
          [](const Dims& dims, const Json&) {
            const int64_t v = util::dim(embedding_op(), dims, "V");
            return Json{{"ids", {{"ints", {{"low", 0}, {"high", v}}}}},
                        {"table", {{"normal", {{"mean", 0}, {"std", 1}}}}}};
          },
  };
  return op;
}

const OpDef& patch_embed_op() {
  static const OpDef op = {
      .name = "patch_embed",
      .inputs = {{"pixels", OperandKind::kFloat},
                 {"w", OperandKind::kFloat},
                 {"b", OperandKind::kFloat, true}},
      .outputs = {{"out", OperandKind::kFloat}},
      .attrs = {{"patch", AttrType::kInt, nullptr, nullptr, "patch size P: kernel and stride"}},
      .dims = {"C", "Hi", "Wi", "D"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kReduction,
      .operands =
          [](const Dims& dims, const Json& attrs, DType dtype, DType,
             const std::set<std::string>& with) {
            const OpDef& self = patch_embed_op();
            const int64_t p = patch_size(attrs);
            const int64_t c = util::dim(self, dims, "C"), hi = util::dim(self, dims, "Hi"),
                          wi = util::dim(self, dims, "Wi"), d = util::dim(self, dims, "D");
            std::vector<TensorDesc> in = {desc(dtype, {c, hi, wi}), desc(dtype, {d, c, p, p})};
            if (with.count("b")) in.push_back(desc(dtype, {d}));
            return in;
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = patch_embed_op();
            const int64_t p = patch_size(attrs);
            const TensorDesc &px = in[0], &w = in[1];
            const TensorDesc b = in.size() > 2 ? in[2] : util::absent();
            util::require_shape(
                self, px.shape.size() == 3 && px.shape[1] % p == 0 && px.shape[2] % p == 0,
                "pixels", px, "[C, Hi, Wi] with Hi and Wi multiples of patch " + std::to_string(p));
            const int64_t c = px.shape[0];
            util::require_shape(
                self, w.shape.size() == 4 && w.shape[1] == c && w.shape[2] == p && w.shape[3] == p,
                "w", w,
                "[D, C, P, P] with C = " + std::to_string(c) + ", P = " + std::to_string(p));
            if (b.present) {
              util::require_shape(self, b.shape == Shape{w.shape[0]}, "b", b,
                                  "[D] = [" + std::to_string(w.shape[0]) + "]");
            }
            const int64_t patches = (px.shape[1] / p) * (px.shape[2] / p);
            return std::vector<TensorDesc>{desc(px.dtype, {patches, w.shape[0]})};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, const Json&) {
            const Shape& w = in[1].shape;
            const double per_output = static_cast<double>(w[1] * w[2] * w[3]);
            const double outputs = static_cast<double>(tensor::numel(out[0].shape));
            const bool bias = in.size() > 2 && in[2].present;
            return Cost{2 * outputs * per_output + (bias ? outputs : 0),
                        util::bytes_of(in) + util::bytes_of(out), per_output};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { patch_embed_reference(in, out, util::attr_i(a, "patch")); },
      .default_inputs =
          [](const Dims& dims, const Json& attrs) {
            const double fan_in = static_cast<double>(util::dim(patch_embed_op(), dims, "C") *
                                                      patch_size(attrs) * patch_size(attrs));
            return Json{{"pixels", {{"uniform", {{"low", -1}, {"high", 1}}}}},
                        {"w", {{"normal", {{"mean", 0}, {"std", 1 / std::sqrt(fan_in)}}}}},
                        {"b", {{"normal", {{"mean", 0}, {"std", 0.1}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
