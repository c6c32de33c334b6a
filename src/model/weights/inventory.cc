#include "model/weights/inventory.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "model/config/block.h"
#include "model/config/tower.h"
#include "model/weights/inventory_builder.h"

namespace h0::model {
namespace {

using tensor::DType;

}  // namespace

InventoryBuilder::InventoryBuilder(const Architecture& arch, const InventoryOptions& options)
    : arch_(arch),
      t_(arch.text),
      quant_(options.quantized && arch.quantization.method == "fp8"),
      mxfp4_(options.quantized && arch.quantization.method == "mxfp4") {
  dtype_ = options.dtype ? *options.dtype : t_.dtype.value_or(DType::kBF16);
}

void InventoryBuilder::embedding(const std::string& prefix, TensorRole role) {
  add(prefix + "embed_tokens.weight", {t_.vocab_size, t_.hidden_size}, TpSplit::kVocab).tensor =
      role;
}
void InventoryBuilder::final_norm_and_head() {
  layer_ = t_.num_layers;
  norm(t_.prefix + "norm.weight", t_.hidden_size, TensorRole::kFinalNorm);
  if (!t_.tie_word_embeddings) {
    add(t_.head_prefix + "weight", {t_.vocab_size, t_.hidden_size}, TpSplit::kVocab).tensor =
        TensorRole::kHead;
  }
}

void InventoryBuilder::decoder_layer(int64_t layer, const std::string& p) {
  layer_ = layer;
  prefix_ = p;
  norm(TensorRole::kAttnNorm, t_.hidden_size);
  block_of(t_, layer, BlockSlot::kMixer).weights(*this);
  if (t_.sandwich_norms) norm(TensorRole::kAttnPostNorm, t_.hidden_size);
  norm(TensorRole::kFfnNorm, t_.hidden_size);
  block_of(t_, layer, BlockSlot::kFeedForward).weights(*this);
  if (t_.sandwich_norms) norm(TensorRole::kFfnPostNorm, t_.hidden_size);
}

// DeepSeek-V3's multi-token-prediction layer as released checkpoints hold it.
void InventoryBuilder::mtp_layer(int64_t layer) {
  mtp_ = true;
  const std::string p = t_.prefix + "layers." + std::to_string(layer) + ".";
  embedding(p, TensorRole::kOther);
  norm(p + "enorm.weight", t_.hidden_size);
  norm(p + "hnorm.weight", t_.hidden_size);
  add(p + "eh_proj.weight", {t_.hidden_size, 2 * t_.hidden_size}, TpSplit::kReplicated);
  decoder_layer(layer, p);
  layer_ = layer;
  norm(p + "shared_head.norm.weight", t_.hidden_size);
  add(p + "shared_head.head.weight", {t_.vocab_size, t_.hidden_size}, TpSplit::kVocab);
  mtp_ = false;
}

void InventoryBuilder::vision_weight(TensorRole role, TensorPiece piece, std::vector<int64_t> shape,
                                     int64_t layer) {
  layer_ = -1;
  WeightInfo& w =
      add(arch_.vision->name(role, piece, layer), std::move(shape), TpSplit::kReplicated);
  w.tensor = role;
  w.piece = piece;
  w.vision_layer = layer;
}

WeightInfo& InventoryBuilder::add(const std::string& name, std::vector<int64_t> shape, TpSplit tp,
                                  int64_t unit) {
  WeightInfo w;
  w.name = name;
  w.shape = std::move(shape);
  w.dtype = dtype_;
  w.tp = tp;
  w.tp_unit = unit;
  w.layer = layer_;
  w.expert = expert_;
  w.mtp = mtp_;
  out_.push_back(std::move(w));
  return out_.back();
}
void InventoryBuilder::norm(const std::string& name, int64_t n, TensorRole role) {
  add(name, {n}, TpSplit::kReplicated).tensor = role;
}

// The name of `role`'s `piece` in the current decoder layer (the family's table).
std::string InventoryBuilder::named(TensorRole role, TensorPiece piece) const {
  return t_.names->name(prefix_, role, piece, expert_);
}
void InventoryBuilder::norm(TensorRole role, int64_t n) { norm(named(role), n, role); }

// A decoder-layer projection [out, in]: quantized when the checkpoint is, with its scales.
// `parts`: its WeightInfo::tp_parts (the weight's, not its scales').
void InventoryBuilder::proj(TensorRole role, int64_t out, int64_t in, TpSplit tp, int64_t unit,
                            bool kv_heads, std::vector<WeightInfo::TpPart> parts) {
  WeightInfo& w = add(named(role), {out, in}, tp, unit);
  w.kv_heads = kv_heads;
  w.tensor = role;
  w.tp_parts = std::move(parts);
  if (!quant_) return;
  w.dtype = DType::kF8E4M3;
  w.quantized = true;
  const int64_t br = arch_.quantization.block_rows, bc = arch_.quantization.block_cols;
  const int64_t scale_unit = tp == TpSplit::kColumn ? std::max<int64_t>(1, unit / br) : 1;
  WeightInfo& s = add(named(role, TensorPiece::kScale), {(out + br - 1) / br, (in + bc - 1) / bc},
                      tp, scale_unit);
  s.dtype = DType::kF32;
  s.role = WeightRole::kQuantScale;
  s.kv_heads = kv_heads;
  s.tensor = role;
  s.piece = TensorPiece::kScale;
}
// The bias of role `role` (after its weight).
WeightInfo& InventoryBuilder::bias(TensorRole role, int64_t n, TpSplit tp, int64_t unit) {
  WeightInfo& b = add(named(role, TensorPiece::kBias), {n}, tp, unit);
  b.tensor = role;
  b.piece = TensorPiece::kBias;
  return b;
}

namespace {

// Parameters: an MXFP4 byte (WeightInfo kBlocks, u8) holds two.
int64_t elements(const WeightInfo& w) {
  return w.piece == TensorPiece::kBlocks ? 2 * w.numel() : w.numel();
}

ParamCounts count(const Architecture& arch, const std::vector<WeightInfo>& weights) {
  ParamCounts c;
  int64_t routed = 0;
  for (const WeightInfo& w : weights) {
    if (w.role == WeightRole::kQuantScale) continue;
    if (w.mtp) {
      const bool shared = w.name.find("embed_tokens") != std::string::npos ||
                          w.name.find("shared_head.head") != std::string::npos;
      (shared ? c.mtp_shared : c.mtp) += elements(w);
      continue;
    }
    if (w.role == WeightRole::kBuffer) {
      c.buffers += elements(w);
      continue;
    }
    c.total += elements(w);
    if (w.expert >= 0 || w.all_experts) routed += elements(w);
    if (is_vision_role(w.tensor)) c.vision += elements(w);
  }
  const Moe& m = arch.text.moe;
  // Routed experts are identical in size: a token uses experts_per_token of num_experts.
  c.active =
      m.num_experts > 0 ? c.total - routed + routed / m.num_experts * m.experts_per_token : c.total;
  return c;
}

}  // namespace

const char* tp_split_name(TpSplit split) {
  switch (split) {
    case TpSplit::kReplicated:
      return "replicated";
    case TpSplit::kColumn:
      return "column";
    case TpSplit::kRow:
      return "row";
    case TpSplit::kVocab:
      return "vocab";
  }
  return "?";
}

int64_t WeightInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const WeightInfo* Inventory::find(int64_t layer, TensorRole tensor, TensorPiece piece,
                                  int64_t expert) const {
  for (const WeightInfo& w : weights) {
    if (w.layer == layer && w.tensor == tensor && w.piece == piece && w.expert == expert && !w.mtp)
      return &w;
  }
  return nullptr;
}

const WeightInfo* Inventory::find(const std::string& name) const {
  for (const WeightInfo& w : weights) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

void require_whole_blocks(const std::string& name, int64_t parts, int64_t begin, int64_t end,
                          int64_t dim, int64_t block) {
  if (block > 1 && (begin % block != 0 || (end % block != 0 && end != dim))) {
    throw InputError("tp " + std::to_string(parts),
                     name + ": rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                         ") of this rank cut through its " + std::to_string(block) +
                         "-wide quantization blocks (the per-rank part must be whole blocks)");
  }
}

Inventory build_inventory(const Architecture& arch, const InventoryOptions& options) {
  InventoryBuilder b(arch, options);
  const TextModel& t = arch.text;
  if (const Tower* tower = tower_of(arch)) tower->weights(arch, b);
  b.embedding(t.prefix);
  for (int64_t i = 0; i < t.num_layers; ++i)
    b.decoder_layer(i, t.prefix + "layers." + std::to_string(i) + ".");
  b.final_norm_and_head();
  if (options.include_mtp) {
    for (int64_t i = 0; i < t.num_nextn_predict_layers; ++i) b.mtp_layer(t.num_layers + i);
  }
  Inventory inv;
  inv.weights = b.take();
  inv.counts = count(arch, inv.weights);
  if (arch.quantization.method == "fp8") {
    inv.block_rows = arch.quantization.block_rows;
    inv.block_cols = arch.quantization.block_cols;
  }
  return inv;
}

}  // namespace h0::model
