// Probes: tensors captured at named points of a model run, named as HF module names
// ("model.layers.3.self_attn", "model.vision_tower.encoder.layers.0.mlp") so they line up with
// goldens dumped from transformers with forward hooks (golden/tools/dump_hf.py).
#pragma once

#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace h0::model {

// A decoder layer's probes in execution order: "<prefix>layers.<i>.<sublayer>" for those of these
// the layer has, then "<prefix>layers.<i>" itself (the residual stream after the layer). The norms
// are named by their weights' stems (the family's TensorNames): Llama's pre-MLP norm is
// post_attention_layernorm; with sandwich norms (Gemma 3) that name is the attention output's
// norm and the MLP has a norm before and after it. A null entry is a block's slot, probed under
// the name of the block the layer runs there (config/block.h Block::probe: self_attn or
// linear_attn for the mixer, mlp for the feed-forward part).
inline constexpr const char* kDecoderSublayers[] = {"input_layernorm",
                                                    nullptr,  // the mixer block
                                                    "post_attention_layernorm",
                                                    "pre_feedforward_layernorm",
                                                    nullptr,  // the feed-forward block
                                                    "post_feedforward_layernorm"};
inline constexpr int32_t kLayerOutputStep = int32_t(std::size(kDecoderSublayers));

// Where probe `name` sits in a model's execution order: its decoder layer (-1 before the layers:
// the embedding, the vision tower; kAfterLayers after them: the final norm, the logits) and, in a
// layer, its place (the index into kDecoderSublayers, kLayerOutputStep for the layer's output).
// Orders the first divergences of the ranks of a sharded run.
struct ProbePlace {
  static constexpr int32_t kAfterLayers = 1 << 20;
  int32_t layer = -1, step = 0;
  bool operator<(const ProbePlace& o) const {
    return layer != o.layer ? layer < o.layer : step < o.step;
  }
};
ProbePlace probe_place(const std::string& name);

class ProbeRecorder {
 public:
  // `only`: names to capture; empty captures every probe. `append_rows`: a name captured again
  // gets the new rows appended (a layer run as a prefill then decode steps), else the last value.
  explicit ProbeRecorder(std::set<std::string> only = {}, bool append_rows = false)
      : only_(std::move(only)), append_rows_(append_rows) {}

  bool wants(const std::string& name) const { return only_.empty() || only_.count(name) > 0; }
  // Keeps `value` (f32, host [rows, ...]); see append_rows for a name captured twice.
  void record(const std::string& name, tensor::Tensor value);
  // In capture order (the execution order of the model).
  const std::vector<std::pair<std::string, tensor::Tensor>>& probes() const { return probes_; }
  // nullptr if not captured.
  const tensor::Tensor* find(const std::string& name) const;

 private:
  std::set<std::string> only_;
  bool append_rows_ = false;
  std::vector<std::pair<std::string, tensor::Tensor>> probes_;
};

}  // namespace h0::model
