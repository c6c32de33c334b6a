#include "model/inventory.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace h0::model {
namespace {

using tensor::DType;

// Appends weights in checkpoint order; one method per building block of the families.
class InventoryBuilder {
 public:
  InventoryBuilder(const Architecture& arch, const InventoryOptions& options)
      : arch_(arch),
        t_(arch.text),
        quant_(options.quantized && arch.quantization.method == "fp8"),
        mxfp4_(options.quantized && arch.quantization.method == "mxfp4") {
    dtype_ = options.dtype ? *options.dtype : t_.dtype.value_or(DType::kBF16);
  }

  std::vector<WeightInfo> take() { return std::move(out_); }

  void embedding(const std::string& prefix, TensorRole role = TensorRole::kEmbed) {
    add(prefix + "embed_tokens.weight", {t_.vocab_size, t_.hidden_size}, TpSplit::kVocab).tensor =
        role;
  }
  void final_norm_and_head() {
    layer_ = t_.num_layers;
    norm(t_.prefix + "norm.weight", t_.hidden_size, TensorRole::kFinalNorm);
    if (!t_.tie_word_embeddings) {
      add(t_.head_prefix + "weight", {t_.vocab_size, t_.hidden_size}, TpSplit::kVocab).tensor =
          TensorRole::kHead;
    }
  }

  void decoder_layer(int64_t layer, const std::string& p) {
    layer_ = layer;
    prefix_ = p;
    norm(TensorRole::kAttnNorm, t_.hidden_size);
    if (t_.layer_kind(layer) == TextModel::LayerKind::kLinear) {
      linear_attention();
    } else if (t_.attn.mla) {
      mla_attention();
    } else {
      gqa_attention();
    }
    if (t_.sandwich_norms) norm(TensorRole::kAttnPostNorm, t_.hidden_size);
    norm(TensorRole::kFfnNorm, t_.hidden_size);
    if (t_.is_moe_layer(layer)) {
      moe();
    } else {
      mlp(t_.intermediate_size, TensorRole::kFfnGate);
    }
    if (t_.sandwich_norms) norm(TensorRole::kFfnPostNorm, t_.hidden_size);
  }

  // DeepSeek-V3's multi-token-prediction layer as released checkpoints hold it.
  void mtp_layer(int64_t layer) {
    mtp_ = true;
    const std::string p = t_.prefix + "layers." + std::to_string(layer) + ".";
    embedding(p, TensorRole::kOther);
    norm(p + "enorm.weight", t_.hidden_size);
    norm(p + "hnorm.weight", t_.hidden_size);
    add(p + "eh_proj.weight", {t_.hidden_size, 2 * t_.hidden_size}, TpSplit::kReplicated);
    decoder_layer(layer, p);
    layer_ = layer;
    norm(p + "shared_head.norm.weight", t_.hidden_size);
    add(p + "shared_head.head.weight", {t_.vocab_size, t_.hidden_size}, TpSplit::kVocab);
    mtp_ = false;
  }

