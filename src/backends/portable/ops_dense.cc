// GEMM-shaped, element-wise, row-reduction and lookup ops (kernels/gemm.inc, elementwise.inc,
// rows.inc). Shapes as in the catalogue:
//   matmul(a[M,K], b[K,N]) -> c[M,N]      linear(x[T,K], w[N,K], bias[N]?) -> y[T,N]
//   patch_embed(pixels[C,Hi,Wi], w[D,C,P,P], b[D]?) -> out[(Hi/P)·(Wi/P), D]
//   embedding(ids[T], table[V,D]) -> out[T,D]     add/mul/silu/gelu/swiglu: same shapes
//   rmsnorm(x[T,D], w[D]), layernorm(x[T,D], w[D], b[D]), softmax(x[..., N]), argmax(x[T,V])
#include <string>

#include "op_call.h"

namespace h0p {
namespace {

void unary(const Call& call, int code) {
  const hb_tensor& x = call.in[0];
  require_like(call, call.out[0], "y", x);
  const int n = as_int(call, numel(x));
  if (n == 0) return;
  call.dev.launch("unary_map", x.dtype, grid_1d(n),
                  {buffer(x.data), buffer(call.out[0].data), i32(n), i32(code)});
}

void binary(const Call& call, int code) {
  const hb_tensor &a = call.in[0], &b = call.in[1];
  require_like(call, b, call.op[0] == 's' ? "up" : "b", a);
  require_like(call, call.out[0], "c", a);
  const int n = as_int(call, numel(a));
  if (n == 0) return;
  call.dev.launch("binary_map", a.dtype, grid_1d(n),
                  {buffer(a.data), buffer(b.data), buffer(call.out[0].data), i32(n), i32(code)});
}

void norm(const Call& call, bool center) {
  const hb_tensor& x = call.in[0];
  const Norm nm = norm_operands(call, center);
  const int64_t t = nm.t, d = nm.d;
  if (t == 0 || d == 0) return;
  const void* bias = center ? call.in[2].data : nullptr;
  const int c = center ? 1 : 0, dd = as_int(call, d);
  call.dev.launch("norm_rows", x.dtype, per_row(t),
                  {buffer(x.data), buffer(call.in[1].data), buffer(bias), buffer(call.out[0].data),
                   i32(dd), f32(nm.eps), i32(c), f32(nm.offset)});
}

}  // namespace

void matmul_op(const Call& call) {
  const hb_tensor &a = call.in[0], &b = call.in[1];
  const Gemm g = matmul_operands(call);
  const int64_t m = g.m, n = g.n, k = g.k;
  if (m == 0 || n == 0) return;
  call.dev.gemm(a.dtype, a.data, b.data, nullptr, call.out[0].data, as_int(call, m),
                as_int(call, n), as_int(call, k), false);
}

void linear_op(const Call& call) {
  const hb_tensor &x = call.in[0], &w = call.in[1];
  const Gemm g = linear_operands(call);
  const int64_t t = g.m, n = g.n, k = g.k;
  const void* bias = g.bias != nullptr ? g.bias->data : nullptr;
  if (t == 0 || n == 0) return;
  call.dev.gemm(x.dtype, x.data, w.data, bias, call.out[0].data, as_int(call, t), as_int(call, n),
                as_int(call, k), true);
}

void patch_embed_op(const Call& call) {
  const hb_tensor &px = call.in[0], &w = call.in[1];
  const PatchEmbed pe = patch_embed_operands(call);
  const int64_t c = pe.c, hi = pe.hi, wi = pe.wi, p = pe.p, d = pe.d, np = pe.np;
  const void* bias = pe.bias != nullptr ? pe.bias->data : nullptr;
  if (np * d == 0) return;
  const int has_bias = bias != nullptr ? 1 : 0;
  const int ci = as_int(call, c), hii = as_int(call, hi), wii = as_int(call, wi),
            pi = as_int(call, p), npi = as_int(call, np), di = as_int(call, d);
  call.dev.launch(
      "patch_embed", px.dtype, grid_1d(np * d),
      {buffer(px.data), buffer(w.data), buffer(bias), i32(has_bias), buffer(call.out[0].data),
       i32(ci), i32(hii), i32(wii), i32(pi), i32(npi), i32(di)});
}

void embedding_op(const Call& call) {
  const hb_tensor &ids = call.in[0], &table = call.in[1];
  const Embedding e = embedding_operands(call);
  const int64_t t = e.t, d = e.d;
  if (t * d == 0) return;
  const int is64 = ids.dtype == HB_I64 ? 1 : 0, rows = as_int(call, t), dd = as_int(call, d);
  const float scale =
      static_cast<float>(attr_f(call.attrs, "scale", 1.0));  // 1: LD·1 then ST is exact
  call.dev.launch("gather_rows", table.dtype, grid_1d(t * d),
                  {buffer(ids.data), i32(is64), buffer(table.data), buffer(call.out[0].data),
                   i32(rows), i32(dd), f32(scale)});
}

void add_op(const Call& call) { binary(call, 0); }
void mul_op(const Call& call) { binary(call, 1); }
void swiglu_op(const Call& call) {
  require_tensor(call, call.in[0], "gate", {-1, -1}, call.in[0].dtype);
  binary(call, 2);
}
void silu_op(const Call& call) { unary(call, 0); }
void sigmoid_op(const Call& call) { unary(call, 3); }

void gelu_op(const Call& call) {
  unary(call, attr_either(call, "approximate", "none", "none", "tanh") == "none" ? 1 : 2);
}

void rmsnorm_op(const Call& call) { norm(call, false); }
void layernorm_op(const Call& call) { norm(call, true); }

void softmax_op(const Call& call) {
  const hb_tensor& x = call.in[0];
  require(call, x.ndim >= 1, "x must be [..., N], got " + describe(x));
  require_like(call, call.out[0], "y", x);
  const int64_t n = x.shape[x.ndim - 1];
  if (n == 0 || numel(x) == 0) return;
  const int ni = as_int(call, n);
  call.dev.launch("softmax_rows", x.dtype, per_row(numel(x) / n),
                  {buffer(x.data), buffer(call.out[0].data), i32(ni)});
}

void argmax_op(const Call& call) {
  const hb_tensor& x = call.in[0];
  require_tensor(call, x, "x", {-1, -1}, x.dtype);
  require(call, x.shape[1] > 0, "x needs at least one column, got " + describe(x));
  require_tensor(call, call.out[0], "ids", {x.shape[0]}, HB_I64);
  if (x.shape[0] == 0) return;
  const int v = as_int(call, x.shape[1]);
  call.dev.launch("argmax_rows", x.dtype, per_row(x.shape[0]),
                  {buffer(x.data), buffer(call.out[0].data), i32(v)});
}

}  // namespace h0p
