// The tensor inventory: every weight tensor of a model's checkpoint, with its HF name, shape,
// dtype and how it is sharded over each parallel dimension. Parameter counts, the memory plan
// and sharded loading all derive from this one list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config/architecture.h"
#include "model/config/tensor_names.h"
#include "tensor/dtype.h"

namespace h0::model {

// How a tensor splits over tensor-parallel ranks.
enum class TpSplit {
  kReplicated,  // every rank holds all of it
  kColumn,      // dim 0 split (q/k/v/gate/up projections, their biases)
  kRow,         // dim 1 split (o/down projections); the partial results are all-reduced
  kVocab,       // dim 0 split by vocabulary rows (embedding, LM head)
};
const char* tp_split_name(TpSplit split);  // "replicated", "column", "row", "vocab"

enum class WeightRole {
  kParameter,   // a parameter of the HF model
  kBuffer,      // in checkpoints but a buffer in HF (DeepSeek-V3's gate.e_score_correction_bias)
  kQuantScale,  // a quantized checkpoint's scales (weight_scale_inv of fp8 block quantization)
};

struct WeightInfo {
  std::string name;  // HF checkpoint name, e.g. "model.layers.3.self_attn.q_proj.weight"
  std::vector<int64_t> shape;
  tensor::DType dtype = tensor::DType::kBF16;
  WeightRole role = WeightRole::kParameter;
  TpSplit tp = TpSplit::kReplicated;
  // The split axis is cut in whole units of this many rows/columns (head_dim for head-split
  // projections), so a rank never holds part of a head.
  int64_t tp_unit = 1;
  // A column split whose axis 0 is these consecutive parts, each cut over the ranks on its own
  // in whole units of its own (a Gated DeltaNet layer's conv / in_proj_qkv channels: q | k | v
  // of all heads): a rank holds its share of every part, one after another. Empty: one part.
  struct TpPart {
    int64_t size = 0, unit = 1;
  };
  std::vector<TpPart> tp_parts;
  bool kv_heads = false;  // split by kv heads: replicated in groups when kv heads < tp
  int64_t layer = -1;   // decoder layer (pipeline stage by layer); -1 before the first, num_layers
                        // after the last
  int64_t expert = -1;  // routed expert index (expert-parallel placement); -1 if none
  int64_t vision_layer = -1;  // a vision role's encoder layer; -1 for the tower's other weights
  // Every routed expert along axis 0 (GPT-OSS's fused experts): expert parallelism cuts axis 0.
  bool all_experts = false;
  int tp_axis = -1;  // the axis a column/row split cuts; -1: 0 for column and vocab, 1 for row
  TensorRole tensor = TensorRole::kOther;
  TensorPiece piece = TensorPiece::kWeight;
  bool mtp = false;  // multi-token-prediction layer: in released checkpoints, not in the HF model
  bool quantized = false;  // a linear weight stored in the checkpoint's quantized dtype

  int64_t numel() const;
  int64_t bytes() const { return numel() * static_cast<int64_t>(tensor::dtype_size(dtype)); }
};

struct ParamCounts {
  int64_t total = 0;       // HF num_parameters(): parameters, MTP excluded
  int64_t active = 0;      // per token: total minus the routed experts a token does not use
  int64_t buffers = 0;     // checkpoint tensors that are HF buffers
  int64_t mtp = 0;         // MTP layers' unique parameters (excludes their embed/head copies)
  int64_t mtp_shared = 0;  // MTP copies of the embedding and head
  int64_t vision = 0;      // vision tower + projector (included in total)
};

struct InventoryOptions {
  // The dtype weights are stored in; default: the config's torch_dtype, else bf16.
  std::optional<tensor::DType> dtype;
  // Emit quantized linear weights (f8_e4m3 + weight_scale_inv) as the config's
  // quantization_config says (DeepSeek-V3, Kimi-K2). Off: all weights in `dtype`.
  bool quantized = true;
  bool include_mtp = true;
};

struct Inventory {
  std::vector<WeightInfo> weights;
  ParamCounts counts;
  // The checkpoint's quantization blocks (quantization_config fp8 weight_block_size), 0 when the
  // config quantizes nothing: how a `<name>_scale_inv` covers its weight.
  int64_t block_rows = 0, block_cols = 0;

  // Returns nullptr if absent. O(n).
  const WeightInfo* find(const std::string& name) const;
  // The weight of `tensor` in `layer` (a routed expert's: with `expert`), MTP layers excluded;
  // nullptr if the model has none. O(n).
  const WeightInfo* find(int64_t layer, TensorRole tensor, TensorPiece piece = TensorPiece::kWeight,
                         int64_t expert = -1) const;
};

Inventory build_inventory(const Architecture& arch, const InventoryOptions& options = {});

// Throws InputError("tp N", "<name>: rows [b, e) of this rank cut through its B-wide quantization
// blocks ...") unless [begin, end) of an axis `dim` long is whole blocks of `block` (the last may
// be ragged): a tensor-parallel part of a block-quantized weight. The planner's shard_of applies it
// to the inventory's quantized weights, ModelWeights to any weight stored fp8.
void require_whole_blocks(const std::string& name, int64_t parts, int64_t begin, int64_t end,
                          int64_t dim, int64_t block);

}  // namespace h0::model
