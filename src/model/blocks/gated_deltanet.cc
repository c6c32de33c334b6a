// Gated DeltaNet linear attention (transformers' Qwen3NextGatedDeltaNet; Qwen3-Next, Qwen3.5): the
// layers whose layer_types entry is linear_attention. Per token: q, k [num_k_heads, k_head_dim],
// v and the output gate z [num_v_heads, v_head_dim], b and a [num_v_heads]; a causal depthwise
// conv over the q|k|v channels, the gated delta rule, the gated RMSNorm of each value head's output
// by z, and out_proj. Per sequence it keeps a fixed-size state instead of a KV cache: the conv's
// last conv_kernel - 1 inputs and the recurrent state [num_v_heads, k_head_dim, v_head_dim].
// Config: LinearAttention (architecture.h), read by families/qwen3_next.cc.
#include <map>
#include <memory>

#include "base/error.h"
#include "base/text_format.h"
#include "model/config/block.h"
#include "model/exec/host_glue.h"
#include "model/exec/layer_run.h"
#include "model/weights/inventory_builder.h"

namespace h0::model {
namespace {

using backend::DeviceTensor;

// Qwen3-Next's fused in_proj_qkvz / in_proj_ba outputs (grouped per key head) regrouped as
// q|k|v (the conv's channels), z, b and a: the columns each takes, in order.
struct FusedColumns {
  std::vector<int64_t> qkv, z, b, a;
};

// transformers' fix_query_key_value_ordering: in_proj_qkvz's outputs are, per key head g,
// [q (Dk), k (Dk), v (r·Dv), z (r·Dv)] with r = Hv / Hk; in_proj_ba's [b (r), a (r)].
FusedColumns fused_columns(const LinearAttention& la) {
  const int64_t hk = la.num_k_heads, dk = la.k_head_dim, r = la.value_group(),
                rv = r * la.v_head_dim;
  const int64_t group = 2 * dk + 2 * rv;
  FusedColumns c;
  for (int64_t part : {0, 1}) {  // every key head's q, then every key head's k
    for (int64_t g = 0; g < hk; ++g) {
      for (int64_t i = 0; i < dk; ++i) c.qkv.push_back(g * group + part * dk + i);
    }
  }
  for (int64_t g = 0; g < hk; ++g) {
    for (int64_t i = 0; i < rv; ++i) c.qkv.push_back(g * group + 2 * dk + i);
    for (int64_t i = 0; i < rv; ++i) c.z.push_back(g * group + 2 * dk + rv + i);
    for (int64_t i = 0; i < r; ++i) c.b.push_back(g * 2 * r + i);
    for (int64_t i = 0; i < r; ++i) c.a.push_back(g * 2 * r + r + i);
  }
  return c;
}

// One executor's: this rank's heads (a tp rank holds num_k_heads / tp key heads and their value
// heads; the planner refuses a tp that does not divide them), the fused columns, and each
// sequence's state per layer — the conv's last K - 1 inputs [C, K - 1] (run dtype) and the
// recurrent state [Hv, Dk, Dv] (f32), zeros until its first step.
class DeltaNetState : public BlockState {
 public:
  struct Sequence {
    DeviceTensor conv, recurrent;
  };

  DeltaNetState(const LinearAttention& all, int64_t tp) : heads(all) {
    heads.num_k_heads /= tp;
    heads.num_v_heads /= tp;
    if (heads.fused_projections) fused = fused_columns(heads);
  }

  void free_sequence(int seq) override { states_.erase(seq); }

  Sequence& of(LayerRun& r, int seq) {
    auto& layers = states_[seq];
    auto it = layers.find(r.layer());
    if (it != layers.end()) return it->second;
    const LinearAttention& la = heads;
    Sequence st{
        r.backend().upload(tensor::Tensor::zeros(r.dtype(), {la.conv_dim(), la.conv_kernel - 1})),
        r.backend().upload(tensor::Tensor::zeros(tensor::DType::kF32,
                                                 {la.num_v_heads, la.k_head_dim, la.v_head_dim}))};
    return layers.emplace(r.layer(), std::move(st)).first->second;
  }

  LinearAttention heads;
  FusedColumns fused;

 private:
  std::map<int, std::map<int64_t, Sequence>> states_;  // by sequence, then layer
};

class GatedDeltaNet : public Block {
 public:
  const char* name() const override { return "gated_deltanet"; }
  BlockSlot slot() const override { return BlockSlot::kMixer; }
  bool runs(const TextModel& t, int64_t layer) const override {
    return t.layer_kind(layer) == TextModel::LayerKind::kLinear;
  }
  const char* probe() const override { return "linear_attn"; }

