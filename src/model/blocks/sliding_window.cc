// Sliding-window attention (Mistral, Gemma 3's local layers, GPT-OSS's alternate layers): the
// grouped-query attention of blocks/full_attention.cc whose query sees the last sliding_window
// keys (the KV cache's paged_attention with the window), with the sliding layers' own RoPE base
// where the config gives one (Gemma 3's rope_local_base_freq). Config: Attention::sliding_window,
// TextModel::layer_kinds (kSliding), local_rope_theta.
#include "base/text_format.h"
#include "model/blocks/full_attention.h"

namespace h0::model {
namespace {

class SlidingWindow : public Block {
 public:
  const char* name() const override { return "sliding_window"; }
  BlockSlot slot() const override { return BlockSlot::kMixer; }
  bool runs(const TextModel& t, int64_t layer) const override {
    return gqa_runs(t, layer, TextModel::LayerKind::kSliding);
  }
  const char* probe() const override { return "self_attn"; }
  void weights(InventoryBuilder& b) const override { gqa_weights(b); }
  void bind(const Architecture& arch, tensor::DType dtype, BlockOps* ops) const override {
    bind_gqa(arch, dtype, ops);
  }
  backend::DeviceTensor run(LayerRun& r, const backend::DeviceTensor& h) const override {
    return run_gqa(r, h, true);
  }
  std::string describe(const TextModel& t, int64_t) const override { return describe_gqa(t, true); }
  KvLayout kv_layout(const TextModel& t, int64_t, int64_t kv_heads) const override {
    return gqa_kv_layout(t, kv_heads);
  }
  double attention_scale(const TextModel& t) const override { return gqa_attention_scale(t); }
  std::string tp_issue(const TextModel& t, int64_t tp) const override {
    return gqa_tp_issue(t, tp);
  }
  BlockCache cache(const TextModel& t, int64_t, int64_t kv_heads) const override {
    return gqa_cache(t, kv_heads, true);
  }
  void plan_notes(const TextModel& t, const PlanFacts& p,
                  std::vector<std::string>* notes) const override {
    if (t.attn.sliding_window <= 0) return;
    notes->push_back(std::to_string(p.layers) + " of " + std::to_string(p.num_layers) +
                     " layers use a sliding window of " + with_commas(t.attn.sliding_window) +
                     " tokens: their KV holds at most that many per sequence");
  }
};

}  // namespace

const Block& sliding_window_block() {
  static const SlidingWindow block;
  return block;
}

}  // namespace h0::model
