#include "model/exec/executor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "base/check.h"
#include "base/error.h"
#include "model/exec/host_glue.h"
#include "model/exec/layer_run.h"
#include "tensor/convert.h"

namespace h0::model {

using backend::DeviceTensor;

namespace {

// The paged cache's geometry: the layout of the first layer whose block caches keys
// (Block::kv_layout), on this rank's heads.
KvGeometry kv_geometry(const Architecture& a, const ExecutorOptions& o) {
  const TextModel& t = a.text;
  const int64_t heads = o.sharding != nullptr ? o.sharding->heads : t.attn.num_heads;
  const int64_t kv_heads = o.sharding != nullptr ? o.sharding->kv_heads : t.attn.num_kv_heads;
  KvLayout k;
  for (int64_t l = 0; l < t.num_layers && k.heads == 0; ++l)
    k = block_of(t, l, BlockSlot::kMixer).kv_layout(t, heads, kv_heads);
  return {t.num_layers, (o.max_tokens + o.block_size - 1) / o.block_size,
          o.block_size, k.heads,
          k.k_dim,      k.v_dim,
          k.index_dim};
}

// options.expert_bytes, or HARNESS_EXPERT_BYTES when set (an integer; anything else is an
// InputError naming it).
int64_t expert_bytes(const ExecutorOptions& o) {
  const char* env = std::getenv("HARNESS_EXPERT_BYTES");
  if (env == nullptr || *env == '\0') return o.expert_bytes;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  if (*end != '\0' || v < 0)
    throw InputError("HARNESS_EXPERT_BYTES", std::string("'") + env + "' is not a byte count");
  return v;
}

// The dtype the checkpoint stores its embedding table in, when config.json names none
// (GPT-OSS-120B's): what its float weights are kept as in an f32 run.
std::optional<tensor::DType> checkpoint_dtype(const Architecture& arch,
                                              const io::ShardedCheckpoint& ckpt) {
  if (arch.text.dtype) return std::nullopt;
  const io::TensorEntry* e = ckpt.find(arch.text.prefix + "embed_tokens.weight");
  if (e == nullptr || !tensor::is_float(e->dtype)) return std::nullopt;
  return e->dtype;
}

tensor::Tensor index_tensor(const std::vector<int64_t>& v) {
  return tensor::Tensor::copy_of(tensor::DType::kI64, {int64_t(v.size())}, v.data());
}

}  // namespace

Executor::Executor(const Architecture& arch, const io::ShardedCheckpoint& ckpt,
                   backend::Backend& backend, const ExecutorOptions& options)
    : arch_(arch),
      backend_(backend),
      options_(options),
      ops_(backend, options.fallback, options.profile),
      expert_bytes_(expert_bytes(options)),
      weights_(std::make_unique<ModelWeights>(
          arch, ckpt, backend, options.dtype, options.sharding,
          backend.supports("linear_widen", options.dtype)
              ? widened_weight_dtype(arch, options.dtype, checkpoint_dtype(arch, ckpt))
              : std::nullopt,
          expert_bytes_, options.only_layer)),
      cache_(backend, kv_geometry(arch, options), options.dtype),
      prefix_(arch.has_vision ? "model.language_model." : "model."),
      op_(model_ops(arch, options.dtype, options.act_quant, checkpoint_dtype(arch, ckpt))) {
  const int64_t tp =
      options.sharding != nullptr && options.sharding->tp ? options.sharding->tp->size() : 1;
  for (const auto& [block, bound] : op_.blocks) {
    if (auto state = block->state(arch, tp)) block_states_[block] = std::move(state);
  }
}

Executor::~Executor() = default;

void Executor::free_sequence(int seq) {
  cache_.free_sequence(seq);
  for (auto& [block, state] : block_states_) state->free_sequence(seq);
  mrope_next_.erase(seq);
}

tensor::Tensor Executor::to_host_f32(const DeviceTensor& t) {
  tensor::Tensor host = backend_.download(t);
  tensor::Shape shape = host.shape();
  if (shape.size() > 2) shape = {shape[0], host.numel() / shape[0]};
  return glue::to_f32(host).reshape(shape);
}

void Executor::probe(Step& step, const std::string& name, const DeviceTensor& t) {
  if (step.probes != nullptr && step.probes->wants(name)) step.probes->record(name, to_host_f32(t));
}

bool Executor::first_tp_rank() const {
  return options_.sharding == nullptr || options_.sharding->tp_rank == 0;
}

void Executor::all_reduce(mesh::Communicator* comm, DeviceTensor* t) {
  if (comm == nullptr || comm->size() == 1) return;
  tensor::Tensor host = backend_.download(*t);
  comm->all_reduce(host.data(), host.mutable_data(), size_t(host.numel()), host.dtype(),
                   mesh::ReduceOp::kSum);
  backend_.upload_into(host, t);
}

DeviceTensor Executor::linear(int64_t layer, TensorRole role, const DeviceTensor& x,
                              bool with_bias) {
  return linear_of(weights_->get(layer, role),
                   with_bias ? weights_->find(layer, role, TensorPiece::kBias) : nullptr,
                   weights_->find(layer, role, TensorPiece::kScale), x);
}

// x·wᵀ + b by linear, or by scaled_linear when w comes with block scales (an fp8 checkpoint).
DeviceTensor Executor::linear_of(const DeviceTensor& w, const DeviceTensor* b,
                                 const DeviceTensor* scale, const DeviceTensor& x) {
  if (scale != nullptr) {
    H0_CHECK(op_.scaled_linear.def != nullptr)
        << "a weight has block scales but the config has no fp8 quantization_config";
    BoundOp op = op_.scaled_linear;
    if (w.dtype() != tensor::DType::kF8E4M3) op.attrs["dtype"] = tensor::dtype_name(w.dtype());
    if (b != nullptr) return ops_.run1(op, {&x, &w, scale, b});
    return ops_.run1(op, {&x, &w, scale});
  }
  // A weight kept as stored (bf16 in an f32 run: ModelWeights' `kept`), widened in the kernel.
  const BoundOp& op = w.dtype() == x.dtype() ? op_.linear : op_.linear_widen;
  H0_CHECK(op.def != nullptr) << "a " << tensor::dtype_name(w.dtype()) << " weight in a "
                              << tensor::dtype_name(x.dtype()) << " run";
  if (b != nullptr) return ops_.run1(op, {&x, &w, b});
  return ops_.run1(op, {&x, &w});
}

tensor::Tensor Executor::forward(int seq, const std::vector<int64_t>& ids, ProbeRecorder* probes,
                                 const tensor::Tensor* image_features,
                                 const std::vector<ImageGrid>& image_grids) {
  return std::move(forward_batch({{seq, ids, image_features, image_grids}}, probes)[0]);
}

std::vector<tensor::Tensor> Executor::forward_batch(const std::vector<BatchItem>& items,
                                                    ProbeRecorder* probes) {
  if (items.empty()) throw InputError("forward", "no sequences");
  const Sharding* sh = options_.sharding;
  if (sh != nullptr && items.size() > 1) {
    throw InputError("forward", "a sharded executor runs one sequence per forward pass, got " +
                                    std::to_string(items.size()));
  }
  std::vector<int64_t> ids;
  Step step;
  step.probes = probes;
  for (const BatchItem& item : items) {
    if (item.ids.empty()) throw InputError("forward", "no tokens");
    for (int64_t id : item.ids) {
      if (id < 0 || id >= arch_.text.vocab_size) {
        throw InputError("prompt", "token id " + std::to_string(id) +
                                       " is outside the vocabulary [0, " +
                                       std::to_string(arch_.text.vocab_size) + ")");
      }
    }
    for (const Segment& s : step.segments)
      H0_CHECK(s.seq != item.seq) << "sequence " << item.seq << " twice in a batch";
    Segment seg;
    seg.seq = item.seq;
    seg.item = &item;
    seg.tokens = int64_t(item.ids.size());
    step.segments.push_back(std::move(seg));
    ids.insert(ids.end(), item.ids.begin(), item.ids.end());
  }
  begin_step(&step);

  const bool first_stage = sh == nullptr || sh->pp_rank == 0,
             last_stage = sh == nullptr || sh->pp_rank == sh->pp - 1;
  DeviceTensor x;
  if (first_stage) {
    x = embed(ids);
    probe(step, prefix_ + "embed_tokens", x);
    bool images = false;
    for (const BatchItem& item : items) images = images || item.image_features != nullptr;
    if (images) {
      tensor::Tensor host = backend_.download(x);
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].image_features == nullptr) continue;
        const Segment& s = step.segments[i];
        tensor::Tensor rows = host.slice_rows(s.row, s.row + s.tokens);
        glue::scatter_rows(&rows, items[i].ids, arch_.vision ? arch_.vision->image_token_index : -1,
                           *items[i].image_features);
      }
      x = backend_.upload(host);
    }
    if (arch_.vision) probe(step, "inputs_embeds", x);
  } else {  // the previous stage's hidden states
    tensor::Tensor host =
        tensor::Tensor::zeros(options_.dtype, {step.tokens, arch_.text.hidden_size});
    sh->pp_group->recv(host.mutable_data(), size_t(host.numel()), host.dtype(),
                       int(sh->pp_rank - 1));
    x = backend_.upload(host);
  }
  const int64_t first = sh ? sh->layer_begin : 0, last = sh ? sh->layer_end : arch_.text.num_layers;
  for (int64_t l = first; l < last; ++l) x = decoder_layer(l, std::move(x), step);
  for (const Segment& s : step.segments) cache_.advance(s.seq, s.tokens);
  tensor::Tensor out;
  if (last_stage) {
    x = ops_.run1(op_.rmsnorm, {&x, &weights_->get(arch_.text.num_layers, TensorRole::kFinalNorm)});
    probe(step, prefix_ + "norm", x);
    out = lm_head(x);
  } else {
    const tensor::Tensor host = backend_.download(x);
    sh->pp_group->send(host.data(), size_t(host.numel()), host.dtype(), int(sh->pp_rank + 1));
  }
  if (sh != nullptr && sh->pp > 1) {  // every stage returns the logits
    if (!last_stage)
      out = tensor::Tensor::zeros(tensor::DType::kF32, {step.tokens, arch_.text.vocab_size});
    sh->pp_group->broadcast(out.mutable_data(), size_t(out.numel()), tensor::DType::kF32,
                            int(sh->pp - 1));
  }
  if (probes != nullptr && probes->wants("logits") && last_stage) probes->record("logits", out);
  if (step.segments.size() == 1) return {std::move(out)};
  std::vector<tensor::Tensor> logits;
  for (const Segment& s : step.segments)
    logits.push_back(out.slice_rows(s.row, s.row + s.tokens).clone());
  return logits;
}