  // Tensor parallelism splits it by key-head group: Qwen3-Next's fused in_proj_qkvz holds, per key
  // head, q, k (k_head_dim each), then v and z of its value heads, so whole groups are its unit.
  // The conv's and in_proj_qkv's channels are q | k | v of all heads: three parts
  // (WeightInfo::tp_parts), each split by heads on its own.
  void weights(InventoryBuilder& b) const override {
    const LinearAttention& l = b.text().linear;
    const int64_t h = b.text().hidden_size, hk = l.num_k_heads, hv = l.num_v_heads,
                  r = l.value_group();
    const std::vector<WeightInfo::TpPart> qkv = {{hk * l.k_head_dim, l.k_head_dim},
                                                 {hk * l.k_head_dim, l.k_head_dim},
                                                 {hv * l.v_head_dim, r * l.v_head_dim}};
    if (l.fused_projections) {
      const int64_t group = 2 * l.k_head_dim + 2 * r * l.v_head_dim;
      b.proj(TensorRole::kLinQKVZ, hk * group, h, TpSplit::kColumn, group);
      b.proj(TensorRole::kLinBA, hk * 2 * r, h, TpSplit::kColumn, 2 * r);
    } else {
      b.proj(TensorRole::kLinQKV, l.conv_dim(), h, TpSplit::kColumn, 1, false, qkv);
      b.proj(TensorRole::kLinZ, hv * l.v_head_dim, h, TpSplit::kColumn, l.v_head_dim);
      b.proj(TensorRole::kLinB, hv, h, TpSplit::kColumn, 1);
      b.proj(TensorRole::kLinA, hv, h, TpSplit::kColumn, 1);
    }
    WeightInfo& conv =
        b.add(b.named(TensorRole::kLinConv), {l.conv_dim(), 1, l.conv_kernel}, TpSplit::kColumn);
    conv.tensor = TensorRole::kLinConv;
    conv.tp_parts = qkv;
    b.add(b.named(TensorRole::kLinDtBias), {hv}, TpSplit::kColumn).tensor = TensorRole::kLinDtBias;
    b.add(b.named(TensorRole::kLinALog), {hv}, TpSplit::kColumn).tensor = TensorRole::kLinALog;
    b.norm(TensorRole::kLinNorm, l.v_head_dim);
    b.proj(TensorRole::kLinOut, h, hv * l.v_head_dim, TpSplit::kRow, l.v_head_dim);
  }

  // The depthwise conv1d is stored [C, 1, K]; causal_conv1d takes w [C, K].
  tensor::Tensor op_layout(TensorRole role, tensor::Tensor t) const override {
    if (role == TensorRole::kLinConv && t.shape().size() == 3)
      return t.reshape({t.dim(0), t.dim(2)});
    return t;
  }

  void bind(const Architecture& arch, tensor::DType dtype, BlockOps* ops) const override {
    const TextModel& t = arch.text;
    if (t.hidden_act != "silu") {
      throw InputError(
          "config.json: hidden_act",
          "'" + t.hidden_act + "' in Gated DeltaNet layers: causal_conv1d runs silu or none");
    }
    ops->add("gdn_conv", bind_op("causal_conv1d", {{"activation", "silu"}}));
    ops->add("gdn_gating", bind_op("gdn_gating"));
    ops->add("gdn_rule", bind_op("gated_delta_rule",
                                 {{"l2norm_qk", true}, {"l2norm_eps", 1e-6}}));  // its l2norm's eps
    ops->add("gdn_norm", bind_op("rmsnorm_gated", {{"eps", t.rms_norm_eps}}));
  }

  std::unique_ptr<BlockState> state(const Architecture& arch, int64_t tp) const override {
    return std::make_unique<DeltaNetState>(arch.text.linear, tp);
  }

  std::string describe(const TextModel&, int64_t) const override { return "linear attention"; }
  // Split by key-head group (weights above).
  std::string tp_issue(const TextModel& t, int64_t tp) const override {
    const LinearAttention& l = t.linear;
    if (l.num_v_heads <= 0 || l.num_k_heads % tp == 0) return "";
    return "linear_num_key_heads " + std::to_string(l.num_k_heads) + " is not divisible by tp " +
           std::to_string(tp) + " (the linear-attention layers split by key-head group)";
  }
  bool keeps_state() const override { return true; }
  // The conv window in the activation dtype and the recurrent state in f32 (0 for a family not
  // modelled: its state's size is not read).
  int64_t state_bytes(const TextModel& t, int64_t tp, int64_t act_bytes) const override {
    const LinearAttention& l = t.linear;
    if (l.num_v_heads == 0) return 0;
    return l.conv_state_bytes(tp, act_bytes) + l.recurrent_state_bytes(tp);
  }
  void plan_notes(const TextModel& t, const PlanFacts& p,
                  std::vector<std::string>* notes) const override {
    const LinearAttention& l = t.linear;
    if (l.num_v_heads == 0) {
      notes->push_back(std::to_string(p.layers) +
                       " linear-attention layers hold a fixed-size state per sequence (not "
                       "counted: the family is not modelled)");
      return;
    }
    notes->push_back(std::to_string(p.layers) + " of " + std::to_string(p.num_layers) +
                     " layers are linear attention: no KV, a state per sequence of " +
                     with_commas(l.conv_state_bytes(p.tp, p.act_bytes)) + " conv + " +
                     with_commas(l.recurrent_state_bytes(p.tp)) +
                     " recurrent (f32) bytes per layer and rank, held for " +
                     std::to_string(p.sequences) + " concurrent sequence" +
                     (p.sequences == 1 ? "" : "s") + (p.dp > 1 ? " per replica" : ""));
  }

