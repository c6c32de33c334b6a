// The catalogue ops a model runs, with their attrs at its architecture: bound once here for the
// executor, and listed by the same code for `harness coverage` and day0's coverage and op stages,
// so the list a model "needs" cannot drift from what it runs (tests/model/model_ops_test.cc runs
// each tiny model and compares the ops it actually ran with names()).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "model/config/architecture.h"
#include "model/config/block.h"
#include "model/exec/op_runner.h"
#include "tensor/dtype.h"

namespace h0::model {

// The ops one block bound (Block::bind, config/block.h), by labels of its own choosing.
struct BlockOps {
  std::map<std::string, BoundOp> ops;

  void add(const std::string& label, BoundOp op) { ops[label] = std::move(op); }
  // The op bound under `label`; a bug (H0_CHECK) when the block bound none.
  const BoundOp& at(const std::string& label) const;
  // The op bound under `label`, or null (an op the config does not need).
  const BoundOp* find(const std::string& label) const {
    const auto it = ops.find(label);
    return it == ops.end() ? nullptr : &it->second;
  }
};

// The model's ops outside its blocks (the norms between them, the embedding and head, the
// projections every block runs through linear / linear_widen / scaled_linear, the vision towers),
// and each block's own.
struct ModelOps {
  BoundOp rmsnorm, linear, add, embedding, argmax;
  // A projection whose weight is kept as the checkpoint stores it (bf16) in an f32 run
  // (widened_weight_dtype): bound with attr dtype the stored one.
  BoundOp linear_widen;
  BoundOp scaled_linear;  // fp8 block-quantized projections (quantization_config fp8)
  // The ops of each block some layer runs (config/block.h), bound by the block.
  std::map<const Block*, BlockOps> blocks;
  // The vision towers. LLaVA's CLIP: layernorm, mul and silu (quick_gelu), gelu, the patch
  // embedding, attention. Qwen2.5-VL's: RMSNorm (norm1, norm2, the merger's ln_q), the 2-D rope
  // over (h, w) (rope mrope per_axis), bidirectional attention per window, SwiGLU, the merger's
  // GELU.
  BoundOp layernorm, mul, silu, gelu, swiglu, patch_embed, vision_attention;
  BoundOp vision_norm, vision_rope;

  // The ops the blocks bind per sequence and step at its context (Block::bind_context:
  // paged_attention, or with an indexer lightning_indexer and sparse_attention).
  std::set<std::string> context;

  // The op a block bound under `label` (the first block's, in the registry's order), or null.
  const BoundOp* find(const std::string& label) const;
  // Every op the model runs: the bound ones, `context`'s and sample (bound per request: its
  // sampling parameters).
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
// cannot express (Block::bind: an odd partial rotary dim; routed experts with an activation other
// than silu).
ModelOps model_ops(const Architecture& arch, tensor::DType dtype, bool act_quant = false,
                   std::optional<tensor::DType> stored = {});

}  // namespace h0::model
