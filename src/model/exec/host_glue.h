// Host-side data movement the catalogue has no op for: splitting and joining the last axis
// (MLA's nope/rope parts), repeating a shared head, placing image features. Exact byte moves in
// the tensors' own dtype; the arithmetic stays on the backend.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace h0::model::glue {

// The elements of an i64 tensor (token ids).
std::vector<int64_t> ids_of(const tensor::Tensor& t);

// t converted to f32 (a copy); t itself when it already is f32.
tensor::Tensor to_f32(const tensor::Tensor& t);
tensor::Tensor to_dtype(const tensor::Tensor& t, tensor::DType dtype);
// Every element times float(scale), in f32, rounded once back into t's dtype (embedding's attr
// scale).
tensor::Tensor scaled(const tensor::Tensor& t, double scale);

// t[..., N] -> (t[..., :n], t[..., n:]).
std::pair<tensor::Tensor, tensor::Tensor> split_last(const tensor::Tensor& t, int64_t n);
// a[..., A], b[..., B] (same leading dims and dtype) -> [..., A + B].
tensor::Tensor concat_last(const tensor::Tensor& a, const tensor::Tensor& b);
// Rows [0, n) and [n, R) of t[R, ...].
std::pair<tensor::Tensor, tensor::Tensor> split_rows(const tensor::Tensor& t, int64_t n);
// a[Ra, ...] above b[Rb, ...] (same trailing dims and dtype).
tensor::Tensor concat_rows(const tensor::Tensor& a, const tensor::Tensor& b);
// t[R, N] -> [R, cols.size()]: column i of the result is column cols[i] of t (a fused
// projection's outputs regrouped, Qwen3-Next's in_proj_qkvz).
tensor::Tensor gather_columns(const tensor::Tensor& t, const std::vector<int64_t>& cols);
// t[R, ...] -> [rows.size(), ...]: row i of the result is row rows[i] of t (a permutation of
// Qwen2.5-VL's patches into window order and back).
tensor::Tensor gather_rows(const tensor::Tensor& t, const std::vector<int64_t>& rows);
// t[T, 1, D] -> [T, heads, D] (MLA's rotary key, shared by every head).
tensor::Tensor repeat_heads(const tensor::Tensor& t, int64_t heads);
// Rows of `embeddings` [T, D] whose id equals `token` are replaced, in order, by the rows of
// `features` [N, D] (converted to the embeddings' dtype). Throws InputError when the number
// of such ids differs from N.
void scatter_rows(tensor::Tensor* embeddings, const std::vector<int64_t>& ids, int64_t token,
                  const tensor::Tensor& features);

}  // namespace h0::model::glue
