// The gated MLP (blocks/dense_mlp.cc): a decoder layer's dense MLP, and the same form as a MoE
// layer's shared experts (blocks/routed_experts.cc). Internal to src/model/blocks/.
#pragma once

#include <cstdint>

#include "model/exec/layer_run.h"
#include "model/weights/inventory_builder.h"

namespace h0::model {

// gate, up [inter, D] and down [D, inter] under the roles `gate`, `gate` + 1 and `gate` + 2
// (kFfnGate: the layer's MLP; kSharedGate: the shared experts), with their biases under
// mlp_bias; gate and up column-parallel, down row-parallel.
void gated_mlp_weights(InventoryBuilder& b, int64_t inter, TensorRole gate);
// Its activation: swiglu (hidden_act silu), else act(gate) · up (gelu, gelu_pytorch_tanh).
void bind_gated_mlp(const Architecture& arch, BlockOps* ops);
// down(act(gate(h)) · up(h)), row-parallel under TP (all-reduced).
backend::DeviceTensor run_gated_mlp(LayerRun& r, TensorRole gate, const backend::DeviceTensor& h);

}  // namespace h0::model
