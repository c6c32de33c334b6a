// The tensor inventory of a checkpoint as stored, for a model whose family the executor does not
// model: every tensor of the safetensors headers with its real dtype, shape and bytes, and how it
// splits over tensor-parallel ranks by the name-pattern rule table below (the layout every
// transformers decoder shares). Parameter counts, the memory plan and sharded loading then work
// for any model, from the checkpoint alone.
//
// The rule table. A tensor's *leaf* is the module name before its last component
// (".weight", ".bias", and quantization suffixes "_blocks", "_scales", "_scale_inv", "_scale",
// "_bias" of fused experts are stripped first): "model.layers.3.self_attn.q_proj.weight" → q_proj.
//   leaf                                                      split     unit
//   embed_tokens, wte, word_embeddings, lm_head, embed_out    vocab     rows
//   q_proj, k_proj, v_proj, qkv_proj, query_key_value, c_attn column    head_dim (k/v: kv heads)
//   gate_proj, up_proj, gate_up_proj, w1, w3, fc1, c_fc       column    1
//   o_proj, down_proj, w2, fc2, c_proj, out_proj, dense       row       1  (their bias: replicated)
//   anything else (norms, routers and gates, sinks, biases)   replicated
// A tensor under "experts.<e>." belongs to routed expert e (expert-parallel placement); a fused
// expert tensor ("experts.gate_up_proj", its blocks, scales and bias: experts first) is split
// over tp along its expert axis. Tensors of a vision tower ("visual.", "vision_tower.",
// "vision_model.", "multi_modal_ projector.") are replicated on the first stage. "layers.<n>." (or
// "h.<n>.", "blocks.<n>.") places a tensor on layer n's pipeline stage. Quantization scales follow
// their weight's split in units of one row or column; a split that would not fall on whole heads is
// made in rows.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/sharded_checkpoint.h"
#include "model/config/architecture.h"
#include "model/weights/inventory.h"

namespace h0::model {

// The inventory of `ckpt` for `arch` (any architecture; meant for modelled == false). Throws
// InputError for a tensor naming an expert at or past the config's expert count.
Inventory inventory_from_checkpoint(const Architecture& arch, const io::ShardedCheckpoint& ckpt);

// Whether `path` is a directory holding a checkpoint (model.safetensors or its sharded index).
bool has_checkpoint(const std::string& path);

// What a checkpoint holds by dtype, read from its headers.
struct DtypeTally {
  int64_t tensors = 0, elements = 0, bytes = 0;
};
struct CheckpointTally {
  std::map<std::string, DtypeTally> by_dtype;  // "bf16" -> ...
  int64_t tensors = 0, bytes = 0;
  // Parameters: elements of every tensor except quantization scales; a packed 4-bit tensor
  // ("*_blocks" in u8, MXFP4) counts two parameters per byte.
  int64_t parameters = 0;
  int64_t scale_elements = 0;
};
CheckpointTally tally_checkpoint(const io::ShardedCheckpoint& ckpt);

// The split the rule table gives `name` (for tests and `harness model info`).
TpSplit tp_rule(const std::string& name);

}  // namespace h0::model
