// Internal contract of the cpu backend's kernels (src/backends/cpu/cpu_*.cc); nothing outside
// this folder includes it.
//
// A kernel gets the call's hb_tensors (contiguous, row-major, host memory) and the validated,
// defaulted attrs. It checks the shapes it relies on and throws OpError for anything it cannot
// compute: HB_INVALID_ARGUMENT for a bad shape or bad data (an id out of range), HB_UNSUPPORTED
// for a dtype or attr value it does not implement. cpu_backend.cc turns the error into the
// status and last_error.
//
// Numerics: f32, bf16 and f16 operands are widened to f32, everything is computed and
// accumulated in f32 and every result is rounded once to its dtype (round to nearest even,
// tensor/convert.h). Work is split with base::parallel_for into chunks that depend only on
// the problem size, and each output element is written by exactly one chunk, so results are
// the same bits for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/harness_backend.h"
#include "backends/portable/op_operands.h"

namespace h0::backends::cpu {

// The call, its error and its operand checks are the ones the device plugins use
// (backends/portable/operands.h, op_operands.h); the kernels call them unqualified.
using h0p::attr_b;
using h0p::attr_f;
using h0p::attr_i;
using h0p::attr_null;
using h0p::attr_s;
using h0p::describe;
using h0p::elem_size;
using h0p::is_float;
using h0p::Json;
using h0p::numel;
using h0p::Operands;
using h0p::OpError;
using h0p::require;
using h0p::require_index;
using h0p::require_like;
using h0p::require_tensor;
using h0p::unsupported;

using KernelFn = void (*)(const Operands& call);

// The memory of the cpu backend's operands: the host's.
h0p::OperandMemory& host_memory();

// Element i of an i32 or i64 tensor.
inline int64_t index_at(const hb_tensor& t, int64_t i) {
  return t.dtype == HB_I64 ? static_cast<const int64_t*>(t.data)[i]
                           : static_cast<const int32_t*>(t.data)[i];
}

// Widens elements [first, first + n) of a float tensor into dst. O(n).
void load_f32(const hb_tensor& t, size_t first, size_t n, float* dst);
// Rounds n f32 values into elements [first, first + n) of a float tensor.
void store_f32(const float* src, const hb_tensor& t, size_t first, size_t n);

// A whole float tensor as f32: the tensor's own memory for f32 (zero-copy), else a widened
// copy made on worker threads.
class F32View {
 public:
  explicit F32View(const hb_tensor& t);
  const float* data() const { return data_; }

 private:
  std::vector<float> owned_;
  const float* data_;
};

// Writes a whole f32 buffer into a float tensor, rounding on worker threads.
void store_all(const std::vector<float>& src, const hb_tensor& t);

// Keys 0..len-1 of a paged cache [NB, B, ...] (`width` values each, key j at block
// table[j / B], slot j % B) as contiguous f32 [len, width]; the caller has checked the table.
std::vector<float> gather_paged(const hb_tensor& cache, const hb_tensor& table, int64_t len,
                                int64_t width);

// Rows per parallel_for chunk so that a chunk holds about 64K elements of work.
size_t row_grain(int64_t row_elements);

// C[M,N] = A[M,K] · op(B) (+ C when accumulate), all f32 row-major; op(B) is B[K,N], or
// B[N,K] transposed when `b_transposed`. OpenBLAS sgemm on its own threads.
void sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, bool b_transposed,
           float* c, bool accumulate);

// The kernels, one per catalogue op, in their family files.
void matmul_kernel(const Operands& call);             // cpu_gemm.cc
void linear_kernel(const Operands& call);             // cpu_gemm.cc
void linear_widen_kernel(const Operands& call);       // cpu_gemm.cc
void embedding_kernel(const Operands& call);          // cpu_elementwise.cc
void add_kernel(const Operands& call);                // cpu_elementwise.cc
void mul_kernel(const Operands& call);                // cpu_elementwise.cc
void silu_kernel(const Operands& call);               // cpu_elementwise.cc
void sigmoid_kernel(const Operands& call);            // cpu_elementwise.cc
void gelu_kernel(const Operands& call);               // cpu_elementwise.cc
void swiglu_kernel(const Operands& call);             // cpu_elementwise.cc
void rmsnorm_kernel(const Operands& call);            // cpu_norm.cc
void layernorm_kernel(const Operands& call);          // cpu_norm.cc
void rmsnorm_gated_kernel(const Operands& call);      // cpu_norm.cc
void softmax_kernel(const Operands& call);            // cpu_norm.cc
void rope_kernel(const Operands& call);               // cpu_rope.cc
void attention_kernel(const Operands& call);          // cpu_attention.cc
void paged_attention_kernel(const Operands& call);    // cpu_attention.cc
void lightning_indexer_kernel(const Operands& call);  // cpu_sparse_attention.cc
void sparse_attention_kernel(const Operands& call);   // cpu_sparse_attention.cc
void causal_conv1d_kernel(const Operands& call);      // cpu_linear_attention.cc
void gated_delta_rule_kernel(const Operands& call);   // cpu_linear_attention.cc
void gdn_gating_kernel(const Operands& call);         // cpu_linear_attention.cc
void moe_gate_kernel(const Operands& call);           // cpu_moe.cc
void moe_experts_kernel(const Operands& call);        // cpu_moe.cc
void patch_embed_kernel(const Operands& call);        // cpu_gemm.cc
void quantize_kernel(const Operands& call);           // cpu_quant.cc
void dequantize_kernel(const Operands& call);         // cpu_quant.cc
void dequantize_mxfp4_kernel(const Operands& call);   // cpu_quant.cc
void scaled_linear_kernel(const Operands& call);      // cpu_quant.cc
void argmax_kernel(const Operands& call);             // cpu_sampling.cc
void sample_kernel(const Operands& call);             // cpu_sampling.cc

}  // namespace h0::backends::cpu
