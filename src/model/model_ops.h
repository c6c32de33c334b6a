// The catalogue ops a model runs, with their attrs at its architecture: bound once here for the
// executor, and listed by the same code for `harness coverage` and day0's coverage and op stages,
// so the list a model "needs" cannot drift from what it runs (tests/model/model_ops_test.cc runs
// each tiny model and compares the ops it actually ran with names()).
#pragma once

#include <optional>
#include <set>
#include <string>

#include "model/architecture.h"
#include "model/op_runner.h"
#include "tensor/dtype.h"

namespace h0::model {

struct ModelOps {
  BoundOp rmsnorm, linear, add, swiglu, embedding, rope, argmax;
  // A projection whose weight is kept as the checkpoint stores it (bf16) in an f32 run
  // (widened_weight_dtype): bound with attr dtype the stored one.
  BoundOp linear_widen;
  BoundOp mlp_act;                // a gelu MLP's activation (with mul), in place of swiglu
  BoundOp local_rope;             // the sliding layers' RoPE when their base differs (Gemma 3)
  BoundOp scaled_linear;          // fp8 block-quantized projections (quantization_config fp8)
  BoundOp moe_gate, moe_experts;  // MoE layers
  BoundOp sigmoid;  // Qwen2-MoE's shared-expert gate, an attention output gate (with mul)
  // Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5): the conv over q|k|v, the gating of
  // the delta rule (g, beta), the rule itself and its gated output norm.
  BoundOp conv1d, gdn_gating, delta_rule, norm_gated;
  // DeepSeek-V3.2's lightning indexer: its key norm (LayerNorm), its half-split RoPE over the
  // first qk_rope_head_dim dims, and the selection's topk and scale (the executor adds each
  // forward pass's context; sparse_attention is bound per forward pass like paged_attention).
  BoundOp index_norm, index_rope, index_select;
  // mul: the shared-expert gate's, a gelu MLP's and the vision tower's
  BoundOp layernorm, mul, silu, gelu, patch_embed, vision_attention;  // the vision tower (LLaVA)
  // Qwen2.5-VL's tower: RMSNorm (norm1, norm2, the merger's ln_q), the 2-D rope over (h, w)
  // (rope mrope per_axis), bidirectional attention per window, SwiGLU, the merger's GELU.
  BoundOp vision_norm, vision_rope;

  // Every op the model runs: the bound ones, paged_attention — or with an indexer,
  // lightning_indexer and sparse_attention — (bound per forward pass: its context length) and
  // sample (bound per request: its sampling parameters).
  std::set<std::string> names() const;
};

// The dtype in which a run in `dtype` keeps the projections' weights (and the embedding table)
// as stored, for linear_widen: the checkpoint's bf16 or f16 (config torch_dtype) when the run is
// f32; nullopt otherwise (the weights are converted to the run dtype on load).
// `stored`: the checkpoint's float dtype where config.json names none (GPT-OSS-120B's has no
// torch_dtype; its tensors are bf16).
std::optional<tensor::DType> widened_weight_dtype(const Architecture& arch, tensor::DType dtype,
                                                  std::optional<tensor::DType> stored = {});

// The ops of a modelled architecture (Architecture::modelled), run in `dtype` (the constants
// HF rounds to the weights' dtype, Gemma 3's embedding scale, are rounded to it). `act_quant`:
// scaled_linear's act_quant "dynamic" instead of "none". Throws InputError for what the ops
// cannot express (an odd partial rotary dim; routed experts with an activation other than silu).
ModelOps model_ops(const Architecture& arch, tensor::DType dtype, bool act_quant = false,
                   std::optional<tensor::DType> stored = {});

}  // namespace h0::model
