// A MoE layer's shared experts (blocks/shared_expert.cc), run by blocks/routed_experts.cc beside
// the routed ones. Internal to src/model/blocks/.
#pragma once

#include "model/exec/layer_run.h"
#include "model/weights/inventory_builder.h"

namespace h0::model {

// The shared experts' MLP (Moe::shared_inter() wide, roles kSharedGate..kSharedDown) and
// Qwen2-MoE's gate [1, D]; nothing when the config has no shared experts.
void shared_expert_weights(InventoryBuilder& b);
void bind_shared_expert(const Architecture& arch, BlockOps* ops);
// y + the shared experts' output of h (times sigmoid(h·gᵀ) per token under Qwen2-MoE's gate);
// y itself without shared experts.
backend::DeviceTensor add_shared_expert(LayerRun& r, const backend::DeviceTensor& h,
                                        backend::DeviceTensor y);

}  // namespace h0::model
