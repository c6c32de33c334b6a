// Grouped-query attention with RoPE (blocks/full_attention.cc), the same on full and sliding-window
// layers (blocks/sliding_window.cc) but for the window and the sliding layers' own RoPE base.
// Internal to src/model/blocks/.
#pragma once

#include "model/exec/layer_run.h"
#include "model/weights/inventory_builder.h"

namespace h0::model {

// Not MLA, not linear attention: a layer of `kind` runs grouped-query attention.
bool gqa_runs(const TextModel& t, int64_t layer, TextModel::LayerKind kind);
void gqa_weights(InventoryBuilder& b);
// TP splits the kv heads: they must divide over the ranks, or the ranks over them (each kv head
// replicated over the same number of ranks). "" when they do.
std::string gqa_tp_issue(const TextModel& t, int64_t tp);
void bind_gqa(const Architecture& arch, tensor::DType dtype, BlockOps* ops);
// Per sequence and step: paged_attention at the sequence's context ("attention"), with the window
// on a layer of kind kSliding, and an indexer's ops where the config has one.
void gqa_bind_context(const Architecture& arch, const ops::Json& context, TextModel::LayerKind kind,
                      BlockOps* ops);
// `sliding`: the layer's keys are the last sliding_window (the KV cache's op for a sliding
// layer) and its RoPE is the sliding layers' own when the config gives one.
backend::DeviceTensor run_gqa(LayerRun& r, const backend::DeviceTensor& h, bool sliding);
// "full attention", "sliding-window attention" (" + indexer" where the config has one).
std::string describe_gqa(const TextModel& t, bool sliding);
// The paged cache's layout (K and V of this rank's kv heads) and the softmax scale: the config's
// (Gemma 3's query_pre_attn_scalar), else head_dim^-0.5.
KvLayout gqa_kv_layout(const TextModel& t, int64_t kv_heads);
double gqa_attention_scale(const TextModel& t);
// K and V of `kv_heads` heads (and an indexer's key), the window on a sliding layer.
BlockCache gqa_cache(const TextModel& t, int64_t kv_heads, bool sliding);

// Grouped-query attention on the layers of `kind` (kFull or kSliding): the full-attention block
// as it is, the sliding-window block with its notes added (blocks/sliding_window.cc).
class GqaBlock : public Block {
 public:
  GqaBlock(const char* name, TextModel::LayerKind kind) : name_(name), kind_(kind) {}
  const char* name() const override { return name_; }
  BlockSlot slot() const override { return BlockSlot::kMixer; }
  bool runs(const TextModel& t, int64_t layer) const override { return gqa_runs(t, layer, kind_); }
  const char* probe() const override { return "self_attn"; }
  void weights(InventoryBuilder& b) const override { gqa_weights(b); }
  void bind(const Architecture& arch, tensor::DType dtype, BlockOps* ops) const override {
    bind_gqa(arch, dtype, ops);
  }
  void bind_context(const Architecture& arch, const ops::Json& context,
                    BlockOps* ops) const override {
    gqa_bind_context(arch, context, kind_, ops);
  }
  backend::DeviceTensor run(LayerRun& r, const backend::DeviceTensor& h) const override {
    return run_gqa(r, h, sliding());
  }
  std::string describe(const TextModel& t, int64_t) const override {
    return describe_gqa(t, sliding());
  }
  KvLayout kv_layout(const TextModel& t, int64_t, int64_t kv_heads) const override {
    return gqa_kv_layout(t, kv_heads);
  }
  double attention_scale(const TextModel& t) const override { return gqa_attention_scale(t); }
  std::string tp_issue(const TextModel& t, int64_t tp) const override {
    return gqa_tp_issue(t, tp);
  }
  BlockCache cache(const TextModel& t, int64_t, int64_t kv_heads) const override {
    return gqa_cache(t, kv_heads, sliding());
  }

 private:
  bool sliding() const { return kind_ == TextModel::LayerKind::kSliding; }

  const char* name_;
  TextModel::LayerKind kind_;
};

}  // namespace h0::model
