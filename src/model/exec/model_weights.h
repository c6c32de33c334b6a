// A model's weights in backend memory, in the run dtype: loaded from a checkpoint (converted on
// the host, uploaded once), looked up by (layer, role, piece). With `kept` (an f32 run of a bf16
// checkpoint on a backend with linear_widen: model_ops.h widened_weight_dtype), the weights the
// executor runs by linear — the projections, the LM head — and the embedding table stay as the
// checkpoint stores them when stored in `kept`: half the memory of f32, widened per tile by
// linear_widen (the embedding's rows after the gather). MoE experts are also stacked into
// the moe_experts op's operands: w_gate[E,F,D], w_up[E,F,D], w_down[E,D,F] per layer.
// An fp8 block-quantized projection (quantization_config fp8) stays as stored: "<name>" in fp8
// and "<name>_scale_inv" in f32, this rank's whole blocks of both, for scaled_linear; routed
// experts are dequantized on load (moe_experts takes float weights). Fused experts (GPT-OSS's
// gate_up [E, D, 2F] interleaved and down [E, F, D], with biases) are unpacked into the same
// operands; under TP the down bias is held by the first rank only (zeros elsewhere), so the
// all-reduce adds it once.
// Routed experts that would take `expert_bytes` or more widened to the run dtype (all MoE layers
// together; 0: always) stay in the checkpoint as stored — fp8 with its block scales, MXFP4 blocks,
// bf16 — and are read and widened a few at a time when a step routes tokens to them
// (StoredExperts, Executor::moe): memory follows the checkpoint, not its f32 copy. Not under TP
// (a TP rank holds part of every expert: widened on load as before). The checkpoint must then
// outlive the weights.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "io/sharded_checkpoint.h"
#include "model/weights/inventory.h"
#include "model/weights/weight_loader.h"

namespace h0::model {

struct Sharding;

// moe_experts' weight operands; the biases only for experts stored with them (GPT-OSS).
struct ExpertStack {
  backend::DeviceTensor gate, up, down;
  std::optional<backend::DeviceTensor> b_gate, b_up, b_down;
};

// One MoE layer's routed experts left in the checkpoint (this rank's [first, first + count)).
class StoredExperts {
 public:
  // `widened_bytes`: one expert's operands in `dtype`.
  StoredExperts(const io::ShardedCheckpoint& ckpt, const Architecture& arch, tensor::DType dtype,
                int64_t first, int64_t count, int64_t widened_bytes);
  int64_t count() const { return count_; }
  bool biased() const { return fused_[1].has_value(); }
  // One expert's operands widened to the run dtype, in bytes.
  int64_t widened_bytes() const { return widened_bytes_; }
  // moe_experts' w_gate [n,F,D], w_up [n,F,D], w_down [n,D,F] and, biased, b_gate [n,F],
  // b_up [n,F], b_down [n,D] in the run dtype, room for n = `capacity` experts (contents unset).
  std::vector<tensor::Tensor> stacks(int64_t capacity) const;
  // Writes this rank's experts `ids` (0-based on this rank) into the first ids.size() rows of
  // `stacks`, in that order: read from the checkpoint and widened as on load (fp8 and MXFP4 by
  // the catalogue's dequantize references); each tensor's file pages dropped once read.
  void widen(const std::vector<int64_t>& ids, std::vector<tensor::Tensor>* stacks) const;

 private:
  friend class ModelWeights;
  const io::ShardedCheckpoint& ckpt_;
  const Architecture& arch_;
  tensor::DType dtype_;
  int64_t first_, count_, widened_bytes_;
  std::vector<std::array<std::optional<WeightInfo>, 3>> per_expert_;  // gate, up, down
  std::array<std::optional<WeightInfo>, 4> fused_;  // gate_up, gate_up bias, down, down bias
};

class ModelWeights {
 public:
  // Loads every non-MTP tensor of `inventory` from `ckpt` (verify_checkpoint first) and converts
  // floating weights to `dtype`. Throws InputError for a checkpoint that does not match.
  // With `sharding`, only this rank's part of each weight is loaded (routed experts: the
  // rank's own, stacked in expert order). With `only_layer` >= 0, only that decoder layer's
  // weights are checked and loaded (no embedding, final norm or head).
  ModelWeights(const Architecture& arch, const io::ShardedCheckpoint& ckpt,
               backend::Backend& backend, tensor::DType dtype, const Sharding* sharding = nullptr,
               std::optional<tensor::DType> kept = std::nullopt,
               int64_t expert_bytes = kExpertBytes, int64_t only_layer = -1);
  // The default widened-experts budget (1 GiB).
  static constexpr int64_t kExpertBytes = int64_t{1} << 30;

  // By role (inventory.h), never by name: `tensor` of decoder layer `layer` (-1: the embedding;
  // num_layers: the final norm and the head); a vision role's by vision layer (-1: the tower's
  // other weights). get throws InputError naming the role if absent; find returns nullptr
  // (optional biases).
  const backend::DeviceTensor& get(int64_t layer, TensorRole tensor,
                                   TensorPiece piece = TensorPiece::kWeight) const;
  const backend::DeviceTensor* find(int64_t layer, TensorRole tensor,
                                    TensorPiece piece = TensorPiece::kWeight) const;
  // The routed experts of MoE layer `layer`, widened on load; stored_experts: those left as
  // stored (nullptr when widened on load).
  const ExpertStack& experts(int64_t layer) const;
  const StoredExperts* stored_experts(int64_t layer) const;
  int64_t bytes() const { return bytes_; }

 private:
  struct Loading;  // one load's inputs and the routed experts it collects (model_weights.cc)
  void add(const WeightInfo& w, const std::string& name, backend::DeviceTensor t,
           TensorPiece piece);
  void leave_experts_stored(const Architecture& arch, const io::ShardedCheckpoint& ckpt,
                            const Inventory& inv, tensor::DType dtype, const Sharding* sharding,
                            int64_t expert_bytes);
  bool keep_stored_expert(const Architecture& arch, const io::ShardedCheckpoint& ckpt,
                          const WeightInfo& w);
  void load(Loading& l, const WeightInfo& w, const WeightSlice& part);
  void load_fp8(const Loading& l, const WeightInfo& w, const WeightSlice& part);

  std::map<std::string, backend::DeviceTensor, std::less<>> tensors_;
  std::map<std::tuple<int64_t, TensorRole, TensorPiece>, const backend::DeviceTensor*>
      by_role_;  // into tensors_
  std::map<int64_t, ExpertStack> experts_;
  std::map<int64_t, StoredExperts> stored_;
  int64_t bytes_ = 0;
};

}  // namespace h0::model
