// Multi-head latent attention (transformers' DeepseekV3Attention; DeepSeek-V2/V3, Kimi-K2,
// DeepSeek-V3.2 with its lightning indexer): q through the q_a/q_b low-rank pair (or directly), the
// latent kv through kv_a (with the shared rotary key) and kv_b; RoPE only on the rotary dims
// (interleaved); keys and values cached per head, expanded from the latent. The low-rank down
// projections and their norms are replicated under TP; the up projections split by heads. Config:
// Attention's MLA fields (architecture.h), read by families/deepseek_v3.cc.
#include <cmath>
#include <optional>

#include "model/blocks/lightning_indexer.h"
#include "model/exec/host_glue.h"

namespace h0::model {
namespace {

using backend::DeviceTensor;

class Mla : public Block {
 public:
  const char* name() const override { return "mla"; }
  BlockSlot slot() const override { return BlockSlot::kMixer; }
  bool runs(const TextModel& t, int64_t layer) const override {
    return t.attn.mla && t.layer_kind(layer) != TextModel::LayerKind::kLinear;
  }
  const char* probe() const override { return "self_attn"; }

  void weights(InventoryBuilder& b) const override {
    const Attention& a = b.text().attn;
    const int64_t h = b.text().hidden_size, qk = a.qk_head_dim();
    // attention_bias (Attention::qkv_bias / o_bias) puts a bias on q_a, kv_a and o only.
    if (a.q_lora_rank > 0) {
      b.proj(TensorRole::kAttnQA, a.q_lora_rank, h, TpSplit::kReplicated, 1);
      if (a.qkv_bias) b.bias(TensorRole::kAttnQA, a.q_lora_rank, TpSplit::kReplicated);
      b.norm(TensorRole::kAttnQANorm, a.q_lora_rank);
      b.proj(TensorRole::kAttnQB, a.num_heads * qk, a.q_lora_rank, TpSplit::kColumn, qk);
    } else {
      b.proj(TensorRole::kAttnQ, a.num_heads * qk, h, TpSplit::kColumn, qk);
    }
    const int64_t kv_a = a.kv_lora_rank + a.qk_rope_head_dim;
    b.proj(TensorRole::kAttnKVA, kv_a, h, TpSplit::kReplicated, 1);
    if (a.qkv_bias) b.bias(TensorRole::kAttnKVA, kv_a, TpSplit::kReplicated);
    b.norm(TensorRole::kAttnKVANorm, a.kv_lora_rank);
    const int64_t kv_b = a.qk_nope_head_dim + a.v_head_dim;
    b.proj(TensorRole::kAttnKVB, a.num_heads * kv_b, a.kv_lora_rank, TpSplit::kColumn, kv_b);
    b.proj(TensorRole::kAttnO, h, a.num_heads * a.v_head_dim, TpSplit::kRow, a.v_head_dim);
    if (a.o_bias) b.bias(TensorRole::kAttnO, h, TpSplit::kReplicated);
    indexer_weights(b);
  }

  void bind(const Architecture& arch, tensor::DType, BlockOps* ops) const override {
    const TextModel& t = arch.text;
    ops->add("rope", bind_op("rope", {{"theta", t.rope_theta},
                                      {"style", "gptj"},
                                      {"scaling", t.rope_scaling_json}}));
    // The q and kv latents' RMSNorms at transformers' DeepseekV3RMSNorm default, whatever
    // rms_norm_eps says (GLM-4.7-Flash's 1e-5 is the decoder norms' only).
    ops->add("latent_norm", bind_op("rmsnorm", {{"eps", 1e-6}}));
    bind_indexer(arch, ops);
  }

  void bind_context(const Architecture& arch, const ops::Json& context,
                    BlockOps* ops) const override {
    if (arch.text.indexer.n_heads <= 0) ops->add("attention", bind_op("paged_attention", context));
    bind_indexer_context(arch, context, ops);
  }