// Vocabulary-parallel embedding: rows outside this rank's [vocab_begin, vocab_end) are zero
// here and come from their rank through the all-reduce.
DeviceTensor Executor::embed(const std::vector<int64_t>& ids) {
  const Sharding* sh = options_.sharding;
  const DeviceTensor& table = weights_->get(-1, TensorRole::kEmbed);
  // A table kept as stored (bf16 in an f32 run): its rows gathered exactly (scale 1), widened
  // here and times Gemma 3's scale in the run dtype (what the op does in f32: one rounding).
  const bool narrow = table.dtype() != options_.dtype;
  BoundOp gather = op_.embedding;
  double scale = 1;
  if (narrow && gather.attrs.contains("scale")) {
    scale = gather.attrs["scale"].get<double>();
    gather.attrs["scale"] = 1.0;
  }
  const auto widened = [&](tensor::Tensor rows) {
    if (!narrow) return rows;
    tensor::Tensor wide = rows.to(options_.dtype);
    if (scale != 1) wide = glue::scaled(wide, scale);
    return wide;
  };
  if (sh == nullptr || !sh->tp || sh->tp->size() == 1) {
    const DeviceTensor id_dev = backend_.upload(index_tensor(ids));
    DeviceTensor rows = ops_.run1(gather, {&id_dev, &table});
    if (!narrow) return rows;
    return backend_.upload(widened(backend_.download(rows)));
  }
  std::vector<int64_t> local(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    local[i] = ids[i] >= sh->vocab_begin && ids[i] < sh->vocab_end ? ids[i] - sh->vocab_begin : 0;
  }
  const DeviceTensor id_dev = backend_.upload(index_tensor(local));
  tensor::Tensor host = widened(backend_.download(ops_.run1(gather, {&id_dev, &table})));
  const size_t row = size_t(arch_.text.hidden_size) * tensor::dtype_size(host.dtype());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < sh->vocab_begin || ids[i] >= sh->vocab_end) {
      std::memset(static_cast<std::byte*>(host.mutable_data()) + i * row, 0, row);
    }
  }
  DeviceTensor x = backend_.upload(host);
  all_reduce(sh->tp.get(), &x);
  return x;
}

