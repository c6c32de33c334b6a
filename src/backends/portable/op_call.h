// Internal contract of the portable ops (ops_*.cc): the call's operands and validated attrs,
// and the checks each op makes before it launches anything.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "device.h"

namespace h0p {

using Json = nlohmann::json;

// One run_op call. in[i] for i >= n_in is an absent optional operand.
struct Call {
  const char* op;
  const hb_tensor* in;
  int n_in;
  hb_tensor* out;
  int n_out;
  const Json& attrs;
  Device& dev;
};

using OpFn = void (*)(const Call& call);

constexpr size_t kRowGroup = 256;  // WG in kernels/common.inc

// One work-group per row.
inline Grid per_row(int64_t rows) { return {{static_cast<size_t>(rows), 1}, {kRowGroup, 1}}; }

// Throws OpError(HB_INVALID_ARGUMENT, "<op>: <message>") unless `ok`.
void require(const Call& call, bool ok, const std::string& message);
std::string describe(const hb_tensor& t);  // "[2, 3, 4] bf16"
int64_t numel(const hb_tensor& t);
// Checks that `t` has exactly `dims` (-1 matches anything) and dtype `dtype`.
void require_tensor(const Call& call, const hb_tensor& t, const char* name,
                    std::initializer_list<int64_t> dims, hb_dtype dtype);
void require_like(const Call& call, const hb_tensor& t, const char* name, const hb_tensor& like);
// Checks that index operand `t` (i32 or i64) has exactly `dims`.
void require_index(const Call& call, const hb_tensor& t, const char* name,
                   std::initializer_list<int64_t> dims);
// `v` as a kernel's int: throws OpError(HB_UNSUPPORTED) when it does not fit in 31 bits.
int as_int(const Call& call, int64_t v);
// An index tensor's values, copied to the host (ids are validated there).
std::vector<int64_t> read_indices(const Call& call, const hb_tensor& t);

// Attrs arrive validated and defaulted; `fallback` only covers a partial caller. Null = absent.
double attr_f(const Json& a, const char* name, double fallback);
int64_t attr_i(const Json& a, const char* name, int64_t fallback);
bool attr_b(const Json& a, const char* name, bool fallback);
std::string attr_s(const Json& a, const char* name, const std::string& fallback);
bool attr_null(const Json& a, const char* name);

// A paged cache's context: block_table (i32, n entries) checked against the cache's NB blocks of
// B up to context_len (attr; null = n·B), and the attrs q_offset (null = context_len − t) and
// causal (true). Throws OpError naming what is out of range.
struct PagedContext {
  int64_t len, q_offset;
  bool causal;
  int bsz;
};
PagedContext paged_context(const Call& call, const hb_tensor& cache, const hb_tensor& table,
                           int64_t t);

// The ops, by family.
void matmul_op(const Call& call);             // ops_dense.cc
void linear_op(const Call& call);             // ops_dense.cc
void patch_embed_op(const Call& call);        // ops_dense.cc
void embedding_op(const Call& call);          // ops_dense.cc
void add_op(const Call& call);                // ops_dense.cc
void mul_op(const Call& call);                // ops_dense.cc
void silu_op(const Call& call);               // ops_dense.cc
void sigmoid_op(const Call& call);            // ops_dense.cc
void gelu_op(const Call& call);               // ops_dense.cc
void swiglu_op(const Call& call);             // ops_dense.cc
void rmsnorm_op(const Call& call);            // ops_dense.cc
void layernorm_op(const Call& call);          // ops_dense.cc
void softmax_op(const Call& call);            // ops_dense.cc
void argmax_op(const Call& call);             // ops_dense.cc
void rmsnorm_gated_op(const Call& call);      // ops_linear_attention.cc
void gdn_gating_op(const Call& call);         // ops_linear_attention.cc
void causal_conv1d_op(const Call& call);      // ops_linear_attention.cc
void gated_delta_rule_op(const Call& call);   // ops_linear_attention.cc
void lightning_indexer_op(const Call& call);  // ops_linear_attention.cc
void sparse_attention_op(const Call& call);   // ops_linear_attention.cc
void rope_op(const Call& call);               // ops_attention.cc
void attention_op(const Call& call);          // ops_attention.cc
void paged_attention_op(const Call& call);    // ops_attention.cc
void moe_gate_op(const Call& call);           // ops_moe.cc
void moe_experts_op(const Call& call);        // ops_moe.cc

}  // namespace h0p
