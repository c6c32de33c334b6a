// DeepSeek-V3.2's lightning indexer + sparse attention (transformers' DeepseekV32Indexer): per
// query a score for every earlier key, Σ_h w_h · ReLU(q_h · k) over n_heads heads of head_dim, and
// attention over the top `topk` keys only (sparse_attention). It caches one key of head_dim per
// token per layer, held whole by every rank (as vLLM's ReplicatedLinear). Config: Indexer
// (architecture.h), read by families/deepseek_v32.cc.
#include "model/blocks/lightning_indexer.h"

#include <cmath>

namespace h0::model {

using backend::DeviceTensor;

// Small, and held whole by every rank; its key LayerNorm has a bias.
void indexer_weights(InventoryBuilder& b) {
  const Indexer& x = b.text().indexer;
  if (x.n_heads <= 0) return;
  const int64_t h = b.text().hidden_size;
  b.proj(TensorRole::kIdxQB, x.n_heads * x.head_dim, b.text().attn.q_lora_rank,
         TpSplit::kReplicated, 1);
  b.proj(TensorRole::kIdxK, x.head_dim, h, TpSplit::kReplicated, 1);
  b.norm(TensorRole::kIdxKNorm, x.head_dim);
  b.bias(TensorRole::kIdxKNorm, x.head_dim, TpSplit::kReplicated);
  b.add(b.named(TensorRole::kIdxWeights), {x.n_heads, h}, TpSplit::kReplicated).tensor =
      TensorRole::kIdxWeights;
}

namespace {

// The selection's attrs: its topk and scale. HF scores Σ_h (w_h · H^-0.5) · ReLU(D^-0.5 · q_h·k):
// ReLU(c·y) = c·ReLU(y) for c > 0, so the weights' H^-0.5 goes into the op's scale.
ops::Json selection(const Indexer& x) {
  return {{"topk", x.topk}, {"scale", 1.0 / std::sqrt(double(x.head_dim) * double(x.n_heads))}};
}

}  // namespace

// Its key norm (LayerNorm), its half-split RoPE over the first qk_rope_head_dim dims, and the
// selection (bind_indexer_context binds it again per sequence with the sequence's context).
void bind_indexer(const Architecture& arch, BlockOps* ops) {
  const TextModel& t = arch.text;
  const Indexer& x = t.indexer;
  if (x.n_heads <= 0) return;
  ops->add("index_norm", bind_op("layernorm", {{"eps", 1e-6}}));  // its k_norm's
  ops->add("index_rope", bind_op("rope", {{"theta", t.rope_theta},
                                          {"style", "neox"},
                                          {"scaling", t.rope_scaling_json},
                                          {"rotary_dim", t.attn.qk_rope_head_dim}}));
  ops->add("index_select", bind_op("lightning_indexer", selection(x)));
}

void bind_indexer_context(const Architecture& arch, const ops::Json& context, BlockOps* ops) {
  const Indexer& x = arch.text.indexer;
  if (x.n_heads <= 0) return;
  ops->add("sparse_attention", bind_op("sparse_attention", context));
  ops::Json attrs = context;
  const ops::Json chosen = selection(x);
  for (const auto& [key, value] : chosen.items()) attrs[key] = value;
  ops->add("indexer", bind_op("lightning_indexer", attrs));
}

void indexer_plan_notes(const TextModel& t, std::vector<std::string>* notes) {
  if (t.indexer.n_heads <= 0) return;
  notes->push_back("the lightning indexer caches " + std::to_string(t.indexer.head_dim) +
                   " key elements per token per layer beside the MLA latent (whole on every tp "
                   "rank; idx B/tok)");
}

// Queries wq_b(q latent) and one key k_norm(wk(x)) per token, both with half-split RoPE over their
// first qk_rope_head_dim dims, and the heads' weights weights_proj(x) (their H^-0.5 is in the
// bound indexer's scale).
IndexerInputs indexer_inputs(LayerRun& r, const DeviceTensor& h, const DeviceTensor& q_latent) {
  const Indexer& x = r.arch().text.indexer;
  const int64_t T = r.tokens();
  const BoundOp& rope = r.ops().at("index_rope");
  IndexerInputs in;
  in.q = r.linear(TensorRole::kIdxQB, q_latent);
  in.q.reshape({T, x.n_heads, x.head_dim});
  in.q = r.run1(rope, {&in.q, &r.positions()});
  DeviceTensor k = r.linear(TensorRole::kIdxK, h);
  k = r.run1(r.ops().at("index_norm"), {&k, &r.weight(TensorRole::kIdxKNorm),
                                        &r.weight(TensorRole::kIdxKNorm, TensorPiece::kBias)});
  k.reshape({T, 1, x.head_dim});
  in.k = r.backend().download(r.run1(rope, {&k, &r.positions()})).reshape({T, x.head_dim});
  in.weights = r.linear(TensorRole::kIdxWeights, h);
  return in;
}

}  // namespace h0::model
