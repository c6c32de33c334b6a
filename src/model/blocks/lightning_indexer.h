// DeepSeek-V3.2's lightning indexer (blocks/lightning_indexer.cc), run inside an MLA layer
// (blocks/mla.cc) when the config has one. Internal to src/model/blocks/.
#pragma once

#include "model/exec/layer_run.h"
#include "model/weights/inventory_builder.h"

namespace h0::model {

// Its weights after the MLA layer's, and its ops (nothing without an indexer: Indexer::n_heads 0).
void indexer_weights(InventoryBuilder& b);
void bind_indexer(const Architecture& arch, BlockOps* ops);
// Per sequence and step (Block::bind_context): lightning_indexer ("indexer") and sparse_attention
// at the sequence's context (nothing without an indexer).
void bind_indexer_context(const Architecture& arch, const ops::Json& context, BlockOps* ops);
// Its inputs of the step: queries from the MLA layer's q latent, one key per token, and the heads'
// weights; LayerRun::cached_attention caches the keys and attends over the keys they pick.
// The memory plan's note on its keys (nothing without an indexer).
void indexer_plan_notes(const TextModel& t, std::vector<std::string>* notes);
IndexerInputs indexer_inputs(LayerRun& r, const backend::DeviceTensor& h,
                             const backend::DeviceTensor& q_latent);

}  // namespace h0::model