// The LM head (vocabulary-parallel under TP: each rank's columns, all-gathered). [T, V] f32.
tensor::Tensor Executor::lm_head(const DeviceTensor& x) {
  const tensor::Tensor local = to_host_f32(
      arch_.text.tie_word_embeddings ? linear(-1, TensorRole::kEmbed, x, false)
                                     : linear(arch_.text.num_layers, TensorRole::kHead, x, false));
  const Sharding* sh = options_.sharding;
  if (sh == nullptr || !sh->tp || sh->tp->size() == 1) return local;
  const int64_t T = local.dim(0), V = arch_.text.vocab_size, n = sh->tp->size();
  const int64_t width = (V + n - 1) / n;  // every rank sends `width` columns; the last ones padded
  tensor::Tensor mine = tensor::Tensor::zeros(tensor::DType::kF32, {T, width});
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(mine.mutable_data_as<float>() + t * width,
                local.data_as<float>() + t * local.dim(1), size_t(local.dim(1)) * sizeof(float));
  }
  tensor::Tensor all = tensor::Tensor::zeros(tensor::DType::kF32, {n, T, width});
  sh->tp->all_gather(mine.data(), all.mutable_data(), size_t(mine.numel()), tensor::DType::kF32);
  tensor::Tensor out = tensor::Tensor::zeros(tensor::DType::kF32, {T, V});
  for (int64_t r = 0; r < n; ++r) {
    const int64_t begin = r * (V / n) + std::min(r, V % n), cols = V / n + (r < V % n ? 1 : 0);
    for (int64_t t = 0; t < T; ++t) {
      std::memcpy(out.mutable_data_as<float>() + t * V + begin,
                  all.data_as<float>() + (r * T + t) * width, size_t(cols) * sizeof(float));
    }
  }
  return out;
}

