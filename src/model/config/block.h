// A block: one kind of sublayer a decoder layer is built from (an attention class, a linear
// attention, an MLP form), held in one file under src/model/blocks/ with everything the harness
// knows about it — the weights it reads (in checkpoint order, with their roles and tensor-parallel
// splits), the catalogue ops it runs with their attrs at an architecture, its executor step, the
// per-sequence state it keeps, and the name its output is probed under. The hubs (the inventory,
// the model's ops, the executor) ask the registry which block a layer runs and call it; they name
// no block. Blocks that only run inside another (the lightning indexer in MLA, the shared experts
// beside the routed ones) are files of their own that their host calls. Adding one: its file under
// blocks/ (with its config fields, read by its `configure`), its row in blocks/registry.cc, and the
// family that turns it on with use_block — docs/blocks.md.
//
// Declared here, below the modules that call it (weights/, exec/); defined in model/blocks/, above
// them: a hub includes this header only, never a block's file.
#pragma once

#include <any>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config/architecture.h"
#include "model/config/config_fields.h"
#include "tensor/tensor.h"

namespace h0::model {

class InventoryBuilder;  // weights/inventory_builder.h: how a block appends its weights
class LayerRun;          // exec/layer_run.h: what a block's step may use of the executor
struct BlockOps;         // exec/layer_run.h: the ops a block bound, by its own labels

// Where a block sits in a decoder layer: the token mixer (after the input norm, before the first
// residual add) or the feed-forward part (after the second norm).
enum class BlockSlot { kMixer, kFeedForward };

// What a block caches per token of a sequence in one layer (the planner's KV bytes).
struct BlockCache {
  // Elements per token on a rank holding `kv_heads` kv heads: K and V, a latent; with an indexer's
  // keys, which `index_elements` counts apart.
  int64_t elements = 0, index_elements = 0;
  // The tokens of a sequence it holds at most (a sliding window); 0: all of them.
  int64_t window = 0;
  // What the cache is, for the plan's table: "full attention", "MLA latent".
  const char* kind = "";
};

// The executor's paged KV cache per token of one layer: this rank's cached heads, their key and
// value widths, and an indexer's key width (0: none).
struct KvLayout {
  int64_t heads = 0, k_dim = 0, v_dim = 0, index_dim = 0;
};

// A plan's facts a block's notes speak of (plan/memory_plan.cc's notes).
struct PlanFacts {
  int64_t layers = 0;      // the layers that run the block
  int64_t num_layers = 0;  // the model's
  int64_t tp = 1, dp = 1;  // tensor-parallel ranks, data-parallel replicas
  int64_t sequences = 1;   // concurrent sequences per replica
  int64_t act_bytes = 2;   // bytes of an activation element
};

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
  // Reads its own config fields from `f` into t->block_config[name()] (a struct declared in its
  // file), for a family that turns it on with use_block; throws InputError naming a field. Blocks
  // whose fields are Architecture's (those before use_block existed) have none: a bug to call.
  virtual void configure(const ConfigFields& f, TextModel* t) const;

  // Appends its weights of the builder's current layer, in checkpoint order.
  virtual void weights(InventoryBuilder& b) const = 0;
  // A weight of its role `role` as read from the checkpoint, in the layout its ops take (the
  // loader's; the same tensor by default).
  virtual tensor::Tensor op_layout(TensorRole role, tensor::Tensor t) const { return t; }
  // Binds the catalogue ops it runs at `arch` in `dtype`. Throws InputError for a config the
  // ops cannot express (naming the field).
  virtual void bind(const Architecture& arch, tensor::DType dtype, BlockOps* ops) const = 0;
  // Binds the ops it runs once per sequence and step, whose attrs hold that sequence's context
  // (`context`: context_len, q_offset, causal — paged_attention's attrs), under the labels its
  // step asks LayerRun::cached_attention for: "attention", or with an indexer "indexer" and
  // "sparse_attention". None by default (a block that attends over no cache).
  virtual void bind_context(const Architecture& arch, const nlohmann::json& context,
                            BlockOps* ops) const {}
  // Its state for an executor that runs `arch` on `tp` tensor-parallel ranks (null: none).
  virtual std::unique_ptr<BlockState> state(const Architecture& arch, int64_t tp) const {
    return nullptr;
  }
  // Its step on the layer's normed input h [T, D]: its output [T, D] (all-reduced under TP).
  virtual backend::DeviceTensor run(LayerRun& run, const backend::DeviceTensor& h) const = 0;
  // The paged KV cache it keeps on a rank running `heads` query heads and `kv_heads` kv heads,
  // and the softmax scale of its attention (none and 0 by default: a block that caches no keys).
  virtual KvLayout kv_layout(const TextModel& t, int64_t heads, int64_t kv_heads) const {
    return {};
  }
  virtual double attention_scale(const TextModel& t) const { return 0; }

  // --- for the planner (plan/): a layer of `t` running it, on one rank.
  // How the plan names it in layer `layer` ("MLA + indexer", "sliding-window attention", "MoE").
  virtual std::string describe(const TextModel& t, int64_t layer) const = 0;
  // Its cache per token in layer `layer` on a rank holding `kv_heads` of the kv heads (none by
  // default).
  virtual BlockCache cache(const TextModel& t, int64_t layer, int64_t kv_heads) const { return {}; }
  // Whether tensor parallelism splits its cache by kv heads (false: MLA's latent, held whole by
  // every rank, so kv-head divisibility and replication do not apply).
  virtual bool cache_split_by_heads() const { return true; }
  // Whether it keeps a fixed state per sequence instead (a linear attention), and its bytes on
  // one of `tp` ranks (`act_bytes` an activation element; 0 where the config does not say).
  virtual bool keeps_state() const { return false; }
  virtual int64_t state_bytes(const TextModel& t, int64_t tp, int64_t act_bytes) const { return 0; }
  // Why `tp` tensor-parallel ranks cannot split it ("" when they can): the parallel plan's check.
  virtual std::string tp_issue(const TextModel& t, int64_t tp) const { return ""; }
  // What the memory plan should say of it (a window, a state, an indexer), appended to `notes`.
  virtual void plan_notes(const TextModel& t, const PlanFacts& facts,
                          std::vector<std::string>* notes) const {}
};

// A family's parse function turning on block `name` (registry.cc): the block reads its own fields
// from `f` (Block::configure). A bug when no block has that name.
void use_block(const char* name, const ConfigFields& f, TextModel* t);
// The config block `name` stored with its configure, or null where the model does not use it.
template <class Config>
const Config* block_config(const TextModel& t, const char* name) {
  const auto it = t.block_config.find(name);
  return it == t.block_config.end() ? nullptr : std::any_cast<Config>(&it->second);
}

// Every block this build has, in the order their `runs` is asked (model/blocks/registry.cc).
const std::vector<const Block*>& blocks();

// The block layer `layer` of `t` runs in `slot`, or null where none does.
const Block* block_at(const TextModel& t, int64_t layer, BlockSlot slot);
// The same for a modelled architecture, where every layer has both: a bug (H0_CHECK) otherwise.
const Block& block_of(const TextModel& t, int64_t layer, BlockSlot slot);
// How many of `t`'s layers run `b` (0: the model does not use it).
int64_t layers_running(const TextModel& t, const Block& b);
// Whether tensor parallelism splits `t`'s KV cache by kv heads: every mixer block some layer runs
// does (Block::cache_split_by_heads).
bool kv_split_by_heads(const TextModel& t);

}  // namespace h0::model
