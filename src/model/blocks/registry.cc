// The registry of blocks (config/block.h) and towers (config/tower.h): one row per file under
// blocks/. A layer runs, in each slot, the first block here whose `runs` says so: a block a family
// turns on (use_block) comes before the one it stands in for; their ops are bound in this order.
#include <cstring>

#include "base/check.h"
#include "model/config/block.h"
#include "model/config/tower.h"

namespace h0::model {

// Each block's file under blocks/ defines its <name>_block() (lightning_indexer.cc and
// shared_expert.cc are called by mla.cc and routed_experts.cc).
const Block& per_layer_qk_norm_block();
const Block& full_attention_block();
const Block& sliding_window_block();
const Block& mla_block();
const Block& gated_deltanet_block();
const Block& dense_mlp_block();
const Block& routed_experts_block();

// Each tower's file under blocks/ defines its <name>_tower().
const Tower& clip_tower();
const Tower& qwen_vl_tower();

const std::vector<const Tower*>& towers() {
  static const std::vector<const Tower*> all = {&clip_tower(), &qwen_vl_tower()};
  return all;
}

const Tower* tower_of(const Architecture& arch) {
  if (!arch.vision) return nullptr;
  for (const Tower* t : towers()) {
    if (arch.vision->tower == t->name()) return t;
  }
  H0_CHECK(false) << "no tower is named " << arch.vision->tower;
  return nullptr;
}

const std::vector<const Block*>& blocks() {
  // One row per block.
  // clang-format off
  static const std::vector<const Block*> all = {
      &per_layer_qk_norm_block(),
      &full_attention_block(),
      &sliding_window_block(),
      &mla_block(),
      &gated_deltanet_block(),
      &dense_mlp_block(),
      &routed_experts_block(),
  };
  // clang-format on
  return all;
}

void Block::configure(const ConfigFields&, TextModel*) const {
  H0_CHECK(false) << "block " << name() << " reads no config fields of its own";
}

void use_block(const char* name, const ConfigFields& f, TextModel* t) {
  for (const Block* b : blocks()) {
    if (std::strcmp(b->name(), name) == 0) return b->configure(f, t);
  }
  H0_CHECK(false) << "no block is named " << name;
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

bool kv_split_by_heads(const TextModel& t) {
  for (int64_t l = 0; l < t.num_layers; ++l) {
    const Block* b = block_at(t, l, BlockSlot::kMixer);
    if (b != nullptr && !b->cache_split_by_heads()) return false;
  }
  return true;
}

const Block& block_of(const TextModel& t, int64_t layer, BlockSlot slot) {
  const Block* b = block_at(t, layer, slot);
  H0_CHECK(b != nullptr) << "no block runs layer " << layer << "'s "
                         << (slot == BlockSlot::kMixer ? "mixer" : "feed-forward part");
  return *b;
}

}  // namespace h0::model