void Executor::begin_step(Step* step) {
  std::vector<int64_t> pos;
  step->tokens = 0;
  for (Segment& s : step->segments) {
    cache_.reserve(s.seq, s.tokens);
    s.row = step->tokens;
    s.start = cache_.length(s.seq);
    step->tokens += s.tokens;
    for (int64_t i = 0; i < s.tokens; ++i) pos.push_back(s.start + i);
    s.table = cache_.block_table(s.seq);
    for (const auto& [block, bound] : op_.blocks) {
      const ops::Json context = {{"context_len", s.start + s.tokens},
                                 {"scale", block->attention_scale(arch_.text)},
                                 {"causal", true},
                                 {"q_offset", s.start}};
      block->bind_context(arch_, context, &s.context[block]);
    }
  }
  if (arch_.text.mrope_section.empty()) {
    step->positions = backend_.upload(index_tensor(pos));
    return;
  }
  // M-RoPE: [3, T] position ids (t, h, w rows); text tokens have the three equal.
  std::vector<int64_t> rows(size_t(3 * step->tokens));
  const int64_t image_token = arch_.vision ? arch_.vision->image_token_index : -1;
  const int64_t merge = arch_.vision ? arch_.vision->spatial_merge_size : 1;
  for (const Segment& s : step->segments) {
    const auto known = mrope_next_.find(s.seq);
    const int64_t first = known != mrope_next_.end() ? known->second : s.start;
    if (s.item == nullptr) {  // a layer run: text positions, the three rows equal
      for (int64_t a = 0; a < 3; ++a) {
        for (int64_t i = 0; i < s.tokens; ++i)
          rows[size_t(a * step->tokens + s.row + i)] = first + i;
      }
      mrope_next_[s.seq] = first + s.tokens;
      continue;
    }
    const MropePositions m =
        mrope_positions(s.item->ids, first, image_token, s.item->image_grids, merge);
    for (int64_t a = 0; a < 3; ++a) {
      std::copy_n(m.rows.begin() + a * s.tokens, s.tokens, rows.begin() + a * step->tokens + s.row);
    }
    mrope_next_[s.seq] = m.next;
  }
  step->positions =
      backend_.upload(tensor::Tensor::copy_of(tensor::DType::kI64, {3, step->tokens}, rows.data()));
  if (step->probes != nullptr &&
      step->probes->wants("position_ids")) {  // transformers' [T, 3] (t, h, w)
    tensor::Tensor ids = tensor::Tensor::zeros(tensor::DType::kF32, {step->tokens, 3});
    for (int64_t i = 0; i < step->tokens; ++i) {
      for (int64_t a = 0; a < 3; ++a)
        ids.mutable_data_as<float>()[i * 3 + a] = float(rows[size_t(a * step->tokens + i)]);
    }
    step->probes->record("position_ids", ids);
  }
}