  DeviceTensor run(LayerRun& r, const DeviceTensor& h) const override {
    const TextModel& t = r.arch().text;
    const Attention& at = t.attn;
    const int64_t T = r.tokens(), nope = at.qk_nope_head_dim, rot = at.qk_rope_head_dim;
    const int64_t H = r.sharding() ? r.sharding()->heads : at.num_heads;
    backend::Backend& be = r.backend();
    const BoundOp& norm = r.ops().at("latent_norm");
    DeviceTensor q, qa;  // qa: the q latent (q_lora_rank > 0)
    if (at.q_lora_rank > 0) {
      qa = r.linear(TensorRole::kAttnQA, h);
      qa = r.run1(norm, {&qa, &r.weight(TensorRole::kAttnQANorm)});
      q = r.linear(TensorRole::kAttnQB, qa);
    } else {
      q = r.linear(TensorRole::kAttnQ, h);
    }
    auto [q_nope, q_rot] = glue::split_last(be.download(q).reshape({T, H, nope + rot}), nope);
    auto [latent, k_rot] =
        glue::split_last(be.download(r.linear(TensorRole::kAttnKVA, h)), at.kv_lora_rank);
    DeviceTensor c = be.upload(latent);
    c = r.run1(norm, {&c, &r.weight(TensorRole::kAttnKVANorm)});
    auto [k_nope, value] = glue::split_last(
        be.download(r.linear(TensorRole::kAttnKVB, c)).reshape({T, H, nope + at.v_head_dim}), nope);

    const BoundOp& rope = r.ops().at("rope");
    DeviceTensor q_rot_dev = be.upload(q_rot), k_rot_dev = be.upload(k_rot.reshape({T, 1, rot}));
    q_rot_dev = r.run1(rope, {&q_rot_dev, &r.positions()});
    k_rot_dev = r.run1(rope, {&k_rot_dev, &r.positions()});
    const tensor::Tensor key =
        glue::concat_last(k_nope, glue::repeat_heads(be.download(k_rot_dev), H));
    const DeviceTensor query = be.upload(glue::concat_last(q_nope, be.download(q_rot_dev)));
    std::optional<IndexerInputs> index;
    if (t.indexer.n_heads > 0) index = indexer_inputs(r, h, qa);
    DeviceTensor o = r.cached_attention(query, key, value, index ? &*index : nullptr);
    o.reshape({T, H * at.v_head_dim});
    return r.row_parallel(TensorRole::kAttnO, o);
  }

  // Keys and values cached per head, expanded from the latent (every query head of this rank).
  KvLayout kv_layout(const TextModel& t, int64_t heads, int64_t) const override {
    return {heads, t.attn.qk_head_dim(), t.attn.value_head_dim(),
            t.indexer.n_heads > 0 ? t.indexer.head_dim : 0};
  }
  // The config's scale, else qk_head_dim^-0.5; transformers' DeepseekV3Attention: times mscale²
  // under yarn with mscale_all_dim.
  double attention_scale(const TextModel& t) const override {
    double scale = t.attn.scale > 0 ? t.attn.scale : 1.0 / std::sqrt(double(t.attn.qk_head_dim()));
    const RopeScaling& r = t.rope_scaling;
    if (r.type == "yarn" && r.mscale_all_dim != 0 && r.factor > 1) {
      const double m = 0.1 * r.mscale_all_dim * std::log(r.factor) + 1.0;
      scale *= m * m;
    }
    return scale;
  }

  std::string describe(const TextModel& t, int64_t layer) const override {
    const bool sliding = t.layer_kind(layer) == TextModel::LayerKind::kSliding;
    return std::string(sliding ? "sliding-window " : "") + "MLA" +
           (t.indexer.n_heads > 0 ? " + indexer" : "");
  }
  // One latent (kv_lora_rank + qk_rope_head_dim) per token, held whole by every rank, and the
  // indexer's key.
  BlockCache cache(const TextModel& t, int64_t layer, int64_t kv_heads) const override {
    const bool sliding = t.layer_kind(layer) == TextModel::LayerKind::kSliding;
    return {t.attn.kv_cache_width(kv_heads) + t.indexer.head_dim, t.indexer.head_dim,
            sliding ? t.attn.sliding_window : 0, "MLA latent"};
  }
  bool cache_split_by_heads() const override { return false; }
  void plan_notes(const TextModel& t, const PlanFacts& p,
                  std::vector<std::string>* notes) const override {
    if (p.tp > 1) {
      notes->push_back("MLA: the latent KV (kv_lora_rank " + std::to_string(t.attn.kv_lora_rank) +
                       " + qk_rope_head_dim " + std::to_string(t.attn.qk_rope_head_dim) +
                       ") is held whole by each of the " + std::to_string(p.tp) + " tp ranks");
    }
    indexer_plan_notes(t, notes);
  }
};

}  // namespace

const Block& mla_block() {
  static const Mla block;
  return block;
}

}  // namespace h0::model
