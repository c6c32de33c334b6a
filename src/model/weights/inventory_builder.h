// The tensor inventory's builder: it appends a model's weights in checkpoint order (inventory.cc:
// the embedding, every decoder layer, the final norm and head, MTP layers, a vision tower). A
// decoder layer's blocks (config/block.h) append their own weights through its public part: a
// projection with its bias or its fp8 block scales, a norm, any other tensor, each named from the
// family's table (TextModel::names) under the current layer's prefix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config/architecture.h"
#include "model/weights/inventory.h"

namespace h0::model {

class InventoryBuilder {
 public:
  InventoryBuilder(const Architecture& arch, const InventoryOptions& options);

  std::vector<WeightInfo> take() { return std::move(out_); }

  void embedding(const std::string& prefix, TensorRole role = TensorRole::kEmbed);
  void final_norm_and_head();
  // Decoder layer `layer` under the names' prefix `p` ("model.layers.3.").
  void decoder_layer(int64_t layer, const std::string& p);
  // DeepSeek-V3's multi-token-prediction layer as released checkpoints hold it.
  void mtp_layer(int64_t layer);
  // A vision tower's weight (config/tower.h, Tower::weights) by its vision role (Vision::names),
  // of encoder layer `layer` (-1: outside the encoder layers), replicated.
  void vision_weight(TensorRole role, TensorPiece piece, std::vector<int64_t> shape,
                     int64_t layer = -1);

  // --- for a block's weights (config/block.h): the current decoder layer's.
  const Architecture& arch() const { return arch_; }
  const TextModel& text() const { return t_; }
  // Whether the checkpoint stores the fused experts as MXFP4 blocks (quantization_config mxfp4).
  bool mxfp4() const { return mxfp4_; }
  // The checkpoint name of `role`'s `piece` in the current layer (the family's table).
  std::string named(TensorRole role, TensorPiece piece = TensorPiece::kWeight) const;
  // A tensor by name, in the default dtype (the checkpoint's), with the current layer, expert and
  // MTP flag. The reference is valid until the next append.
  WeightInfo& add(const std::string& name, std::vector<int64_t> shape, TpSplit tp,
                  int64_t unit = 1);
  // The norm weight of `role`, [n], replicated.
  void norm(TensorRole role, int64_t n);
  // A projection [out, in] of `role`: quantized when the checkpoint is, with its scales. `parts`:
  // its WeightInfo::tp_parts (the weight's, not its scales').
  void proj(TensorRole role, int64_t out, int64_t in, TpSplit tp, int64_t unit,
            bool kv_heads = false, std::vector<WeightInfo::TpPart> parts = {});
  // The bias of `role` (after its weight), [n].
  WeightInfo& bias(TensorRole role, int64_t n, TpSplit tp, int64_t unit = 1);
  // The routed expert the next weights belong to (-1: none); named with it.
  void set_expert(int64_t expert) { expert_ = expert; }

 private:
  void norm(const std::string& name, int64_t n, TensorRole role = TensorRole::kOther);

  const Architecture& arch_;
  const TextModel& t_;
  bool quant_;
  bool mxfp4_;  // quantization_config mxfp4: the fused experts' weights as blocks + E8M0 scales
  tensor::DType dtype_;
  std::vector<WeightInfo> out_;
  int64_t layer_ = -1, expert_ = -1;
  std::string prefix_;  // the current decoder layer's, e.g. "model.layers.3."
  bool mtp_ = false;
};

}  // namespace h0::model
