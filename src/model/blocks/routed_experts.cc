// Routed experts (transformers' MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock, DeepseekV3MoE,
// GptOssMLP): a router's logits [T, E] → moe_gate (top-k, softmax or sigmoid scoring, grouped
// routing, DeepSeek's correction bias) → moe_experts over each token's experts, then the shared
// experts added (blocks/shared_expert.cc). The experts are stored one tensor per expert, or fused
// (GPT-OSS: every expert in one tensor, with biases and the clamped SwiGLU), or as MXFP4 blocks.
// Under EP a rank runs its experts on the tokens routed to them and the outputs are summed over
// the ranks; under TP each expert's F axis is split and the partial sums all-reduced. Experts too
// large to widen on load stay as stored (ModelWeights' StoredExperts) and are widened a group at a
// time per step. Config: Moe (architecture.h); the MoE layers (TextModel::is_moe_layer).
#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "model/blocks/shared_expert.h"
#include "model/exec/host_glue.h"
#include "model/exec/layer_run.h"
#include "model/weights/inventory_builder.h"

namespace h0::model {
namespace {

using backend::DeviceTensor;

// One expert per tensor: gate, up [F, D] and down [D, F] of each, fp8 with scales in an fp8
// checkpoint.
void per_expert_weights(InventoryBuilder& b) {
  const Moe& m = b.text().moe;
  const int64_t h = b.text().hidden_size, inter = m.expert_intermediate_size;
  for (int64_t e = 0; e < m.num_experts; ++e) {
    b.set_expert(e);
    b.proj(TensorRole::kExpertGate, inter, h, TpSplit::kColumn, 1);
    b.proj(TensorRole::kExpertUp, inter, h, TpSplit::kColumn, 1);
    b.proj(TensorRole::kExpertDown, h, inter, TpSplit::kRow, 1);
  }
  b.set_expert(-1);
}

// GPT-OSS: gate_up [E, D, 2F] (gate/up interleaved: TP cuts whole pairs) with bias [E, 2F],
// down [E, F, D] with bias [E, D] (replicated: under TP only the first rank adds it).
void fused_weights(InventoryBuilder& b) {
  const Moe& m = b.text().moe;
  const int64_t e = m.num_experts, h = b.text().hidden_size, f = m.expert_intermediate_size;
  const auto fused = [&](TensorRole role, TensorPiece piece, std::vector<int64_t> shape, TpSplit tp,
                         int axis, int64_t unit) -> WeightInfo& {
    WeightInfo& w = b.add(b.named(role, piece), std::move(shape), tp, unit);
    w.tensor = role;
    w.piece = piece;
    w.all_experts = true;
    w.tp_axis = axis;
    return w;
  };
  // MXFP4 (gpt-oss's released checkpoints): each weight as [E, out, in / 32, 16] packed E2M1
  // bytes and [E, out, in / 32] E8M0 scales, out and in swapped from the float layout. The plan
  // cuts F where the float layout does (gate_up's out axis; down's in axis, in whole 32-groups).
  const auto packed = [&](TensorRole role, int64_t out, int64_t in, TpSplit tp, int axis,
                          int64_t unit) {
    if (in % 32 != 0) {
      throw InputError("config.json: quantization_config",
                       "mxfp4 needs the experts' input width (" + std::to_string(in) +
                           ") in whole 32-element groups");
    }
    WeightInfo& blocks = fused(role, TensorPiece::kBlocks, {e, out, in / 32, 16}, tp, axis, unit);
    blocks.dtype = tensor::DType::kU8;
    blocks.quantized = true;
    WeightInfo& scales = fused(role, TensorPiece::kScale, {e, out, in / 32}, tp, axis, unit);
    scales.dtype = tensor::DType::kU8;
    scales.role = WeightRole::kQuantScale;
  };
  if (b.mxfp4()) {
    packed(TensorRole::kExpertsGateUp, 2 * f, h, TpSplit::kColumn, 1, 2);
  } else {
    fused(TensorRole::kExpertsGateUp, TensorPiece::kWeight, {e, h, 2 * f}, TpSplit::kColumn, 2, 2);
  }
  fused(TensorRole::kExpertsGateUp, TensorPiece::kBias, {e, 2 * f}, TpSplit::kColumn, 1, 2);
  if (b.mxfp4()) {
    packed(TensorRole::kExpertsDown, h, f, TpSplit::kRow, 2, 1);
  } else {
    fused(TensorRole::kExpertsDown, TensorPiece::kWeight, {e, f, h}, TpSplit::kRow, 1, 1);
  }
  fused(TensorRole::kExpertsDown, TensorPiece::kBias, {e, h}, TpSplit::kReplicated, -1, 1);
}

// Expert parallelism's dispatch: the routes to this rank's experts [first, last), renumbered
// from 0; a route to another rank's expert keeps weight 0 (and a valid id).
std::vector<DeviceTensor> local_routes(backend::Backend& be, std::vector<DeviceTensor> routed,
                                       int64_t first, int64_t last) {
  tensor::Tensor w = be.download(routed[0]), ids = be.download(routed[1]);
  float* wd = w.mutable_data_as<float>();
  int32_t* id = ids.mutable_data_as<int32_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (id[i] >= first && id[i] < last) {
      id[i] -= int32_t(first);
    } else {
      id[i] = 0;
      wd[i] = 0;
    }
  }
  be.upload_into(w, &routed[0]);
  be.upload_into(ids, &routed[1]);
  return routed;
}

// One executor's group stacks for experts left as stored, reused by every step and layer.
class ExpertScratch : public BlockState {
 public:
  int64_t capacity = 0;
  std::vector<tensor::Tensor> host;
  std::vector<DeviceTensor> device;
};

// The routes of tokens [0, t) into one group of experts (slot: an expert's index in the group, or
// -1): the tokens routed into it, each with its routes there in order, padded with weight-0
// routes to the group's first expert.
struct GroupRoutes {
  std::vector<int64_t> rows;
  tensor::Tensor xs, ws, is;
};

GroupRoutes group_routes(const tensor::Tensor& x, const float* wd, const int32_t* id, int64_t k,
                         const std::vector<int64_t>& slot) {
  const int64_t t = x.dim(0), d = x.dim(1);
  const size_t row_bytes = size_t(d) * tensor::dtype_size(x.dtype());
  const auto slot_of = [&](int64_t i) { return wd[i] != 0 ? slot[size_t(id[i])] : -1; };
  GroupRoutes g;
  int64_t width = 1;
  for (int64_t r = 0; r < t; ++r) {
    int64_t n = 0;
    for (int64_t j = 0; j < k; ++j) n += slot_of(r * k + j) >= 0;
    if (n > 0) g.rows.push_back(r);
    width = std::max(width, n);
  }
  const auto m = int64_t(g.rows.size());
  g.xs = tensor::Tensor::empty(x.dtype(), {m, d});
  g.ws = tensor::Tensor::zeros(tensor::DType::kF32, {m, width});
  g.is = tensor::Tensor::zeros(tensor::DType::kI32, {m, width});
  for (int64_t i = 0; i < m; ++i) {
    const int64_t r = g.rows[size_t(i)];
    std::memcpy(static_cast<std::byte*>(g.xs.mutable_data()) + size_t(i) * row_bytes,
                static_cast<const std::byte*>(x.data()) + size_t(r) * row_bytes, row_bytes);
    int64_t n = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t s = slot_of(r * k + j);
      if (s < 0) continue;
      g.ws.mutable_data_as<float>()[i * width + n] = wd[r * k + j];
      g.is.mutable_data_as<int32_t>()[i * width + n] = int32_t(s);
      ++n;
    }
  }
  return g;
}

