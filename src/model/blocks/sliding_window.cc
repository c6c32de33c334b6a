// Sliding-window attention (Mistral, Gemma 3's local layers, GPT-OSS's alternate layers): the
// grouped-query attention of blocks/full_attention.cc whose query sees the last sliding_window
// keys (the KV cache's paged_attention with the window), with the sliding layers' own RoPE base
// where the config gives one (Gemma 3's rope_local_base_freq). Config: Attention::sliding_window,
// TextModel::layer_kinds (kSliding), local_rope_theta.
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
};

}  // namespace

const Block& sliding_window_block() {
  static const SlidingWindow block;
  return block;
}

}  // namespace h0::model