  // In checkpoint order; every weight by its vision role (Vision::names), replicated.
  void vision_tower(const Vision& v) {
    layer_ = -1;
    const auto vis = [&](TensorRole role, TensorPiece piece, std::vector<int64_t> shape,
                         int64_t layer) {
      WeightInfo& w = add(v.name(role, piece, layer), std::move(shape), TpSplit::kReplicated);
      w.tensor = role;
      w.piece = piece;
      w.vision_layer = layer;
    };
    const auto layer_norm = [&](TensorRole role, int64_t layer) {
      vis(role, TensorPiece::kWeight, {v.hidden_size}, layer);
      vis(role, TensorPiece::kBias, {v.hidden_size}, layer);
    };
    const auto linear = [&](TensorRole role, int64_t out, int64_t in, bool bias, int64_t layer) {
      vis(role, TensorPiece::kWeight, {out, in}, layer);
      if (bias) vis(role, TensorPiece::kBias, {out}, layer);
    };
    if (v.qwen()) {  // Qwen2.5-VL: Conv3d patch embedding (no bias), RMSNorm blocks, the merger
      const int64_t D = v.hidden_size, merged = D * v.spatial_merge_size * v.spatial_merge_size;
      vis(TensorRole::kVisPatchEmbed, TensorPiece::kWeight,
          {D, v.num_channels, v.temporal_patch_size, v.patch_size, v.patch_size}, -1);
      for (int64_t i = 0; i < v.num_layers; ++i) {
        vis(TensorRole::kVisNorm1, TensorPiece::kWeight, {D}, i);
        vis(TensorRole::kVisNorm2, TensorPiece::kWeight, {D}, i);
        linear(TensorRole::kVisAttnQKV, 3 * D, D, true, i);
        linear(TensorRole::kVisAttnO, D, D, true, i);
        linear(TensorRole::kVisFfnGate, v.intermediate_size, D, true, i);
        linear(TensorRole::kVisFfnUp, v.intermediate_size, D, true, i);
        linear(TensorRole::kVisFfnDown, D, v.intermediate_size, true, i);
      }
      vis(TensorRole::kVisMergerNorm, TensorPiece::kWeight, {D}, -1);
      linear(TensorRole::kVisMerger1, merged, merged, true, -1);
      linear(TensorRole::kVisMerger2, v.out_hidden_size, merged, true, -1);
      return;
    }
    vis(TensorRole::kVisClassEmbed, TensorPiece::kWeight, {v.hidden_size}, -1);
    vis(TensorRole::kVisPatchEmbed, TensorPiece::kWeight,
        {v.hidden_size, v.num_channels, v.patch_size, v.patch_size}, -1);
    vis(TensorRole::kVisPosEmbed, TensorPiece::kWeight, {v.num_patches() + 1, v.hidden_size}, -1);
    layer_norm(TensorRole::kVisPreNorm, -1);
    for (int64_t i = 0; i < v.num_layers; ++i) {
      for (const TensorRole proj : {TensorRole::kVisAttnK, TensorRole::kVisAttnV,
                                    TensorRole::kVisAttnQ, TensorRole::kVisAttnO}) {
        linear(proj, v.hidden_size, v.hidden_size, true, i);
      }
      layer_norm(TensorRole::kVisNorm1, i);
      linear(TensorRole::kVisFc1, v.intermediate_size, v.hidden_size, true, i);
      linear(TensorRole::kVisFc2, v.hidden_size, v.intermediate_size, true, i);
      layer_norm(TensorRole::kVisNorm2, i);
    }
    layer_norm(TensorRole::kVisPostNorm, -1);
    linear(TensorRole::kProjector1, t_.hidden_size, v.hidden_size, v.projector_bias, -1);
    linear(TensorRole::kProjector2, t_.hidden_size, t_.hidden_size, v.projector_bias, -1);
  }

 private:
  WeightInfo& add(const std::string& name, std::vector<int64_t> shape, TpSplit tp,
                  int64_t unit = 1) {
    WeightInfo w;
    w.name = name;
    w.shape = std::move(shape);
    w.dtype = dtype_;
    w.tp = tp;
    w.tp_unit = unit;
    w.layer = layer_;
    w.expert = expert_;
    w.mtp = mtp_;
    out_.push_back(std::move(w));
    return out_.back();
  }
  void norm(const std::string& name, int64_t n, TensorRole role = TensorRole::kOther) {
    add(name, {n}, TpSplit::kReplicated).tensor = role;
  }

  // The name of `role`'s `piece` in the current decoder layer (the family's table).
  std::string named(TensorRole role, TensorPiece piece = TensorPiece::kWeight) const {
    return t_.names->name(prefix_, role, piece, expert_);
  }
  void norm(TensorRole role, int64_t n) { norm(named(role), n, role); }

