// One function per operator, each defined in the file of its family; catalogue.cc lists them.
// Adding an op: one new definition in a family file, one line here and one in catalogue.cc.
#pragma once

#include "ops/op.h"

namespace h0::ops {

const OpDef& matmul_op();             // matmul_ops.cc
const OpDef& linear_op();             // matmul_ops.cc
const OpDef& linear_widen_op();       // matmul_ops.cc
const OpDef& embedding_op();          // embedding_ops.cc
const OpDef& add_op();                // elementwise_ops.cc
const OpDef& mul_op();                // elementwise_ops.cc
const OpDef& rmsnorm_op();            // norm_ops.cc
const OpDef& layernorm_op();          // norm_ops.cc
const OpDef& rmsnorm_gated_op();      // norm_ops.cc
const OpDef& rope_op();               // rope_op.cc
const OpDef& softmax_op();            // softmax_op.cc
const OpDef& silu_op();               // elementwise_ops.cc
const OpDef& sigmoid_op();            // elementwise_ops.cc
const OpDef& gelu_op();               // elementwise_ops.cc
const OpDef& swiglu_op();             // elementwise_ops.cc
const OpDef& attention_op();          // attention_ops.cc
const OpDef& paged_attention_op();    // attention_ops.cc
const OpDef& lightning_indexer_op();  // sparse_attention_ops.cc
const OpDef& sparse_attention_op();   // sparse_attention_ops.cc
const OpDef& causal_conv1d_op();      // linear_attention_ops.cc
const OpDef& gated_delta_rule_op();   // linear_attention_ops.cc
const OpDef& gdn_gating_op();         // linear_attention_ops.cc
const OpDef& moe_gate_op();           // moe_ops.cc
const OpDef& moe_experts_op();        // moe_ops.cc
const OpDef& patch_embed_op();        // embedding_ops.cc
const OpDef& quantize_op();           // quant_ops.cc
const OpDef& dequantize_op();         // quant_ops.cc
const OpDef& dequantize_mxfp4_op();   // mxfp4_op.cc
const OpDef& scaled_linear_op();      // quant_ops.cc
const OpDef& argmax_op();             // sampling_ops.cc
const OpDef& sample_op();             // sampling_ops.cc

}  // namespace h0::ops
