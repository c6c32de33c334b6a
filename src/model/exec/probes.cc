#include "model/exec/probes.h"

#include <cstdlib>
#include <cstring>

#include "base/check.h"
#include "model/config/block.h"

namespace h0::model {

ProbePlace probe_place(const std::string& name) {
  ProbePlace p;
  const size_t at = name.find("layers.");
  if (at == std::string::npos) {
    if (name == "logits" ||
        name.find("norm") != std::string::npos) {  // the final norm, then the logits
      p.layer = ProbePlace::kAfterLayers;
      p.step = name == "logits" ? 1 : 0;
    }
    return p;
  }
  p.layer = std::atoi(name.c_str() + at + 7);
  p.step = kLayerOutputStep;
  const auto ends_with = [&](const char* sub) {
    return name.size() > std::strlen(sub) && name.ends_with(std::string(".") + sub);
  };
  for (int32_t k = 0, slot = 0; k < kLayerOutputStep; ++k) {
    if (const char* norm = kDecoderSublayers[k]) {
      if (ends_with(norm)) p.step = k;
      continue;
    }
    const auto here = slot++ == 0 ? BlockSlot::kMixer : BlockSlot::kFeedForward;
    for (const Block* b : blocks()) {
      if (b->slot() == here && ends_with(b->probe())) p.step = k;
    }
  }
  return p;
}

void ProbeRecorder::record(const std::string& name, tensor::Tensor value) {
  for (auto& [n, t] : probes_) {
    if (n != name) continue;
    if (append_rows_) {
      tensor::Shape shape = t.shape();
      H0_CHECK(value.dtype() == t.dtype() && value.shape().size() == shape.size() &&
               value.numel() * shape[0] == t.numel() * value.dim(0))
          << "probe " << name << ": rows of another shape";
      shape[0] += value.dim(0);
      tensor::Tensor joined = tensor::Tensor::empty(t.dtype(), shape);
      std::memcpy(joined.mutable_data(), t.data(), t.nbytes());
      std::memcpy(static_cast<std::byte*>(joined.mutable_data()) + t.nbytes(), value.data(),
                  value.nbytes());
      t = std::move(joined);
    } else {
      t = std::move(value);
    }
    return;
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