  // A decoder-layer projection [out, in]: quantized when the checkpoint is, with its scales.
  // `parts`: its WeightInfo::tp_parts (the weight's, not its scales').
  void proj(TensorRole role, int64_t out, int64_t in, TpSplit tp, int64_t unit,
            bool kv_heads = false, std::vector<WeightInfo::TpPart> parts = {}) {
    WeightInfo& w = add(named(role), {out, in}, tp, unit);
    w.kv_heads = kv_heads;
    w.tensor = role;
    w.tp_parts = std::move(parts);
    if (!quant_) return;
    w.dtype = DType::kF8E4M3;
    w.quantized = true;
    const int64_t br = arch_.quantization.block_rows, bc = arch_.quantization.block_cols;
    const int64_t scale_unit = tp == TpSplit::kColumn ? std::max<int64_t>(1, unit / br) : 1;
    WeightInfo& s = add(named(role, TensorPiece::kScale), {(out + br - 1) / br, (in + bc - 1) / bc},
                        tp, scale_unit);
    s.dtype = DType::kF32;
    s.role = WeightRole::kQuantScale;
    s.kv_heads = kv_heads;
    s.tensor = role;
    s.piece = TensorPiece::kScale;
  }
  // The bias of role `role` (after its weight).
  WeightInfo& bias(TensorRole role, int64_t n, TpSplit tp, int64_t unit = 1) {
    WeightInfo& b = add(named(role, TensorPiece::kBias), {n}, tp, unit);
    b.tensor = role;
    b.piece = TensorPiece::kBias;
    return b;
  }

  void gqa_attention() {
    const Attention& a = t_.attn;
    const int64_t hd = a.head_dim, h = t_.hidden_size;
    const int64_t q_width =
        a.output_gate ? 2 * hd : hd;  // an output gate: query then gate, per head
    proj(TensorRole::kAttnQ, a.num_heads * q_width, h, TpSplit::kColumn, q_width);
    if (a.qkv_bias) bias(TensorRole::kAttnQ, a.num_heads * q_width, TpSplit::kColumn, q_width);
    for (const TensorRole role : {TensorRole::kAttnK, TensorRole::kAttnV}) {
      proj(role, a.num_kv_heads * hd, h, TpSplit::kColumn, hd, true);
      if (a.qkv_bias) bias(role, a.num_kv_heads * hd, TpSplit::kColumn, hd).kv_heads = true;
    }
    proj(TensorRole::kAttnO, h, a.num_heads * hd, TpSplit::kRow, hd);
    if (a.o_bias) bias(TensorRole::kAttnO, h, TpSplit::kReplicated);
    if (a.qk_norm) {
      norm(TensorRole::kAttnQNorm, hd);
      norm(TensorRole::kAttnKNorm, hd);
    }
    if (a.sinks)
      add(named(TensorRole::kAttnSinks), {a.num_heads}, TpSplit::kColumn).tensor =
          TensorRole::kAttnSinks;
  }

  // Multi-head latent attention: the low-rank down projections and their norms are replicated;
  // the up projections split by heads.
  void mla_attention() {
    const Attention& a = t_.attn;
    const int64_t h = t_.hidden_size, qk = a.qk_head_dim();
    if (a.q_lora_rank > 0) {
      proj(TensorRole::kAttnQA, a.q_lora_rank, h, TpSplit::kReplicated, 1);
      norm(TensorRole::kAttnQANorm, a.q_lora_rank);
      proj(TensorRole::kAttnQB, a.num_heads * qk, a.q_lora_rank, TpSplit::kColumn, qk);
    } else {
      proj(TensorRole::kAttnQ, a.num_heads * qk, h, TpSplit::kColumn, qk);
    }
    proj(TensorRole::kAttnKVA, a.kv_lora_rank + a.qk_rope_head_dim, h, TpSplit::kReplicated, 1);
    norm(TensorRole::kAttnKVANorm, a.kv_lora_rank);
    const int64_t kv_b = a.qk_nope_head_dim + a.v_head_dim;
    proj(TensorRole::kAttnKVB, a.num_heads * kv_b, a.kv_lora_rank, TpSplit::kColumn, kv_b);
    proj(TensorRole::kAttnO, h, a.num_heads * a.v_head_dim, TpSplit::kRow, a.v_head_dim);
    if (t_.indexer.n_heads > 0) indexer();
  }

