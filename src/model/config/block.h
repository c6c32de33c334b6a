// A block: one kind of sublayer a decoder layer is built from (an attention class, a linear
// attention, an MLP form), held in one file under src/model/blocks/ with everything the harness
// knows about it — the weights it reads (in checkpoint order, with their roles and tensor-parallel
// splits), the catalogue ops it runs with their attrs at an architecture, its executor step, the
// per-sequence state it keeps, and the name its output is probed under. The hubs (the inventory,
// the model's ops, the executor) ask the registry which block a layer runs and call it; they name
// no block. Blocks that only run inside another (the lightning indexer in MLA, the shared experts
// beside the routed ones) are files of their own that their host calls. Adding one: its file under
// blocks/, its row in blocks/registry.cc, its config fields (architecture.h) and the family that
// reads them — docs/blocks.md.
//
// Declared here, below the modules that call it (weights/, exec/); defined in model/blocks/, above
// them: a hub includes this header only, never a block's file.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/config/architecture.h"

namespace h0::model {

class InventoryBuilder;  // weights/inventory_builder.h: how a block appends its weights
class LayerRun;          // exec/layer_run.h: what a block's step may use of the executor
struct BlockOps;         // exec/layer_run.h: the ops a block bound, by its own labels

// Where a block sits in a decoder layer: the token mixer (after the input norm, before the first
// residual add) or the feed-forward part (after the second norm).
enum class BlockSlot { kMixer, kFeedForward };

// What one executor keeps for a block between steps (per-sequence caches, tables computed once).
class BlockState {
 public:
  virtual ~BlockState() = default;
  // The sequence ended: its entries go.
  virtual void free_sequence(int seq) {}
};

class Block {
 public:
  virtual ~Block() = default;
  // Its name in tables and errors: "gated_deltanet".
  virtual const char* name() const = 0;
  virtual BlockSlot slot() const = 0;
  // Whether decoder layer `layer` of `t` runs this block in its slot.
  virtual bool runs(const TextModel& t, int64_t layer) const = 0;
  // The probe of its output under the layer's name ("linear_attn": model.layers.3.linear_attn),
  // as transformers names the submodule.
  virtual const char* probe() const = 0;

  // Appends its weights of the builder's current layer, in checkpoint order.
  virtual void weights(InventoryBuilder& b) const = 0;
  // Binds the catalogue ops it runs at `arch` in `dtype`. Throws InputError for a config the
  // ops cannot express (naming the field).
  virtual void bind(const Architecture& arch, tensor::DType dtype, BlockOps* ops) const = 0;
  // Its state for an executor that runs `arch` on `tp` tensor-parallel ranks (null: none).
  virtual std::unique_ptr<BlockState> state(const Architecture& arch, int64_t tp) const {
    return nullptr;
  }
  // Its step on the layer's normed input h [T, D]: its output [T, D] (all-reduced under TP).
  virtual backend::DeviceTensor run(LayerRun& run, const backend::DeviceTensor& h) const = 0;
};

// Every block this build has, in the order their `runs` is asked (model/blocks/registry.cc).
const std::vector<const Block*>& blocks();

// The block layer `layer` of `t` runs in `slot`, or null where none does.
const Block* block_at(const TextModel& t, int64_t layer, BlockSlot slot);
// The same for a modelled architecture, where every layer has both: a bug (H0_CHECK) otherwise.
const Block& block_of(const TextModel& t, int64_t layer, BlockSlot slot);

}  // namespace h0::model