  // The input projections (Qwen3-Next's fused ones regrouped on the host), the gating g and beta,
  // then per sequence the causal conv over q|k|v and the gated delta rule, each from and into that
  // sequence's state; the gated RMSNorm by z, and out_proj. Under TP a rank runs its key heads and
  // their value heads (its share of in_proj_qkvz, or of each q|k|v part of in_proj_qkv and the
  // conv), and out_proj is row-parallel.
  DeviceTensor run(LayerRun& r, const DeviceTensor& h) const override {
    auto& st = static_cast<DeltaNetState&>(r.state());
    const LinearAttention& la = st.heads;  // this rank's heads
    const int64_t T = r.tokens(), hv = la.num_v_heads, dv = la.v_head_dim;
    backend::Backend& be = r.backend();
    DeviceTensor qkv, z, b, a;
    if (la.fused_projections) {
      const tensor::Tensor qkvz = be.download(r.linear(TensorRole::kLinQKVZ, h));
      const tensor::Tensor ba = be.download(r.linear(TensorRole::kLinBA, h));
      qkv = be.upload(glue::gather_columns(qkvz, st.fused.qkv));
      z = be.upload(glue::gather_columns(qkvz, st.fused.z));
      b = be.upload(glue::gather_columns(ba, st.fused.b));
      a = be.upload(glue::gather_columns(ba, st.fused.a));
    } else {
      qkv = r.linear(TensorRole::kLinQKV, h);
      z = r.linear(TensorRole::kLinZ, h);
      b = r.linear(TensorRole::kLinB, h);
      a = r.linear(TensorRole::kLinA, h);
    }
    std::vector<DeviceTensor> gating =
        r.run(r.ops().at("gdn_gating"),
              {&a, &b, &r.weight(TensorRole::kLinALog), &r.weight(TensorRole::kLinDtBias)});
    tensor::Tensor core = recurrence(r, st, std::move(qkv), std::move(gating));
    DeviceTensor o = be.upload(core.reshape({T * hv, dv}));
    z.reshape({T * hv, dv});
    o = r.run1(r.ops().at("gdn_norm"), {&o, &r.weight(TensorRole::kLinNorm), &z});
    o.reshape({T, hv * dv});
    return r.row_parallel(TensorRole::kLinOut, o);
  }

 private:
  // Per sequence: the conv over its rows of q|k|v and the delta rule from and into its state.
  // Returns the rule's output [T, Hv, Dv] (run dtype, host).
  static tensor::Tensor recurrence(LayerRun& r, DeltaNetState& st, DeviceTensor qkv,
                                   std::vector<DeviceTensor> gating) {
    const LinearAttention& la = st.heads;
    const int64_t hk = la.num_k_heads, hv = la.num_v_heads, dk = la.k_head_dim, dv = la.v_head_dim,
                  key_dim = hk * dk;
    backend::Backend& be = r.backend();
    const DeviceTensor& conv_w = r.weight(TensorRole::kLinConv);  // [C, K]
    const bool one = r.sequences().size() == 1;
    tensor::Tensor qkv_host, g_host, beta_host;
    if (!one) {
      qkv_host = be.download(qkv);
      g_host = be.download(gating[0]);
      beta_host = be.download(gating[1]);
    }
    const auto rows = [&](const tensor::Tensor& t, const LayerRun::Rows& s) {
      return be.upload(t.slice_rows(s.row, s.row + s.tokens));
    };
    tensor::Tensor core = tensor::Tensor::zeros(r.dtype(), {r.tokens(), hv, dv});
    for (const LayerRun::Rows& s : r.sequences()) {
      DeltaNetState::Sequence& seq = st.of(r, s.seq);
      const DeviceTensor x = one ? std::move(qkv) : rows(qkv_host, s);
      std::vector<DeviceTensor> conv = r.run(r.ops().at("gdn_conv"), {&x, &conv_w, &seq.conv});
      seq.conv = std::move(conv[1]);
      auto [qk, v] = glue::split_last(be.download(conv[0]), 2 * key_dim);
      auto [q, k] = glue::split_last(qk, key_dim);
      const DeviceTensor qd = be.upload(q.reshape({s.tokens, hk, dk})),
                         kd = be.upload(k.reshape({s.tokens, hk, dk})),
                         vd = be.upload(v.reshape({s.tokens, hv, dv}));
      const DeviceTensor g = one ? std::move(gating[0]) : rows(g_host, s),
                         beta = one ? std::move(gating[1]) : rows(beta_host, s);
      std::vector<DeviceTensor> out =
          r.run(r.ops().at("gdn_rule"), {&qd, &kd, &vd, &g, &beta, &seq.recurrent});
      seq.recurrent = std::move(out[1]);
      tensor::Tensor dst = core.slice_rows(s.row, s.row + s.tokens);
      be.download(out[0], &dst);
    }
    return core;
  }
};

}  // namespace

const Block& gated_deltanet_block() {
  static const GatedDeltaNet block;
  return block;
}

}  // namespace h0::model