  // DeepSeek-V3.2's lightning indexer: small, and held whole by every rank (as vLLM's
  // ReplicatedLinear); its key LayerNorm has a bias.
  void indexer() {
    const Indexer& x = t_.indexer;
    const int64_t h = t_.hidden_size;
    proj(TensorRole::kIdxQB, x.n_heads * x.head_dim, t_.attn.q_lora_rank, TpSplit::kReplicated, 1);
    proj(TensorRole::kIdxK, x.head_dim, h, TpSplit::kReplicated, 1);
    norm(TensorRole::kIdxKNorm, x.head_dim);
    bias(TensorRole::kIdxKNorm, x.head_dim, TpSplit::kReplicated);
    add(named(TensorRole::kIdxWeights), {x.n_heads, h}, TpSplit::kReplicated).tensor =
        TensorRole::kIdxWeights;
  }

  // Gated DeltaNet. Tensor parallelism splits it by key-head group: Qwen3-Next's fused
  // in_proj_qkvz holds, per key head, q, k (k_head_dim each), then v and z of its value heads,
  // so whole groups are its unit. The conv's and in_proj_qkv's channels are q | k | v of all heads:
  // three parts (WeightInfo::tp_parts), each split by heads on its own.
  void linear_attention() {
    const LinearAttention& l = t_.linear;
    const int64_t h = t_.hidden_size, hk = l.num_k_heads, hv = l.num_v_heads, r = l.value_group();
    const std::vector<WeightInfo::TpPart> qkv = {{hk * l.k_head_dim, l.k_head_dim},
                                                 {hk * l.k_head_dim, l.k_head_dim},
                                                 {hv * l.v_head_dim, r * l.v_head_dim}};
    if (l.fused_projections) {
      const int64_t group = 2 * l.k_head_dim + 2 * r * l.v_head_dim;
      proj(TensorRole::kLinQKVZ, hk * group, h, TpSplit::kColumn, group);
      proj(TensorRole::kLinBA, hk * 2 * r, h, TpSplit::kColumn, 2 * r);
    } else {
      proj(TensorRole::kLinQKV, l.conv_dim(), h, TpSplit::kColumn, 1, false, qkv);
      proj(TensorRole::kLinZ, hv * l.v_head_dim, h, TpSplit::kColumn, l.v_head_dim);
      proj(TensorRole::kLinB, hv, h, TpSplit::kColumn, 1);
      proj(TensorRole::kLinA, hv, h, TpSplit::kColumn, 1);
    }
    WeightInfo& conv =
        add(named(TensorRole::kLinConv), {l.conv_dim(), 1, l.conv_kernel}, TpSplit::kColumn);
    conv.tensor = TensorRole::kLinConv;
    conv.tp_parts = qkv;
    add(named(TensorRole::kLinDtBias), {hv}, TpSplit::kColumn).tensor = TensorRole::kLinDtBias;
    add(named(TensorRole::kLinALog), {hv}, TpSplit::kColumn).tensor = TensorRole::kLinALog;
    norm(TensorRole::kLinNorm, l.v_head_dim);
    proj(TensorRole::kLinOut, h, hv * l.v_head_dim, TpSplit::kRow, l.v_head_dim);
  }

  static_assert(uint8_t(TensorRole::kFfnDown) == uint8_t(TensorRole::kFfnGate) + 2 &&
                uint8_t(TensorRole::kSharedDown) == uint8_t(TensorRole::kSharedGate) + 2);
  // A dense MLP; `gate` is kFfnGate (the layer's MLP) or kSharedGate (shared experts), and up and
  // down are the roles after it.
  void mlp(int64_t inter, TensorRole gate) {
    const int64_t h = t_.hidden_size;
    const auto up = TensorRole(uint8_t(gate) + 1), down = TensorRole(uint8_t(gate) + 2);
    proj(gate, inter, h, TpSplit::kColumn, 1);
    if (t_.mlp_bias) bias(gate, inter, TpSplit::kColumn);
    proj(up, inter, h, TpSplit::kColumn, 1);
    if (t_.mlp_bias) bias(up, inter, TpSplit::kColumn);
    proj(down, h, inter, TpSplit::kRow, 1);
    if (t_.mlp_bias) bias(down, h, TpSplit::kReplicated);
  }

