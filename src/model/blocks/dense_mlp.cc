// The dense MLP of a decoder layer (transformers' LlamaMLP and its kin): down(act(gate(x)) ·
// up(x)), with SwiGLU for hidden_act silu and GeLU (erf or tanh: Gemma 3's gelu_pytorch_tanh)
// otherwise. Config: TextModel::intermediate_size, hidden_act, mlp_bias; every layer that is not
// MoE.
#include "model/blocks/dense_mlp.h"

namespace h0::model {

static_assert(uint8_t(TensorRole::kFfnDown) == uint8_t(TensorRole::kFfnGate) + 2 &&
              uint8_t(TensorRole::kSharedDown) == uint8_t(TensorRole::kSharedGate) + 2);

void gated_mlp_weights(InventoryBuilder& b, int64_t inter, TensorRole gate) {
  const int64_t h = b.text().hidden_size;
  const bool biased = b.text().mlp_bias;
  const auto up = TensorRole(uint8_t(gate) + 1), down = TensorRole(uint8_t(gate) + 2);
  b.proj(gate, inter, h, TpSplit::kColumn, 1);
  if (biased) b.bias(gate, inter, TpSplit::kColumn);
  b.proj(up, inter, h, TpSplit::kColumn, 1);
  if (biased) b.bias(up, inter, TpSplit::kColumn);
  b.proj(down, h, inter, TpSplit::kRow, 1);
  if (biased) b.bias(down, h, TpSplit::kReplicated);
}

void bind_gated_mlp(const Architecture& arch, BlockOps* ops) {
  const std::string& act = arch.text.hidden_act;
  if (act == "silu") {
    ops->add("swiglu", bind_op("swiglu"));
    return;
  }
  // families/common.cc read_activation: gelu (erf) or its tanh approximation
  ops->add("mlp_act", bind_op("gelu", {{"approximate", act == "gelu" ? "none" : "tanh"}}));
  ops->add("mlp_mul", bind_op("mul"));
}

backend::DeviceTensor run_gated_mlp(LayerRun& r, TensorRole gate, const backend::DeviceTensor& h) {
  const auto up = TensorRole(uint8_t(gate) + 1), down = TensorRole(uint8_t(gate) + 2);
  const backend::DeviceTensor g = r.linear(gate, h), u = r.linear(up, h);
  backend::DeviceTensor a;
  if (const BoundOp* swiglu = r.ops().find("swiglu")) {
    a = r.run1(*swiglu, {&g, &u});
  } else {  // act(gate) · up (Gemma 3: gelu_pytorch_tanh)
    const backend::DeviceTensor act = r.run1(r.ops().at("mlp_act"), {&g});
    a = r.run1(r.ops().at("mlp_mul"), {&act, &u});
  }
  return r.row_parallel(down, a);
}

namespace {

class DenseMlp : public Block {
 public:
  const char* name() const override { return "dense_mlp"; }
  BlockSlot slot() const override { return BlockSlot::kFeedForward; }
  bool runs(const TextModel& t, int64_t layer) const override { return !t.is_moe_layer(layer); }
  const char* probe() const override { return "mlp"; }
  void weights(InventoryBuilder& b) const override {
    gated_mlp_weights(b, b.text().intermediate_size, TensorRole::kFfnGate);
  }
  void bind(const Architecture& arch, tensor::DType, BlockOps* ops) const override {
    bind_gated_mlp(arch, ops);
  }
  backend::DeviceTensor run(LayerRun& r, const backend::DeviceTensor& h) const override {
    return run_gated_mlp(r, TensorRole::kFfnGate, h);
  }
  std::string describe(const TextModel&, int64_t) const override { return "dense MLP"; }
};

}  // namespace

const Block& dense_mlp_block() {
  static const DenseMlp block;
  return block;
}

}  // namespace h0::model
