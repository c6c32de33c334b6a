// The registry of blocks (config/block.h): one row per block file under blocks/. A layer runs, in
// each slot, the first block here whose `runs` says so (their `runs` exclude one another); their
// ops are bound in this order.
#include "base/check.h"
#include "model/config/block.h"

namespace h0::model {

const Block& full_attention_block();  // blocks/full_attention.cc
const Block& sliding_window_block();  // blocks/sliding_window.cc
const Block& mla_block();             // blocks/mla.cc (with blocks/lightning_indexer.cc)
const Block& gated_deltanet_block();  // blocks/gated_deltanet.cc
const Block& dense_mlp_block();       // blocks/dense_mlp.cc
const Block& routed_experts_block();  // blocks/routed_experts.cc (with blocks/shared_expert.cc)

const std::vector<const Block*>& blocks() {
  static const std::vector<const Block*> all = {
      &full_attention_block(), &sliding_window_block(), &mla_block(),
      &gated_deltanet_block(), &dense_mlp_block(),      &routed_experts_block()};
  return all;
}

const Block* block_at(const TextModel& t, int64_t layer, BlockSlot slot) {
  for (const Block* b : blocks()) {
    if (b->slot() == slot && b->runs(t, layer)) return b;
  }
  return nullptr;
}

int64_t layers_running(const TextModel& t, const Block& b) {
  int64_t n = 0;
  for (int64_t l = 0; l < t.num_layers; ++l) n += block_at(t, l, b.slot()) == &b;
  return n;
}

const Block& block_of(const TextModel& t, int64_t layer, BlockSlot slot) {
  const Block* b = block_at(t, layer, slot);
  H0_CHECK(b != nullptr) << "no block runs layer " << layer << "'s "
                         << (slot == BlockSlot::kMixer ? "mixer" : "feed-forward part");
  return *b;
}

}  // namespace h0::model