  void moe() {
    const Moe& m = t_.moe;
    const int64_t h = t_.hidden_size, inter = m.expert_intermediate_size;
    add(named(TensorRole::kRouter), {m.num_experts, h}, TpSplit::kReplicated).tensor =
        TensorRole::kRouter;
    if (m.router_bias) bias(TensorRole::kRouter, m.num_experts, TpSplit::kReplicated);
    if (m.correction_bias) {
      WeightInfo& b = add(named(TensorRole::kRouterBias), {m.num_experts}, TpSplit::kReplicated);
      b.role = WeightRole::kBuffer;
      b.dtype = DType::kF32;  // HF keeps the correction bias in f32
      b.tensor = TensorRole::kRouterBias;
    }
    if (m.fused_experts) {
      fused_experts();
    } else {
      for (expert_ = 0; expert_ < m.num_experts; ++expert_) {
        proj(TensorRole::kExpertGate, inter, h, TpSplit::kColumn, 1);
        proj(TensorRole::kExpertUp, inter, h, TpSplit::kColumn, 1);
        proj(TensorRole::kExpertDown, h, inter, TpSplit::kRow, 1);
      }
      expert_ = -1;
    }
    if (m.num_shared_experts > 0) mlp(m.shared_inter(), TensorRole::kSharedGate);
    if (m.shared_expert_gate)
      add(named(TensorRole::kSharedExpertGate), {1, h}, TpSplit::kReplicated).tensor =
          TensorRole::kSharedExpertGate;
  }

  // GPT-OSS: gate_up [E, D, 2F] (gate/up interleaved: TP cuts whole pairs) with bias [E, 2F],
  // down [E, F, D] with bias [E, D] (replicated: under TP only the first rank adds it).
  void fused_experts() {
    const Moe& m = t_.moe;
    const int64_t e = m.num_experts, h = t_.hidden_size, f = m.expert_intermediate_size;
    const auto fused = [&](TensorRole role, TensorPiece piece, std::vector<int64_t> shape,
                           TpSplit tp, int axis, int64_t unit) {
      WeightInfo& w = add(named(role, piece), std::move(shape), tp, unit);
      w.tensor = role;
      w.piece = piece;
      w.all_experts = true;
      w.tp_axis = axis;
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
      fused(role, TensorPiece::kBlocks, {e, out, in / 32, 16}, tp, axis, unit);
      out_.back().dtype = DType::kU8;
      out_.back().quantized = true;
      fused(role, TensorPiece::kScale, {e, out, in / 32}, tp, axis, unit);
      out_.back().dtype = DType::kU8;
      out_.back().role = WeightRole::kQuantScale;
    };
    if (mxfp4_) {
      packed(TensorRole::kExpertsGateUp, 2 * f, h, TpSplit::kColumn, 1, 2);
    } else {
      fused(TensorRole::kExpertsGateUp, TensorPiece::kWeight, {e, h, 2 * f}, TpSplit::kColumn, 2,
            2);
    }
    fused(TensorRole::kExpertsGateUp, TensorPiece::kBias, {e, 2 * f}, TpSplit::kColumn, 1, 2);
    if (mxfp4_) {
      packed(TensorRole::kExpertsDown, h, f, TpSplit::kRow, 2, 1);
    } else {
      fused(TensorRole::kExpertsDown, TensorPiece::kWeight, {e, f, h}, TpSplit::kRow, 1, 1);
    }
    fused(TensorRole::kExpertsDown, TensorPiece::kBias, {e, h}, TpSplit::kReplicated, -1, 1);
  }

