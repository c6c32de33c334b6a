// Sliding-window attention (Mistral, Gemma 3's local layers, GPT-OSS's alternate layers): the
// grouped-query attention of blocks/full_attention.cc whose query sees the last sliding_window
// keys (the KV cache's paged_attention with the window), with the sliding layers' own RoPE base
// where the config gives one (Gemma 3's rope_local_base_freq). Config: Attention::sliding_window,
// TextModel::layer_kinds (kSliding), local_rope_theta.
#include "base/text_format.h"
#include "model/blocks/full_attention.h"

namespace h0::model {
namespace {

class SlidingWindow : public GqaBlock {
 public:
  SlidingWindow() : GqaBlock("sliding_window", TextModel::LayerKind::kSliding) {}
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
