// The executor: a model built from its architecture and weights, run out of a backend's
// catalogue ops (so the platform's kernels are what is tested). Decoder layers of every
// family (GQA with RoPE, Qwen2 qkv bias, Qwen3 q/k norm, SwiGLU MLP, MoE with shared experts,
// DeepSeek-V3 multi-head latent attention, DeepSeek-V3.2's sparse attention through its lightning
// indexer, Qwen3-Next's Gated DeltaNet layers), prefill and decode over a paged KV cache, a
// deterministic sampler, probes at every layer boundary and sublayer, and a per-op profile.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/fallback.h"
#include "io/sharded_checkpoint.h"
#include "model/config/architecture.h"
#include "model/config/block.h"
#include "model/exec/kv_cache.h"
#include "model/exec/model_ops.h"
#include "model/exec/model_weights.h"
#include "model/exec/op_runner.h"
#include "model/exec/probes.h"
#include "model/exec/sharding.h"
#include "model/vision/qwen_vision.h"

namespace h0::model {

struct ExecutorOptions {
  tensor::DType dtype = tensor::DType::kF32;  // weights are converted to it on load
  backend::FallbackMode fallback = backend::FallbackMode::kHost;
  int64_t block_size = 16;
  int64_t max_tokens = 1024;  // KV cache capacity over all sequences
  bool profile = true;
  // fp8 block-quantized projections: scaled_linear's act_quant "dynamic" (the input quantized
  // per token in 1 x block_k groups, as DeepSeek's inference code and vLLM run) instead of
  // "none" (the input as is, the reference's dequantized-weights arithmetic).
  bool act_quant = false;
  // This rank's part of a parallel plan (plan/execution_sharding.h); null: the whole model.
  const Sharding* sharding = nullptr;
  // Routed experts that would take this many bytes or more widened to `dtype` (all MoE layers;
  // 0: always) stay as the checkpoint stores them; a step widens the experts it routes to in
  // groups of half of it (the host's stacks and the backend's copy of them: at most this many
  // bytes at once). ModelWeights, StoredExperts. The environment's HARNESS_EXPERT_BYTES
  // overrides it.
  int64_t expert_bytes = ModelWeights::kExpertBytes;
  // >= 0: load only decoder layer `only_layer`'s weights (a layer check at a real model's width:
  // the others need not fit, nor be read); run_layer runs it, forward() has no embedding.
  int64_t only_layer = -1;
  // The harness's own detection tests only: a deliberate bug in the executor's host glue, which
  // no plugin can inject. "qwen_window_not_inverted": Qwen2.5-VL's merged image tokens are left in
  // window order (tests/model/qwen_vl_model_test.cc). Empty: none.
  std::string self_test_fault = "";
};

// One sequence's part of a batched forward pass: its new tokens (a prompt, a prompt's next
// chunk, or one decoded token) and its image features [N, D] (host, not owned): they replace the
// embeddings of the image tokens, in order. With M-RoPE (Qwen2.5-VL) `image_grids` are those
// images' grids, in order: the position ids of their tokens (mrope_positions).
struct BatchItem {
  int seq = 0;
  std::vector<int64_t> ids;
  const tensor::Tensor* image_features = nullptr;
  std::vector<ImageGrid> image_grids = {};
};

// DeepSeek-V3.2's lightning indexer inputs of one layer's step (blocks/lightning_indexer.cc):
// queries [T, Hi, Di], keys [T, Di] (host, to be cached) and head weights [T, Hi].
struct IndexerInputs {
  backend::DeviceTensor q, weights;
  tensor::Tensor k;
};

class Executor {
 public:
  Executor(const Architecture& arch, const io::ShardedCheckpoint& ckpt, backend::Backend& backend,
           const ExecutorOptions& options);
  ~Executor();

  int new_sequence() { return cache_.new_sequence(); }
  // Frees the sequence's KV blocks and the blocks' states of it (a linear attention's).
  void free_sequence(int seq);
  int64_t sequence_length(int seq) const { return cache_.length(seq); }
  // The paged KV cache: capacity geometry().num_blocks × block_size tokens, free_blocks().
  const PagedKvCache& kv_cache() const { return cache_; }

