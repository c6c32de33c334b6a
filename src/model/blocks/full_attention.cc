// Grouped-query attention (transformers' LlamaAttention and its kin): q, k, v projections (Qwen2's
// biases), Qwen3's RMSNorm over each head of q and k, RoPE (NeoX halves; GLM-4.5's partial rotary;
// Qwen2-VL's M-RoPE sections), the paged KV cache and paged_attention (GPT-OSS's sinks),
// Qwen3-Next's output gate, o_proj. Under TP each rank runs its heads (kv heads replicated in
// groups when fewer than the ranks) and o_proj is row-parallel. Config: Attention (architecture.h);
// every full attention layer of a family without MLA.
#include "model/blocks/full_attention.h"

#include <cmath>
#include <optional>

#include "base/error.h"
#include "model/blocks/lightning_indexer.h"
#include "model/exec/host_glue.h"

namespace h0::model {

using backend::DeviceTensor;

bool gqa_runs(const TextModel& t, int64_t layer, TextModel::LayerKind kind) {
  return !t.attn.mla && t.layer_kind(layer) == kind;
}

void gqa_weights(InventoryBuilder& b) {
  const Attention& a = b.text().attn;
  const int64_t hd = a.head_dim, h = b.text().hidden_size;
  const int64_t q_width = a.output_gate ? 2 * hd : hd;  // an output gate: query then gate, per head
  b.proj(TensorRole::kAttnQ, a.num_heads * q_width, h, TpSplit::kColumn, q_width);
  if (a.qkv_bias) b.bias(TensorRole::kAttnQ, a.num_heads * q_width, TpSplit::kColumn, q_width);
  for (const TensorRole role : {TensorRole::kAttnK, TensorRole::kAttnV}) {
    b.proj(role, a.num_kv_heads * hd, h, TpSplit::kColumn, hd, true);
    if (a.qkv_bias) b.bias(role, a.num_kv_heads * hd, TpSplit::kColumn, hd).kv_heads = true;
  }
  b.proj(TensorRole::kAttnO, h, a.num_heads * hd, TpSplit::kRow, hd);
  if (a.o_bias) b.bias(TensorRole::kAttnO, h, TpSplit::kReplicated);
  if (a.qk_norm) {
    b.norm(TensorRole::kAttnQNorm, hd);
    b.norm(TensorRole::kAttnKNorm, hd);
  }
  if (a.sinks)
    b.add(b.named(TensorRole::kAttnSinks), {a.num_heads}, TpSplit::kColumn).tensor =
        TensorRole::kAttnSinks;
}

std::string gqa_tp_issue(const TextModel& t, int64_t tp) {
  const int64_t kv = t.attn.num_kv_heads;
  const std::string kvs = std::to_string(kv), tps = std::to_string(tp);
  if (kv >= tp && kv % tp != 0)
    return "num_key_value_heads " + kvs + " is not divisible by tp " + tps;
  if (kv < tp && tp % kv != 0) {
    return "tp " + tps + " is not a multiple of num_key_value_heads " + kvs +
           " (each kv head must be replicated over the same number of ranks)";
  }
  return "";
}

void bind_gqa(const Architecture& arch, tensor::DType, BlockOps* ops) {
  const TextModel& t = arch.text;
  ops::Json rope = {{"theta", t.rope_theta}, {"style", "neox"}, {"scaling", t.rope_scaling_json}};
  if (t.attn.rotary_dim > 0) {
    // An odd partial rotary dim (transformers' default Glm4MoeConfig: int(42 · 0.5)): HF's
    // frequencies over the odd dim are not rope's (even rotary_dim), so no run can match it.
    if (t.attn.rotary_dim % 2 != 0) {
      throw InputError("config.json: partial_rotary_factor",
                       "the rotary dim " + std::to_string(t.attn.rotary_dim) + " of head_dim " +
                           std::to_string(t.attn.head_dim) +
                           " is odd: the rope op turns an even number of dims");
    }
    rope["rotary_dim"] = t.attn.rotary_dim;
  }
  if (!t.mrope_section.empty())
    rope["mrope"] = {{"section", t.mrope_section}, {"layout", "chunked"}};  // Qwen2-VL
  ops->add("rope", bind_op("rope", rope));
  if (t.local_rope_theta > 0) {  // Gemma 3: the sliding layers' own base
    rope["theta"] = t.local_rope_theta;
    rope["scaling"] = t.local_rope_scaling_json;
    ops->add("local_rope", bind_op("rope", rope));
  }
  if (t.attn.output_gate) {  // Qwen3-Next: attention output · sigmoid(gate)
    ops->add("output_gate", bind_op("sigmoid"));
    ops->add("output_mul", bind_op("mul"));
  }
}

DeviceTensor run_gqa(LayerRun& r, const DeviceTensor& h, bool sliding) {
  const Attention& at = r.arch().text.attn;
  const int64_t T = r.tokens(), hd = at.head_dim;
  const Sharding* sh = r.sharding();
  const int64_t H = sh ? sh->heads : at.num_heads, Hkv = sh ? sh->kv_heads : at.num_kv_heads;
  backend::Backend& be = r.backend();
  DeviceTensor q = r.linear(TensorRole::kAttnQ, h), k = r.linear(TensorRole::kAttnK, h),
               v = r.linear(TensorRole::kAttnV, h);
  std::optional<DeviceTensor> gate;
  if (at.output_gate) {  // Qwen3-Next: q_proj writes [query | gate] per head
    auto [query, g] = glue::split_last(be.download(q).reshape({T, H, 2 * hd}), hd);
    q = be.upload(query);
    gate = be.upload(g.reshape({T, H * hd}));
  }
  if (at.qk_norm) {  // Qwen3: RMSNorm over each head before RoPE
    const BoundOp& norm = r.model_ops().rmsnorm;
    q.reshape({T * H, hd});
    k.reshape({T * Hkv, hd});
    q = r.run1(norm, {&q, &r.weight(TensorRole::kAttnQNorm)});
    k = r.run1(norm, {&k, &r.weight(TensorRole::kAttnKNorm)});
  }
  q.reshape({T, H, hd});
  k.reshape({T, Hkv, hd});
  v.reshape({T, Hkv, hd});
  const BoundOp* local = sliding ? r.ops().find("local_rope") : nullptr;  // Gemma 3's own base
  const BoundOp& rope = local != nullptr ? *local : r.ops().at("rope");
  q = r.run1(rope, {&q, &r.positions()});
  k = r.run1(rope, {&k, &r.positions()});
  DeviceTensor o = r.cached_attention(q, be.download(k), be.download(v));
  o.reshape({T, H * hd});
  if (gate) {  // o · sigmoid(gate)
    const DeviceTensor s = r.run1(r.ops().at("output_gate"), {&*gate});
    o = r.run1(r.ops().at("output_mul"), {&o, &s});
  }
  return r.row_parallel(TensorRole::kAttnO, o);
}

void gqa_bind_context(const Architecture& arch, const ops::Json& context, TextModel::LayerKind kind,
                      BlockOps* ops) {
  ops::Json attrs = context;
  if (kind == TextModel::LayerKind::kSliding && arch.text.attn.sliding_window > 0)
    attrs["sliding_window"] = arch.text.attn.sliding_window;
  ops->add("attention", bind_op("paged_attention", attrs));
  bind_indexer_context(arch, context, ops);
}

std::string describe_gqa(const TextModel& t, bool sliding) {
  const std::string attention = t.indexer.n_heads > 0 ? "attention + indexer" : "attention";
  return (sliding ? "sliding-window " : "full ") + attention;
}

KvLayout gqa_kv_layout(const TextModel& t, int64_t kv_heads) {
  return {kv_heads, t.attn.qk_head_dim(), t.attn.value_head_dim(),
          t.indexer.n_heads > 0 ? t.indexer.head_dim : 0};
}

double gqa_attention_scale(const TextModel& t) {
  return t.attn.scale > 0 ? t.attn.scale : 1.0 / std::sqrt(double(t.attn.qk_head_dim()));
}

BlockCache gqa_cache(const TextModel& t, int64_t kv_heads, bool sliding) {
  return {t.attn.kv_cache_width(kv_heads) + t.indexer.head_dim, t.indexer.head_dim,
          sliding ? t.attn.sliding_window : 0, "full attention"};
}

const Block& full_attention_block() {
  static const GqaBlock block("full_attention", TextModel::LayerKind::kFull);
  return block;
}

}  // namespace h0::model