tensor::Tensor Executor::run_layer(int64_t layer, const tensor::Tensor& hidden,
                                   ProbeRecorder* probes, int64_t prefill) {
  if (layer < 0 || layer >= arch_.text.num_layers)
    throw InputError("layer", std::to_string(layer) + " is out of range");
  const int64_t T = hidden.dim(0);
  if (prefill <= 0 || prefill > T) prefill = T;
  const int seq = cache_.new_sequence();
  tensor::Tensor out =
      tensor::Tensor::zeros(tensor::DType::kF32, {T, hidden.numel() / std::max<int64_t>(T, 1)});
  for (int64_t row = 0; row < T;) {
    const int64_t n = row == 0 ? prefill : 1;
    Step step;
    step.segments.resize(1);
    step.segments[0].seq = seq;
    step.segments[0].tokens = n;
    step.probes = probes;
    begin_step(&step);
    DeviceTensor x =
        backend_.upload(glue::to_dtype(hidden.slice_rows(row, row + n), options_.dtype));
    x = decoder_layer(layer, std::move(x), step);
    cache_.advance(seq, n);
    const tensor::Tensor y = to_host_f32(x);
    std::memcpy(out.mutable_data_as<float>() + row * out.dim(1), y.data(), y.nbytes());
    row += n;
  }
  free_sequence(seq);
  return out;
}

DeviceTensor Executor::decoder_layer(int64_t layer, DeviceTensor x, Step& step) {
  const std::string p = prefix_ + "layers." + std::to_string(layer);
  const TextModel& t = arch_.text;
  // A norm's probe is named as its weight (probes.h: kDecoderSublayers orders them).
  const auto norm = [&](TensorRole role, const DeviceTensor& in) {
    DeviceTensor out = ops_.run1(op_.rmsnorm, {&in, &weights_->get(layer, role)});
    probe(step, p + "." + t.names->stem(role), out);
    return out;
  };
  DeviceTensor h = norm(TensorRole::kAttnNorm, x);
  const Block& mixer = block_of(t, layer, BlockSlot::kMixer);
  DeviceTensor a = run_block(mixer, layer, h, step);
  probe(step, p + "." + mixer.probe(), a);
  if (t.sandwich_norms) a = norm(TensorRole::kAttnPostNorm, a);
  x = ops_.run1(op_.add, {&x, &a});
  h = norm(TensorRole::kFfnNorm, x);
  const Block& ffn = block_of(t, layer, BlockSlot::kFeedForward);
  DeviceTensor m = run_block(ffn, layer, h, step);
  probe(step, p + "." + ffn.probe(), m);
  if (t.sandwich_norms) m = norm(TensorRole::kFfnPostNorm, m);
  x = ops_.run1(op_.add, {&x, &m});
  probe(step, p, x);
  return x;
}