  // Appends `ids` to sequence `seq` (prefill when it is empty, decode for one id) and returns
  // the logits [T, V] (f32, host). `image_features` [N, D] (host), if given, replaces the
  // embeddings at the N positions holding the image token, in order (LLaVA).
  // With M-RoPE, `image_grids` place the images' tokens (BatchItem).
  tensor::Tensor forward(int seq, const std::vector<int64_t>& ids, ProbeRecorder* probes = nullptr,
                         const tensor::Tensor* image_features = nullptr,
                         const std::vector<ImageGrid>& image_grids = {});
  // One forward pass over several sequences (continuous batching): the rows of every item are
  // concatenated, so each linear, norm, MLP and MoE op runs once on [ΣT_i, D]; attention runs
  // per sequence over its own cache blocks. Returns each item's logits [T_i, V] (f32, host),
  // the same as `forward` of that item alone would give (bit for bit when the backend's row
  // results do not depend on the row count). Sequences must be distinct. `probes` see the
  // concatenated rows. Sharded executors take one item only (InputError otherwise).
  std::vector<tensor::Tensor> forward_batch(const std::vector<BatchItem>& items,
                                            ProbeRecorder* probes = nullptr);
  // Decoder layer `layer` alone on `hidden` [T, D] at positions [0, T) of a fresh sequence:
  // its output [T, D] (f32, host). Isolates one layer given the golden input. With `prefill` in
  // [1, T), rows [0, prefill) run as one prefill and each later row as a decode step (the KV cache
  // and a linear layer's conv and recurrent state carried between calls); `probes` then get every
  // step's rows (a ProbeRecorder with append_rows).
  tensor::Tensor run_layer(int64_t layer, const tensor::Tensor& hidden,
                           ProbeRecorder* probes = nullptr, int64_t prefill = 0);
  // The next token of each row of logits [T, V] by argmax (ties: lowest id), on the backend.
  std::vector<int64_t> greedy(const tensor::Tensor& logits);
  // Seeded sampling with the `sample` op (Philox keyed by seed, step and row).
  std::vector<int64_t> sample(const tensor::Tensor& logits, double temperature, int64_t top_k,
                              double top_p, uint64_t seed, int64_t step);

  const Architecture& arch() const { return arch_; }
  // "model." (or "model.language_model." for a model with a vision tower): the prefix of the
  // decoder's probe names.
  const std::string& probe_prefix() const { return prefix_; }
  OpRunner& ops() { return ops_; }
  backend::Backend& backend() { return backend_; }
  const ModelWeights& weights() const { return *weights_; }

 private:
  friend class LayerRun;  // a block's view of the executor (layer_run.h)
  friend class TowerRun;  // a vision tower's (tower_run.h)

  struct Segment {  // one sequence's rows of a forward pass
    int seq = 0;
    const BatchItem* item = nullptr;  // its ids and images (null: a layer run, text positions)
    int64_t row = 0, tokens = 0,
            start = 0;  // rows [row, row + tokens) hold positions [start, start + tokens)
    backend::DeviceTensor table;
    // Each block's ops at this segment's context (Block::bind_context: bound once per step, used
    // by every layer that runs the block).
    std::map<const Block*, BlockOps> context;
  };
  struct Step {  // one forward pass over one or more sequences
    std::vector<Segment> segments;
    int64_t tokens = 0;  // rows over all segments
    backend::DeviceTensor positions;
    ProbeRecorder* probes = nullptr;
  };
  // Reserves cache room for each segment (seq, tokens set) and fills rows, positions, block
  // tables and each block's ops at the segment's context.
  void begin_step(Step* step);
  backend::DeviceTensor decoder_layer(int64_t layer, backend::DeviceTensor x, Step& step);
  // A block's step (config/block.h) on the layer's normed input, through a LayerRun.
  backend::DeviceTensor run_block(const Block& block, int64_t layer, const backend::DeviceTensor& h,
                                  Step& step);
  // Caches k and v (and `index`'s keys), then attends with the ops `block` bound at each
  // segment's context: its "attention", or with `index` its "sparse_attention" over the keys its
  // "indexer" picks.
  backend::DeviceTensor cached_attention(int64_t layer, const Block& block,
                                         const backend::DeviceTensor& q, const tensor::Tensor& k,
                                         const tensor::Tensor& v, Step& step,
                                         const IndexerInputs* index = nullptr);
  // x·wᵀ (+ bias). `with_bias` false leaves a replicated bias out (a row-parallel rank other
  // than tp rank 0, whose partial sums are all-reduced).
  backend::DeviceTensor linear(int64_t layer, TensorRole role, const backend::DeviceTensor& x,
                               bool with_bias = true);
  backend::DeviceTensor linear_of(const backend::DeviceTensor& w, const backend::DeviceTensor* b,
                                  const backend::DeviceTensor* scale,
                                  const backend::DeviceTensor& x);
  // Sums `t` over a communicator of more than one rank (in place, through the host).
  void all_reduce(mesh::Communicator* comm, backend::DeviceTensor* t);
  backend::DeviceTensor embed(const std::vector<int64_t>& ids);
  tensor::Tensor lm_head(const backend::DeviceTensor& x);
  bool first_tp_rank() const;
  void probe(Step& step, const std::string& name, const backend::DeviceTensor& t);
  tensor::Tensor to_host_f32(const backend::DeviceTensor& t);

  Architecture arch_;
  backend::Backend& backend_;
  ExecutorOptions options_;
  OpRunner ops_;
  int64_t expert_bytes_;  // options' expert_bytes or HARNESS_EXPERT_BYTES
  std::unique_ptr<ModelWeights> weights_;
  PagedKvCache cache_;
  std::string prefix_;
  ModelOps op_;  // the model's ops, bound once (model_ops.h)
  std::map<const Block*, std::unique_ptr<BlockState>> block_states_;  // Block::state's
  std::map<int, int64_t> mrope_next_;  // M-RoPE: a sequence's next position id (past its images)
};

}  // namespace h0::model