  const Architecture& arch_;
  const TextModel& t_;
  bool quant_;
  bool mxfp4_;  // quantization_config mxfp4: the fused experts' weights as blocks + E8M0 scales
  DType dtype_;
  std::vector<WeightInfo> out_;
  int64_t layer_ = -1, expert_ = -1;
  std::string prefix_;  // the current decoder layer's, e.g. "model.layers.3."
  bool mtp_ = false;
};

// Parameters: an MXFP4 byte (WeightInfo kBlocks, u8) holds two.
int64_t elements(const WeightInfo& w) {
  return w.piece == TensorPiece::kBlocks ? 2 * w.numel() : w.numel();
}

ParamCounts count(const Architecture& arch, const std::vector<WeightInfo>& weights) {
  ParamCounts c;
  int64_t routed = 0;
  for (const WeightInfo& w : weights) {
    if (w.role == WeightRole::kQuantScale) continue;
    if (w.mtp) {
      const bool shared = w.name.find("embed_tokens") != std::string::npos ||
                          w.name.find("shared_head.head") != std::string::npos;
      (shared ? c.mtp_shared : c.mtp) += elements(w);
      continue;
    }
    if (w.role == WeightRole::kBuffer) {
      c.buffers += elements(w);
      continue;
    }
    c.total += elements(w);
    if (w.expert >= 0 || w.all_experts) routed += elements(w);
    if (is_vision_role(w.tensor)) c.vision += elements(w);
  }
  const Moe& m = arch.text.moe;
  // Routed experts are identical in size: a token uses experts_per_token of num_experts.
  c.active =
      m.num_experts > 0 ? c.total - routed + routed / m.num_experts * m.experts_per_token : c.total;
  return c;
}

}  // namespace

const char* tp_split_name(TpSplit split) {
  switch (split) {
    case TpSplit::kReplicated:
      return "replicated";
    case TpSplit::kColumn:
      return "column";
    case TpSplit::kRow:
      return "row";
    case TpSplit::kVocab:
      return "vocab";
  }
  return "?";
}

int64_t WeightInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const WeightInfo* Inventory::find(int64_t layer, TensorRole tensor, TensorPiece piece,
                                  int64_t expert) const {
  for (const WeightInfo& w : weights) {
    if (w.layer == layer && w.tensor == tensor && w.piece == piece && w.expert == expert && !w.mtp)
      return &w;
  }
  return nullptr;
}

const WeightInfo* Inventory::find(const std::string& name) const {
  for (const WeightInfo& w : weights) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

void require_whole_blocks(const std::string& name, int64_t parts, int64_t begin, int64_t end,
                          int64_t dim, int64_t block) {
  if (block > 1 && (begin % block != 0 || (end % block != 0 && end != dim))) {
    throw InputError("tp " + std::to_string(parts),
                     name + ": rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                         ") of this rank cut through its " + std::to_string(block) +
                         "-wide quantization blocks (the per-rank part must be whole blocks)");
  }
}

Inventory build_inventory(const Architecture& arch, const InventoryOptions& options) {
  InventoryBuilder b(arch, options);
  const TextModel& t = arch.text;
  if (arch.vision) b.vision_tower(*arch.vision);
  b.embedding(t.prefix);
  for (int64_t i = 0; i < t.num_layers; ++i)
    b.decoder_layer(i, t.prefix + "layers." + std::to_string(i) + ".");
  b.final_norm_and_head();
  if (options.include_mtp) {
    for (int64_t i = 0; i < t.num_nextn_predict_layers; ++i) b.mtp_layer(t.num_layers + i);
  }
  Inventory inv;
  inv.weights = b.take();
  inv.counts = count(arch, inv.weights);
  if (arch.quantization.method == "fp8") {
    inv.block_rows = arch.quantization.block_rows;
    inv.block_cols = arch.quantization.block_cols;
  }
  return inv;
}

}  // namespace h0::model
