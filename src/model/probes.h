// Probes: tensors captured at named points of a model run, named as HF module names
// ("model.layers.3.self_attn", "model.vision_tower.encoder.layers.0.mlp") so they line up with
// goldens dumped from transformers with forward hooks (golden/tools/dump_hf.py).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace h0::model {

class ProbeRecorder {
 public:
  // `only`: names to capture; empty captures every probe.
  explicit ProbeRecorder(std::set<std::string> only = {}) : only_(std::move(only)) {}

  bool wants(const std::string& name) const { return only_.empty() || only_.count(name) > 0; }
  // Keeps `value` (f32, host); a name captured twice keeps the last value.
  void record(const std::string& name, tensor::Tensor value);
  // In capture order (the execution order of the model).
  const std::vector<std::pair<std::string, tensor::Tensor>>& probes() const { return probes_; }
  // nullptr if not captured.
  const tensor::Tensor* find(const std::string& name) const;

 private:
  std::set<std::string> only_;
  std::vector<std::pair<std::string, tensor::Tensor>> probes_;
};

}  // namespace h0::model
