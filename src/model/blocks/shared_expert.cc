// Shared experts (DeepSeek-V3's n_shared_experts, Qwen2-MoE's shared_expert): a gated MLP every
// token runs beside its routed experts, num_shared_experts · moe_intermediate_size wide (or
// shared_expert_intermediate_size), added to their output; Qwen2-MoE scales it per token by
// sigmoid(x·shared_expert_gateᵀ). Config: Moe::num_shared_experts, shared_intermediate_size,
// shared_expert_gate.
#include "model/blocks/shared_expert.h"

#include "model/blocks/dense_mlp.h"
#include "model/exec/host_glue.h"

namespace h0::model {

void shared_expert_weights(InventoryBuilder& b) {
  const Moe& m = b.text().moe;
  if (m.num_shared_experts > 0) gated_mlp_weights(b, m.shared_inter(), TensorRole::kSharedGate);
  if (m.shared_expert_gate)
    b.add(b.named(TensorRole::kSharedExpertGate), {1, b.text().hidden_size}, TpSplit::kReplicated)
        .tensor = TensorRole::kSharedExpertGate;
}

void bind_shared_expert(const Architecture& arch, BlockOps* ops) {
  const Moe& m = arch.text.moe;
  if (m.num_shared_experts > 0) bind_gated_mlp(arch, ops);
  if (m.shared_expert_gate) {
    ops->add("shared_gate", bind_op("sigmoid"));
    ops->add("shared_mul", bind_op("mul"));
  }
}

backend::DeviceTensor add_shared_expert(LayerRun& r, const backend::DeviceTensor& h,
                                        backend::DeviceTensor y) {
  const Moe& m = r.arch().text.moe;
  if (m.num_shared_experts <= 0) return y;
  backend::DeviceTensor s = run_gated_mlp(r, TensorRole::kSharedGate, h);
  if (m.shared_expert_gate) {  // Qwen2-MoE: s · sigmoid(h·gᵀ), one gate value per token
    const backend::DeviceTensor logit = r.linear(TensorRole::kSharedExpertGate, h, false);
    const tensor::Tensor g =
        r.backend().download(r.run1(r.ops().at("shared_gate"), {&logit}));  // [T, 1]
    // mul takes equal shapes: the per-token value is repeated over the hidden size on the host.
    const int64_t d = r.arch().text.hidden_size;
    const backend::DeviceTensor gate =
        r.backend().upload(glue::repeat_heads(g, d).reshape({g.dim(0), d}));
    s = r.run1(r.ops().at("shared_mul"), {&s, &gate});
  }
  return r.run1(r.model_ops().add, {&y, &s});
}

}  // namespace h0::model
