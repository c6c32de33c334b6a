#include "model/probes.h"

namespace h0::model {

void ProbeRecorder::record(const std::string& name, tensor::Tensor value) {
  for (auto& [n, t] : probes_) {
    if (n == name) {
      t = std::move(value);
      return;
    }
  }
  probes_.emplace_back(name, std::move(value));
}

const tensor::Tensor* ProbeRecorder::find(const std::string& name) const {
  for (const auto& [n, t] : probes_) {
    if (n == name) return &t;
  }
  return nullptr;
}

}  // namespace h0::model
