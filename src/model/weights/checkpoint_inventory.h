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
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/sharded_checkpoint.h"
#include "model/config/architecture.h"
#include "model/weights/inventory.h"

namespace h0::model {

// The inventory of `ckpt` for `arch` (any architecture; meant for modelled == false), and with
// `tally` its tensors counted by class (tally_tensors's, from the same pass). Throws InputError
// for a tensor naming an expert at or past the config's expert count.
struct CheckpointTally;
Inventory inventory_from_checkpoint(const Architecture& arch, const io::ShardedCheckpoint& ckpt,
                                    CheckpointTally* tally = nullptr);

// Whether `path` is a directory holding a checkpoint (model.safetensors or its sharded index).
bool has_checkpoint(const std::string& path);

// What a checkpoint holds by dtype, read from its headers.
struct DtypeTally {
  int64_t tensors = 0, elements = 0, bytes = 0;
};

// One saved tensor as its header describes it; `copies` stands for that many tensors alike (a
// folded inventory: golden/models/transformers5-inventories.json.gz).
struct SavedTensor {
  std::string name;
  tensor::DType dtype = tensor::DType::kBF16;
  std::vector<int64_t> shape;
  int64_t copies = 1;
};

// What a saved tensor is. Stage 1 counts each class apart, so that parameters equal transformers'
// num_parameters():
//   quantization companion  a scale, zero point or group index ("*_scale_inv", "*_scales",
//                           "weight_scale", "input_scale", "*zero_point", "qzeros", "g_idx") of a
//                           quantized checkpoint: one whose config has a quantization_config or
//                           whose headers hold fp8 weights or packed 4-bit "*_blocks". In a
//                           checkpoint that is not quantized such a name is a parameter
//                           (DeepSeek-V4's hc_attn_scale).
//   buffer                  saved state the model does not train: an integer or bool tensor that
//                           is no (packed) quantized weight (DeepSeek-V4's tid2eid lookup table),
//                           and the float buffers transformers 5.24 saves for the config's
//                           model_type (transformers5_buffers.inc: routing biases such as
//                           e_score_correction_bias / expert_bias, Gemma 4's layer_scalar). For a
//                           model_type transformers 5.24 does not have, a leaf that is a buffer in
//                           most families holding it (e_score_correction_bias, expert_bias,
//                           layer_scalar) — a rule said as such in `buffer_rule`.
//   parameter               everything else; a packed 4-bit "*_blocks" in u8 counts two per byte.
struct ClassTally {
  int64_t tensors = 0, elements = 0, bytes = 0;
  std::map<std::string, int64_t>
      names;  // folded name ("model.layers.*.ffn.gate.tid2eid") -> tensors
};
struct CheckpointTally {
  std::map<std::string, DtypeTally> by_dtype;  // "bf16" -> ...
  int64_t tensors = 0, bytes = 0;
  int64_t parameters = 0;  // elements of the parameter class (4-bit blocks two per byte)
  ClassTally params, buffers, companions;
  std::string buffer_rule;  // which rule told the buffers ("transformers 5.24's table for hy_v3")
  // Where the count cannot be transformers' num_parameters(): a family whose saved tensors it
  // converts on load (Inkling 2). Empty otherwise.
  std::string count_note;
};
// The tally of `tensors` (a checkpoint's: saved_tensors; inventory_from_checkpoint gives it too).
CheckpointTally tally_tensors(const Architecture& arch, const std::vector<SavedTensor>& tensors);

// One line for each class that is not empty: "buffers: 2,088 elements in 3 tensors, 16.3 KiB
// (model.layers.*.ffn.gate.tid2eid x2, ...); the buffers transformers 5.24's deepseek_v4 saves".
std::vector<std::string> class_lines(const CheckpointTally& t);
// {"parameters": {tensors, elements, bytes}, "buffers": {..., names}, "quant_companions": ...,
//  "buffer_rule", "count_note"}.
nlohmann::json class_json(const CheckpointTally& t);

// The saved tensors of `ckpt`, from its headers.
std::vector<SavedTensor> saved_tensors(const io::ShardedCheckpoint& ckpt);

// `name` with every numeric component made "*": "model.layers.3.mlp.experts.7.w1.weight" ->
// "model.layers.*.mlp.experts.*.w1.weight".
std::string fold_indices(const std::string& name);

// The split the rule table gives `name` (for tests and `harness model info`).
TpSplit tp_rule(const std::string& name);

}  // namespace h0::model
