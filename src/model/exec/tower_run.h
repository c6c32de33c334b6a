// What a vision tower's features step may use (config/tower.h Tower::features): the tower's
// weights by vision role and encoder layer, the catalogue ops (the model's, the tower's bound by
// Tower::bind), the backend, the run dtype, whether this rank embeds, and the probes. The tower
// makes one per image.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/exec/executor.h"
#include "model/exec/model_ops.h"

namespace h0::model {

class TowerRun {
 public:
  TowerRun(Executor& executor, ProbeRecorder* probes);

  const Architecture& arch() const;
  tensor::DType dtype() const;
  backend::Backend& backend();
  const ModelOps& model_ops() const;
  // Whether this rank embeds: the first pipeline stage, the only one the tower runs on.
  bool embeds() const;
  // The executor's self-test fault (ExecutorOptions::self_test_fault; "" in a real run).
  const std::string& self_test_fault() const;

  // The tower's weight of `role` in encoder layer `layer` (-1: outside the encoder layers).
  const backend::DeviceTensor& weight(int64_t layer, TensorRole role,
                                      TensorPiece piece = TensorPiece::kWeight) const;
  // x·wᵀ (+ its bias unless `with_bias` is false) of the tower's `role` in `layer`.
  backend::DeviceTensor linear(int64_t layer, TensorRole role, const backend::DeviceTensor& x,
                               bool with_bias = true);
  backend::DeviceTensor run1(const BoundOp& op,
                             const std::vector<const backend::DeviceTensor*>& in);
  // A tensor shaped as `like` whose element i is per_channel[(i / inner) % channels], in the run
  // dtype (a normalization's scale, quick_gelu's constant).
  backend::DeviceTensor constant_like(const backend::DeviceTensor& like,
                                      const std::vector<double>& per_channel, int64_t inner);

  ProbeRecorder* probes() { return probes_; }
  // Records `t` under `name` when the probes want it.
  void probe(const std::string& name, const backend::DeviceTensor& t);
  tensor::Tensor to_host_f32(const backend::DeviceTensor& t);

 private:
  Executor& executor_;
  ProbeRecorder* probes_;
};

}  // namespace h0::model