// moe_experts over experts left as stored: the routed ones widened a group at a time, each group
// run on the tokens routed to it, the partial outputs summed in f64 (one group holding every
// routed expert: the whole-stack result, bit for bit).
DeviceTensor run_stored(LayerRun& r, const StoredExperts& experts, const DeviceTensor& h,
                        const std::vector<DeviceTensor>& routed) {
  backend::Backend& be = r.backend();
  const tensor::Tensor x = be.download(h);
  const tensor::Tensor w = be.download(routed[0]), ids = be.download(routed[1]);
  const int64_t t = x.dim(0), d = x.dim(1), k = ids.dim(1);
  const float* wd = w.data_as<float>();
  const int32_t* id = ids.data_as<int32_t>();
  // The experts routed to (a weight-0 route is expert parallelism's placeholder: not run).
  std::vector<int64_t> used;
  for (int64_t i = 0; i < t * k; ++i)
    if (wd[i] != 0) used.push_back(id[i]);
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  // A group's stacks on the host and their copy on the backend: half the budget each.
  const int64_t group = std::clamp<int64_t>(
      r.expert_bytes() / 2 / std::max<int64_t>(1, experts.widened_bytes()), 1, experts.count());
  std::vector<double> sum(size_t(t * d), 0.0);
  std::vector<int64_t> slot(size_t(experts.count()), -1);
  // Groups of equal size (8 experts in groups of 7: 4 and 4).
  const size_t groups = (used.size() + size_t(group) - 1) / size_t(group);
  const size_t per = groups == 0 ? 1 : (used.size() + groups - 1) / groups;
  auto& sc = static_cast<ExpertScratch&>(r.state());
  for (size_t g0 = 0; g0 < used.size(); g0 += per) {
    const std::vector<int64_t> chunk(used.begin() + long(g0),
                                     used.begin() + long(std::min(used.size(), g0 + per)));
    for (size_t j = 0; j < chunk.size(); ++j) slot[size_t(chunk[j])] = int64_t(j);
    const GroupRoutes g = group_routes(x, wd, id, k, slot);
    // The group's stacks, written on the host and copied into the backend's: both kept from step
    // to step at `group` experts (rows past the chunk's are stale and never routed to).
    if (sc.capacity != group || sc.host.size() != (experts.biased() ? 6u : 3u)) {
      sc.device.clear();
      sc.host = experts.stacks(group);
      for (const tensor::Tensor& part : sc.host) sc.device.push_back(be.upload(part));
      sc.capacity = group;
    }
    experts.widen(chunk, &sc.host);
    for (size_t i = 0; i < sc.host.size(); ++i) be.upload_into(sc.host[i], &sc.device[i]);
    const DeviceTensor xd = be.upload(g.xs), wdv = be.upload(g.ws), idv = be.upload(g.is);
    std::vector<const DeviceTensor*> in = {&xd, &wdv, &idv};
    for (const DeviceTensor& p : sc.device) in.push_back(&p);
    const tensor::Tensor y = glue::to_f32(be.download(r.run1(r.ops().at("moe_experts"), in)));
    for (size_t i = 0; i < g.rows.size(); ++i) {
      const float* yr = y.data_as<float>() + int64_t(i) * d;
      double* dst = &sum[size_t(g.rows[i] * d)];
      for (int64_t c = 0; c < d; ++c) dst[c] += double(yr[c]);
    }
    for (const int64_t e : chunk) slot[size_t(e)] = -1;
  }
  return be.upload(
      glue::to_dtype(tensor::Tensor::copy_of(tensor::DType::kF64, {t, d}, sum.data()), x.dtype()));
}

