#include "model/model_weights.h"

#include <cstring>

#include "base/error.h"
#include "model/sharding.h"
#include "model/weight_loader.h"
#include "model/host_glue.h"

namespace h0::model {
namespace {

// Concatenates equally shaped tensors along a new leading axis.
tensor::Tensor stack(const std::vector<tensor::Tensor>& parts) {
  tensor::Shape shape = parts[0].shape();
  shape.insert(shape.begin(), int64_t(parts.size()));
  tensor::Tensor out = tensor::Tensor::zeros(parts[0].dtype(), shape);
  auto* dst = static_cast<std::byte*>(out.mutable_data());
  for (const auto& p : parts) {
    std::memcpy(dst, p.data(), p.nbytes());
    dst += p.nbytes();
  }
  return out;
}

}  // namespace

ModelWeights::ModelWeights(const Architecture& arch, const io::ShardedCheckpoint& ckpt, backend::Backend& backend,
                           tensor::DType dtype, const Sharding* sharding) {
  const Inventory inv = build_inventory(arch, {.dtype = std::nullopt, .quantized = false, .include_mtp = false});
  for (const WeightInfo& w : inv.weights) {
    const io::TensorEntry* e = ckpt.find(w.name);
    if (e == nullptr) throw InputError(ckpt.path(), "missing tensor '" + w.name + "' (see `harness load` for the full check)");
    if (e->shape != w.shape) {
      throw InputError(ckpt.path(), "tensor '" + w.name + "' is " + tensor::shape_string(e->shape) + ", expected " +
                                        tensor::shape_string(w.shape));
    }
  }
  std::map<int64_t, std::array<std::vector<tensor::Tensor>, 3>> expert_parts;
  for (const WeightInfo& w : inv.weights) {
    std::optional<WeightSlice> part = WeightSlice{-1, 0, 0};
    if (sharding != nullptr) part = sharding->slice(w);
    if (!part) continue;  // another rank's
    const tensor::Tensor stored = part->axis < 0 ? ckpt.get(w.name) : ckpt.slice(w.name, part->axis, part->begin, part->end);
    const tensor::Tensor host = tensor::is_float(stored.dtype()) ? glue::to_dtype(stored, dtype) : stored;
    bytes_ += int64_t(host.nbytes());
    if (w.expert >= 0) {
      // gate (w1 / gate_proj), up (w3 / up_proj), down (w2 / down_proj)
      const bool down = w.name.ends_with("down_proj.weight") || w.name.ends_with(".w2.weight");
      const bool up = w.name.ends_with("up_proj.weight") || w.name.ends_with(".w3.weight");
      expert_parts[w.layer][down ? 2 : up ? 1 : 0].push_back(host);
      continue;
    }
    tensors_.emplace(w.name, backend.upload(host));
  }
  for (auto& [layer, parts] : expert_parts) {
    experts_.emplace(layer, ExpertStack{backend.upload(stack(parts[0])), backend.upload(stack(parts[1])),
                                        backend.upload(stack(parts[2]))});
  }
}

const backend::DeviceTensor& ModelWeights::get(const std::string& name) const {
  const backend::DeviceTensor* t = find(name);
  if (t == nullptr) throw InputError("model weights", "no tensor '" + name + "'");
  return *t;
}

const backend::DeviceTensor* ModelWeights::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const ExpertStack& ModelWeights::experts(int64_t layer) const {
  auto it = experts_.find(layer);
  if (it == experts_.end()) throw InputError("model weights", "layer " + std::to_string(layer) + " has no experts");
  return it->second;
}

}  // namespace h0::model
