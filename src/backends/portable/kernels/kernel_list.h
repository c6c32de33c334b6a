// Every kernel of the portable sources, for the CUDA plugin's name -> function table
// (OpenCL finds kernels by name in the built program). X(name) per kernel.
#pragma once
// clang-format off
#define H0_PORTABLE_KERNELS(X) \
  X(unary_map) \
  X(binary_map) \
  X(gather_rows) \
  X(broadcast_rows) \
  X(add_bias_f32) \
  X(norm_rows) \
  X(softmax_rows) \
  X(argmax_rows) \
  X(gemm_tiled) \
  X(patch_embed) \
  X(rope) \
  X(attention) \
  X(moe_gate) \
  X(moe_up) \
  X(moe_down) \
  X(norm_gated_rows) \
  X(gdn_gating) \
  X(causal_conv1d) \
  X(causal_conv1d_state) \
  X(l2norm_rows) \
  X(delta_rule) \
  X(indexer_scores) \
  X(sparse_attention) \
  X(dequant_fp8_blocks) \
  X(place_columns) \
  X(act_quant_fp8) \
  X(dequant_mxfp4)
// clang-format on