class RoutedExperts : public Block {
 public:
  const char* name() const override { return "routed_experts"; }
  BlockSlot slot() const override { return BlockSlot::kFeedForward; }
  bool runs(const TextModel& t, int64_t layer) const override { return t.is_moe_layer(layer); }
  const char* probe() const override { return "mlp"; }

  void weights(InventoryBuilder& b) const override {
    const Moe& m = b.text().moe;
    const int64_t h = b.text().hidden_size;
    b.add(b.named(TensorRole::kRouter), {m.num_experts, h}, TpSplit::kReplicated).tensor =
        TensorRole::kRouter;
    if (m.router_bias) b.bias(TensorRole::kRouter, m.num_experts, TpSplit::kReplicated);
    if (m.correction_bias) {
      WeightInfo& bias =
          b.add(b.named(TensorRole::kRouterBias), {m.num_experts}, TpSplit::kReplicated);
      bias.role = WeightRole::kBuffer;
      bias.dtype = tensor::DType::kF32;  // HF keeps the correction bias in f32
      bias.tensor = TensorRole::kRouterBias;
    }
    if (m.fused_experts) {
      fused_weights(b);
    } else {
      per_expert_weights(b);
    }
    shared_expert_weights(b);
  }

  void bind(const Architecture& arch, tensor::DType, BlockOps* ops) const override {
    const TextModel& t = arch.text;
    const Moe& m = t.moe;
    // GPT-OSS's clamped SwiGLU ignores hidden_act, as transformers does
    if (t.hidden_act != "silu" && m.swiglu_limit <= 0) {
      throw InputError(
          "config.json: hidden_act",
          "'" + t.hidden_act + "' with routed experts: moe_experts gates them by silu");
    }
    ops::Json experts = ops::Json::object();
    if (m.swiglu_limit > 0)
      experts = {
          {"activation", "clamped_swiglu"}, {"alpha", m.swiglu_alpha}, {"limit", m.swiglu_limit}};
    ops->add("moe_gate", bind_op("moe_gate", {{"top_k", m.experts_per_token},
                                              {"scoring", m.scoring},
                                              {"normalize", m.norm_topk_prob},
                                              {"n_group", m.n_group},
                                              {"topk_group", m.topk_group},
                                              {"routed_scaling_factor", m.routed_scaling_factor}}));
    ops->add("moe_experts", bind_op("moe_experts", experts));
    bind_shared_expert(arch, ops);
  }

