#include "model/exec/layer_run.h"

#include "base/check.h"
#include "model/exec/executor.h"

namespace h0::model {

LayerRun::LayerRun(Executor& executor, int64_t layer, const Block& block, Executor::Step& step)
    : executor_(executor), layer_(layer), block_(block), step_(step), tokens_(step.tokens) {
  for (const Executor::Segment& s : step.segments) sequences_.push_back({s.seq, s.row, s.tokens});
}

tensor::DType LayerRun::dtype() const { return executor_.options_.dtype; }

backend::Backend& LayerRun::backend() { return executor_.backend_; }

const BlockOps& LayerRun::ops() const {
  const auto it = executor_.op_.blocks.find(&block_);
  H0_CHECK(it != executor_.op_.blocks.end()) << block_.name() << " bound no ops";
  return it->second;
}

const ModelOps& LayerRun::model_ops() const { return executor_.op_; }

BlockState& LayerRun::state() {
  const auto it = executor_.block_states_.find(&block_);
  H0_CHECK(it != executor_.block_states_.end()) << block_.name() << " keeps no state";
  return *it->second;
}

const Architecture& LayerRun::arch() const { return executor_.arch_; }

const Sharding* LayerRun::sharding() const { return executor_.options_.sharding; }

void LayerRun::all_reduce(mesh::Communicator* comm, backend::DeviceTensor* t) {
  executor_.all_reduce(comm, t);
}

const ModelWeights& LayerRun::weights() const { return *executor_.weights_; }

int64_t LayerRun::expert_bytes() const { return executor_.expert_bytes_; }

const backend::DeviceTensor& LayerRun::positions() const { return step_.positions; }

const backend::DeviceTensor* LayerRun::find(TensorRole role, TensorPiece piece) const {
  return executor_.weights_->find(layer_, role, piece);
}

backend::DeviceTensor LayerRun::cached_attention(const backend::DeviceTensor& q,
                                                 const tensor::Tensor& k, const tensor::Tensor& v,
                                                 const IndexerInputs* index) {
  return executor_.cached_attention(layer_, block_, q, k, v, step_, index);
}

const backend::DeviceTensor& LayerRun::weight(TensorRole role, TensorPiece piece) const {
  return executor_.weights_->get(layer_, role, piece);
}

backend::DeviceTensor LayerRun::linear(TensorRole role, const backend::DeviceTensor& x,
                                       bool with_bias) {
  return executor_.linear(layer_, role, x, with_bias);
}

backend::DeviceTensor LayerRun::row_parallel(TensorRole role, const backend::DeviceTensor& x) {
  backend::DeviceTensor out = executor_.linear(layer_, role, x, executor_.first_tp_rank());
  if (executor_.options_.sharding)
    executor_.all_reduce(executor_.options_.sharding->tp.get(), &out);
  return out;
}

std::vector<backend::DeviceTensor> LayerRun::run(
    const BoundOp& op, const std::vector<const backend::DeviceTensor*>& in) {
  return executor_.ops_.run(op, in);
}

}  // namespace h0::model
