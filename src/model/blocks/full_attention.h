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

}  // namespace h0::model