  std::unique_ptr<BlockState> state(const Architecture&, int64_t) const override {
    return std::make_unique<ExpertScratch>();
  }

  DeviceTensor run(LayerRun& r, const DeviceTensor& h) const override {
    const Moe& m = r.arch().text.moe;
    // scaled_linear if a quantizer stored it fp8
    const DeviceTensor logits = r.linear(TensorRole::kRouter, h, m.router_bias);
    const DeviceTensor* bias = r.find(TensorRole::kRouterBias);
    const BoundOp& gate = r.ops().at("moe_gate");
    std::vector<DeviceTensor> routed = bias ? r.run(gate, {&logits, bias}) : r.run(gate, {&logits});
    const Sharding* sh = r.sharding();
    if (sh != nullptr && !sh->experts_split_by_tp)
      routed = local_routes(r.backend(), std::move(routed), sh->expert_begin, sh->expert_end);
    DeviceTensor y;
    if (const StoredExperts* stored = r.weights().stored_experts(r.layer())) {
      y = run_stored(r, *stored, h, routed);
    } else {
      const ExpertStack& e = r.weights().experts(r.layer());
      const BoundOp& op = r.ops().at("moe_experts");
      y = e.b_gate ? r.run1(op, {&h, &routed[0], &routed[1], &e.gate, &e.up, &e.down, &*e.b_gate,
                                 &*e.b_up, &*e.b_down})
                   : r.run1(op, {&h, &routed[0], &routed[1], &e.gate, &e.up, &e.down});
    }
    // Combine: under EP each token's experts ran on their ranks; under TP each expert's partial
    // sums.
    if (sh != nullptr) r.all_reduce(sh->experts_split_by_tp ? sh->tp.get() : sh->ep.get(), &y);
    return add_shared_expert(r, h, std::move(y));
  }

  std::string describe(const TextModel&, int64_t) const override { return "MoE"; }
};

}  // namespace

const Block& routed_experts_block() {
  static const RoutedExperts block;
  return block;
}

}  // namespace h0::model
