// Attention with its QK-norm per layer (MiniMax-M2's qk_norm_type "per_layer"; transformers'
// MiniMaxM2Attention, FlexOlmo's and OLMo-2's q_norm / k_norm): grouped-query attention whose
// RMSNorm runs over the whole q and k projections, num_heads·head_dim and num_kv_heads·head_dim
// wide, before the split into heads — where Qwen3's per-head QK-norm (blocks/full_attention.cc)
// runs over each head alone. One norm over every head needs every head: under TP each rank
// projects q and k whole (replicated, as transformers' tp plan for MiniMax-M2 gathers them), norms
// them and keeps its own heads; v and o split as for full attention. RoPE (partial rotary),
// the paged cache and the rest are full attention's.
//
// Config: its own fields, read here (Block::configure) when the family turns it on with
// use_block; the shapes are Attention's.
#include "base/error.h"
#include "model/blocks/full_attention.h"
#include "model/exec/host_glue.h"

namespace h0::model {
namespace {

using backend::DeviceTensor;

// The fields this block reads of a config.json.
struct QkNormConfig {
  // qk_norm_type: "per_layer" (the whole projection), the only form this block runs; MiniMax's
  // "per_head" is Qwen3's QK-norm, which full attention runs.
  std::string type = "per_layer";
};

// Columns [first·hd, (first + n)·hd) of a [T, heads·hd] projection: heads first .. first + n.
std::vector<int64_t> head_columns(int64_t first, int64_t n, int64_t hd) {
  std::vector<int64_t> cols(static_cast<size_t>(n * hd));
  for (size_t i = 0; i < cols.size(); ++i) cols[i] = first * hd + int64_t(i);
  return cols;
}

class PerLayerQkNorm : public GqaBlock {
 public:
  PerLayerQkNorm() : GqaBlock("per_layer_qk_norm", TextModel::LayerKind::kFull) {}

  void configure(const ConfigFields& f, TextModel* t) const override {
    QkNormConfig c;
    c.type = f.opt_string("qk_norm_type", c.type);
    if (c.type != "per_layer") {
      throw InputError(f.where("qk_norm_type"),
                       "\"" + c.type +
                           "\": this block norms q and k over the whole projection "
                           "(\"per_layer\")");
    }
    t->block_config[name()] = c;
  }

  bool runs(const TextModel& t, int64_t layer) const override {
    return block_config<QkNormConfig>(t, name()) != nullptr &&
           gqa_runs(t, layer, TextModel::LayerKind::kFull);
  }

  void weights(InventoryBuilder& b) const override {
    const Attention& a = b.text().attn;
    const int64_t hd = a.head_dim, h = b.text().hidden_size;
    b.proj(TensorRole::kAttnQ, a.num_heads * hd, h, TpSplit::kReplicated, hd);
    b.proj(TensorRole::kAttnK, a.num_kv_heads * hd, h, TpSplit::kReplicated, hd);
    b.proj(TensorRole::kAttnV, a.num_kv_heads * hd, h, TpSplit::kColumn, hd, true);
    b.proj(TensorRole::kAttnO, h, a.num_heads * hd, TpSplit::kRow, hd);
    b.norm(TensorRole::kAttnQNorm, a.num_heads * hd);
    b.norm(TensorRole::kAttnKNorm, a.num_kv_heads * hd);
  }

  DeviceTensor run(LayerRun& r, const DeviceTensor& h) const override {
    const Attention& at = r.arch().text.attn;
    const int64_t T = r.tokens(), hd = at.head_dim;
    const Sharding* sh = r.sharding();
    const int64_t H = sh ? sh->heads : at.num_heads, Hkv = sh ? sh->kv_heads : at.num_kv_heads;
    backend::Backend& be = r.backend();
    const BoundOp& norm = r.model_ops().rmsnorm;
    DeviceTensor q = r.linear(TensorRole::kAttnQ, h), k = r.linear(TensorRole::kAttnK, h);
    q = r.run1(norm, {&q, &r.weight(TensorRole::kAttnQNorm)});  // every head's q at once
    k = r.run1(norm, {&k, &r.weight(TensorRole::kAttnKNorm)});
    DeviceTensor v = r.linear(TensorRole::kAttnV, h);
    if (H < at.num_heads) {  // TP: this rank's heads of the normed projections
      const int64_t tp = at.num_heads / H;
      q = be.upload(glue::gather_columns(be.download(q), head_columns(sh->tp_rank * H, H, hd)));
      k = be.upload(glue::gather_columns(
          be.download(k), head_columns(sh->tp_rank * at.num_kv_heads / tp, Hkv, hd)));
    }
    q.reshape({T, H, hd});
    k.reshape({T, Hkv, hd});
    v.reshape({T, Hkv, hd});
    q = r.run1(r.ops().at("rope"), {&q, &r.positions()});
    k = r.run1(r.ops().at("rope"), {&k, &r.positions()});
    DeviceTensor o = r.cached_attention(q, be.download(k), be.download(v));
    o.reshape({T, H * hd});
    return r.row_parallel(TensorRole::kAttnO, o);
  }

  std::string describe(const TextModel&, int64_t) const override {
    return "full attention, QK-norm per layer";
  }
};

}  // namespace

const Block& per_layer_qk_norm_block() {
  static const PerLayerQkNorm block;
  return block;
}

}  // namespace h0::model
