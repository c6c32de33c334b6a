#include "model/exec/tower_run.h"

#include "model/exec/host_glue.h"

namespace h0::model {

TowerRun::TowerRun(Executor& executor, ProbeRecorder* probes)
    : executor_(executor), probes_(probes) {}

const Architecture& TowerRun::arch() const { return executor_.arch_; }

tensor::DType TowerRun::dtype() const { return executor_.options_.dtype; }

backend::Backend& TowerRun::backend() { return executor_.backend_; }

const ModelOps& TowerRun::model_ops() const { return executor_.op_; }

bool TowerRun::embeds() const {
  return executor_.options_.sharding == nullptr || executor_.options_.sharding->pp_rank == 0;
}

const std::string& TowerRun::self_test_fault() const { return executor_.options_.self_test_fault; }

const backend::DeviceTensor& TowerRun::weight(int64_t layer, TensorRole role,
                                              TensorPiece piece) const {
  return executor_.weights_->get(layer, role, piece);
}

backend::DeviceTensor TowerRun::linear(int64_t layer, TensorRole role,
                                       const backend::DeviceTensor& x, bool with_bias) {
  return executor_.linear(layer, role, x, with_bias);
}

backend::DeviceTensor TowerRun::run1(const BoundOp& op,
                                     const std::vector<const backend::DeviceTensor*>& in) {
  return executor_.ops_.run1(op, in);
}

backend::DeviceTensor TowerRun::constant_like(const backend::DeviceTensor& like,
                                              const std::vector<double>& per_channel,
                                              int64_t inner) {
  tensor::Tensor host = tensor::Tensor::empty(tensor::DType::kF32, like.shape());
  float* d = host.mutable_data_as<float>();
  for (int64_t i = 0; i < host.numel(); ++i)
    d[i] = float(per_channel[size_t((i / inner) % int64_t(per_channel.size()))]);
  return executor_.backend_.upload(glue::to_dtype(host, dtype()));
}

void TowerRun::probe(const std::string& name, const backend::DeviceTensor& t) {
  if (probes_ != nullptr && probes_->wants(name)) probes_->record(name, to_host_f32(t));
}

tensor::Tensor TowerRun::to_host_f32(const backend::DeviceTensor& t) {
  return executor_.to_host_f32(t);
}

}  // namespace h0::model