DeviceTensor Executor::run_block(const Block& block, int64_t layer, const DeviceTensor& h,
                                 Step& step) {
  LayerRun run(*this, layer, block, step);
  return block.run(run, h);
}

// k and v rows of every segment go to its sequence's blocks (and the indexer keys to theirs), the
// layer is uploaded once, then attention runs per segment (one sequence per call) on its rows of
// q [T, H, Dh]: the block's paged_attention, or its lightning_indexer and sparse_attention over
// the keys it picks.
DeviceTensor Executor::cached_attention(int64_t layer, const Block& block, const DeviceTensor& q,
                                        const tensor::Tensor& k, const tensor::Tensor& v,
                                        Step& step, const IndexerInputs* index) {
  for (const Segment& s : step.segments) {
    cache_.stage(s.seq, layer, k.slice_rows(s.row, s.row + s.tokens),
                 v.slice_rows(s.row, s.row + s.tokens));
    if (index != nullptr)
      cache_.stage_index(s.seq, layer, index->k.slice_rows(s.row, s.row + s.tokens));
  }
  cache_.upload(layer);
  const DeviceTensor &k_cache = cache_.k(layer), &v_cache = cache_.v(layer);
  const auto op = [&block](const Segment& s, const char* label) -> const BoundOp& {
    return s.context.at(&block).at(label);
  };
  const DeviceTensor* sinks = weights_->find(layer, TensorRole::kAttnSinks);  // GPT-OSS
  const bool one = step.segments.size() == 1;
  tensor::Tensor iq_host, w_host;
  if (index != nullptr && !one)
    iq_host = backend_.download(index->q), w_host = backend_.download(index->weights);
  const auto run = [&](const Segment& s, const DeviceTensor& q_rows) {
    if (index != nullptr) {
      DeviceTensor iq_rows, w_rows;
      if (!one) {
        iq_rows = backend_.upload(iq_host.slice_rows(s.row, s.row + s.tokens));
        w_rows = backend_.upload(w_host.slice_rows(s.row, s.row + s.tokens));
      }
      const DeviceTensor picked =
          ops_.run1(op(s, "indexer"), {one ? &index->q : &iq_rows, &cache_.index_k(layer),
                                       one ? &index->weights : &w_rows, &s.table});
      return ops_.run1(op(s, "sparse_attention"), {&q_rows, &k_cache, &v_cache, &s.table, &picked});
    }
    const BoundOp& attention = op(s, "attention");
    return sinks != nullptr ? ops_.run1(attention, {&q_rows, &k_cache, &v_cache, &s.table, sinks})
                            : ops_.run1(attention, {&q_rows, &k_cache, &v_cache, &s.table});
  };
  if (one) return run(step.segments[0], q);
  const tensor::Tensor q_host = backend_.download(q);
  const tensor::Shape qs = q.shape();
  tensor::Tensor out = tensor::Tensor::zeros(q.dtype(), {qs[0], qs[1], v_cache.shape()[3]});
  for (const Segment& s : step.segments) {
    const DeviceTensor q_seg = backend_.upload(q_host.slice_rows(s.row, s.row + s.tokens));
    const DeviceTensor o_seg = run(s, q_seg);
    tensor::Tensor rows = out.slice_rows(s.row, s.row + s.tokens);
    backend_.download(o_seg, &rows);
  }
  return backend_.upload(out);
}

std::vector<int64_t> Executor::greedy(const tensor::Tensor& logits) {
  const DeviceTensor l = backend_.upload(logits);
  const tensor::Tensor ids = backend_.download(ops_.run1(op_.argmax, {&l}));
  return glue::ids_of(ids);
}

std::vector<int64_t> Executor::sample(const tensor::Tensor& logits, double temperature,
                                      int64_t top_k, double top_p, uint64_t seed, int64_t step) {
  const BoundOp op = bind_op("sample", {{"temperature", temperature},
                                        {"top_k", top_k},
                                        {"top_p", top_p},
                                        {"seed", seed},
                                        {"step", step}});
  const DeviceTensor l = backend_.upload(logits);
  const tensor::Tensor ids = backend_.download(ops_.run1(op, {&l}));
  return glue::ids_of(ids);
}

}  // namespace h0::model
