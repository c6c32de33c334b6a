// Internal contract of the portable ops (ops_*.cc): the call, and the ops by family. The checks
// each op makes before it launches anything are operands.h's and op_operands.h's, shared with
// the cpu backend.
#pragma once

#include "device.h"
#include "op_operands.h"

namespace h0p {

// One run_op call on a Device: its operands (checked through op_operands.h) and the device the
// ops launch on, which is also the operands' memory.
struct Call : Operands {
  Device& dev;
};

using OpFn = void (*)(const Call& call);

constexpr size_t kRowGroup = 256;  // WG in kernels/common.inc

// One work-group per row.
inline Grid per_row(int64_t rows) { return {{static_cast<size_t>(rows), 1}, {kRowGroup, 1}}; }

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
void scaled_linear_op(const Call& call);      // ops_quant.cc
void dequantize_mxfp4_op(const Call& call);   // ops_quant.cc

}  // namespace h0p
