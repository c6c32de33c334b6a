// What a block's executor step may use (config/block.h Block::run): the layer's weights by role,
// the catalogue ops (the block's own, bound by Block::bind, and the model's shared ones), the
// backend, the step's rows and the sequences they belong to, the block's state, and this rank's
// part under tensor parallelism. The executor makes one for each block it runs in a layer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config/block.h"
#include "model/exec/executor.h"
#include "model/exec/model_ops.h"

namespace h0::model {

class LayerRun {
 public:
  // One sequence's rows of the step: rows [row, row + tokens) of every [T, ...] tensor.
  struct Rows {
    int seq = 0;
    int64_t row = 0, tokens = 0;
  };

  LayerRun(Executor& executor, int64_t layer, const Block& block, Executor::Step& step);

  int64_t layer() const { return layer_; }
  // Rows of the step over every sequence (T).
  int64_t tokens() const { return tokens_; }
  const std::vector<Rows>& sequences() const { return sequences_; }
  // The run dtype (activations, and the weights converted on load).
  tensor::DType dtype() const;
  backend::Backend& backend();
  // The ops this block bound, and the model's shared ones (rmsnorm, add, ...).
  const BlockOps& ops() const;
  const ModelOps& model_ops() const;
  // This block's state in this executor (Block::state; a bug when it made none).
  BlockState& state();
  const Architecture& arch() const;
  // This rank's part of a parallel plan (null: the whole model).
  const Sharding* sharding() const;
  // Sums `t` over `comm` (in place; nothing for null or one rank).
  void all_reduce(mesh::Communicator* comm, backend::DeviceTensor* t);
  // The layer's weights as loaded (routed experts: widened stacks or left as stored).
  const ModelWeights& weights() const;
  // The executor's budget for routed experts widened at once (ExecutorOptions::expert_bytes).
  int64_t expert_bytes() const;
  // The step's position ids on the backend ([T], or [3, T] under M-RoPE).
  const backend::DeviceTensor& positions() const;

  // The layer's weight of `role` (InputError naming the role when the checkpoint has none).
  const backend::DeviceTensor& weight(TensorRole role,
                                      TensorPiece piece = TensorPiece::kWeight) const;
  // The layer's optional weight of `role` (a bias, GPT-OSS's sinks): null when absent.
  const backend::DeviceTensor* find(TensorRole role,
                                    TensorPiece piece = TensorPiece::kWeight) const;
  // x·wᵀ (+ its bias unless `with_bias` is false) of the layer's `role`: linear, or scaled_linear
  // for fp8 block scales.
  backend::DeviceTensor linear(TensorRole role, const backend::DeviceTensor& x,
                               bool with_bias = true);
  // A row-parallel projection: under TP each rank's partial product (the bias on the first rank
  // only), all-reduced over the ranks.
  backend::DeviceTensor row_parallel(TensorRole role, const backend::DeviceTensor& x);
  std::vector<backend::DeviceTensor> run(const BoundOp& op,
                                         const std::vector<const backend::DeviceTensor*>& in);
  backend::DeviceTensor run1(const BoundOp& op,
                             const std::vector<const backend::DeviceTensor*>& in) {
    return std::move(run(op, in)[0]);
  }

  // Caches the rows' keys and values [T, Hkv, D] (host) in the layer's paged cache, then attends
  // with q [T, H, D]: paged_attention (with the sliding layers' window; GPT-OSS's sinks), or with
  // `index` (DeepSeek-V3.2) the indexer's keys cached too and sparse_attention over the keys
  // lightning_indexer picks. Returns [T, H, Dv].
  backend::DeviceTensor cached_attention(const backend::DeviceTensor& q, const tensor::Tensor& k,
                                         const tensor::Tensor& v,
                                         const IndexerInputs* index = nullptr);

 private:
  Executor& executor_;
  int64_t layer_;
  const Block& block_;
  Executor::Step& step_;
  int64_t tokens_;
  std::vector<Rows> sequences_;
};

}  // namespace h0::model
