#include "model/exec/host_glue.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/error.h"

namespace h0::model::glue {
namespace {

const std::byte* bytes(const tensor::Tensor& t) { return static_cast<const std::byte*>(t.data()); }
std::byte* mutable_bytes(const tensor::Tensor& t) {
  return static_cast<std::byte*>(t.mutable_data());
}

}  // namespace

std::vector<int64_t> ids_of(const tensor::Tensor& t) {
  return std::vector<int64_t>(t.data_as<int64_t>(), t.data_as<int64_t>() + t.numel());
}

tensor::Tensor to_f32(const tensor::Tensor& t) { return to_dtype(t, tensor::DType::kF32); }

tensor::Tensor to_dtype(const tensor::Tensor& t, tensor::DType dtype) {
  return t.dtype() == dtype ? t : t.to(dtype);
}

tensor::Tensor scaled(const tensor::Tensor& t, double scale) {
  tensor::Tensor f = to_f32(t).clone();
  const float s = float(scale);
  float* v = f.mutable_data_as<float>();
  for (int64_t i = 0; i < f.numel(); ++i) v[i] *= s;
  return to_dtype(f, t.dtype());
}

std::pair<tensor::Tensor, tensor::Tensor> split_last(const tensor::Tensor& t, int64_t n) {
  const int64_t last = t.shape().back(), rows = t.numel() / last;
  H0_CHECK(n >= 0 && n <= last) << "split " << n << " of " << last;
  tensor::Shape sa = t.shape(), sb = t.shape();
  sa.back() = n;
  sb.back() = last - n;
  tensor::Tensor a = tensor::Tensor::zeros(t.dtype(), sa), b = tensor::Tensor::zeros(t.dtype(), sb);
  const size_t e = tensor::dtype_size(t.dtype());
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(mutable_bytes(a) + size_t(r * n) * e, bytes(t) + size_t(r * last) * e,
                size_t(n) * e);
    std::memcpy(mutable_bytes(b) + size_t(r * (last - n)) * e, bytes(t) + size_t(r * last + n) * e,
                size_t(last - n) * e);
  }
  return {std::move(a), std::move(b)};
}

tensor::Tensor concat_last(const tensor::Tensor& a, const tensor::Tensor& b) {
  const int64_t na = a.shape().back(), nb = b.shape().back(), rows = a.numel() / na;
  H0_CHECK(a.dtype() == b.dtype() && b.numel() / nb == rows) << "concat shapes";
  tensor::Shape s = a.shape();
  s.back() = na + nb;
  tensor::Tensor out = tensor::Tensor::zeros(a.dtype(), s);
  const size_t e = tensor::dtype_size(a.dtype());
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(mutable_bytes(out) + size_t(r * (na + nb)) * e, bytes(a) + size_t(r * na) * e,
                size_t(na) * e);
    std::memcpy(mutable_bytes(out) + size_t(r * (na + nb) + na) * e, bytes(b) + size_t(r * nb) * e,
                size_t(nb) * e);
  }
  return out;
}

std::pair<tensor::Tensor, tensor::Tensor> split_rows(const tensor::Tensor& t, int64_t n) {
  return {t.slice_rows(0, n).clone(), t.slice_rows(n, t.dim(0)).clone()};
}

tensor::Tensor concat_rows(const tensor::Tensor& a, const tensor::Tensor& b) {
  H0_CHECK(a.dtype() == b.dtype() && a.numel() / a.dim(0) == b.numel() / b.dim(0))
      << "concat_rows shapes";
  tensor::Shape s = a.shape();
  s[0] += b.dim(0);
  tensor::Tensor out = tensor::Tensor::zeros(a.dtype(), s);
  std::memcpy(mutable_bytes(out), bytes(a), a.nbytes());
  std::memcpy(mutable_bytes(out) + a.nbytes(), bytes(b), b.nbytes());
  return out;
}

tensor::Tensor gather_rows(const tensor::Tensor& t, const std::vector<int64_t>& rows) {
  tensor::Shape s = t.shape();
  const size_t row = t.nbytes() / size_t(std::max<int64_t>(t.dim(0), 1));
  s[0] = int64_t(rows.size());
  tensor::Tensor out = tensor::Tensor::zeros(t.dtype(), s);
  for (size_t i = 0; i < rows.size(); ++i) {
    H0_CHECK(rows[i] >= 0 && rows[i] < t.dim(0)) << "row " << rows[i] << " of " << t.dim(0);
    std::memcpy(mutable_bytes(out) + i * row, bytes(t) + size_t(rows[i]) * row, row);
  }
  return out;
}

tensor::Tensor gather_columns(const tensor::Tensor& t, const std::vector<int64_t>& cols) {
  const int64_t rows = t.dim(0), n = t.dim(1), m = int64_t(cols.size());
  const size_t e = tensor::dtype_size(t.dtype());
  tensor::Tensor out = tensor::Tensor::zeros(t.dtype(), {rows, m});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < m; ++i) {
      std::memcpy(mutable_bytes(out) + size_t(r * m + i) * e,
                  bytes(t) + size_t(r * n + cols[size_t(i)]) * e, e);
    }
  }
  return out;
}

tensor::Tensor repeat_heads(const tensor::Tensor& t, int64_t heads) {
  const int64_t T = t.dim(0), D = t.shape().back();
  tensor::Tensor out = tensor::Tensor::zeros(t.dtype(), {T, heads, D});
  const size_t row = size_t(D) * tensor::dtype_size(t.dtype());
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(mutable_bytes(out) + size_t(i * heads + h) * row, bytes(t) + size_t(i) * row,
                  row);
  }
  return out;
}

void scatter_rows(tensor::Tensor* embeddings, const std::vector<int64_t>& ids, int64_t token,
                  const tensor::Tensor& features) {
  int64_t count = 0;
  for (int64_t id : ids) count += id == token;
  if (count != features.dim(0)) {
    throw InputError("prompt", "has " + std::to_string(count) + " image tokens (id " +
                                   std::to_string(token) + ") but the image gives " +
                                   std::to_string(features.dim(0)) + " features");
  }
  const tensor::Tensor f = to_dtype(features, embeddings->dtype());
  const size_t row = size_t(embeddings->shape().back()) * tensor::dtype_size(embeddings->dtype());
  int64_t next = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] != token) continue;
    std::memcpy(mutable_bytes(*embeddings) + t * row, bytes(f) + size_t(next++) * row, row);
  }
}

}  // namespace h0::model::glue
