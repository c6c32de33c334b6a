#include "model/executor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "base/check.h"
#include "base/error.h"
#include "model/host_glue.h"
#include "tensor/convert.h"

namespace h0::model {

using backend::DeviceTensor;

namespace {

KvGeometry kv_geometry(const Architecture& a, const ExecutorOptions& o) {
  const Attention& at = a.text.attn;
  int64_t kv = at.mla ? at.num_heads : at.num_kv_heads;
  if (o.sharding != nullptr) kv = at.mla ? o.sharding->heads : o.sharding->kv_heads;
  return {a.text.num_layers,
          (o.max_tokens + o.block_size - 1) / o.block_size,
          o.block_size,
          kv,
          at.qk_head_dim(),
          at.value_head_dim(),
          a.text.indexer.n_heads > 0 ? a.text.indexer.head_dim : 0};
}

// The config's (Attention::scale), else qk_head_dim^-0.5; HF DeepseekV3Attention: times mscale²
// under yarn with mscale_all_dim.
double attention_scale(const TextModel& t) {
  double scale = t.attn.scale > 0 ? t.attn.scale : 1.0 / std::sqrt(double(t.attn.qk_head_dim()));
  const RopeScaling& r = t.rope_scaling;
  if (t.attn.mla && r.type == "yarn" && r.mscale_all_dim != 0 && r.factor > 1) {
    const double m = 0.1 * r.mscale_all_dim * std::log(r.factor) + 1.0;
    scale *= m * m;
  }
  return scale;
}

// The Gated DeltaNet heads this rank runs: a tp rank holds num_k_heads / tp key heads and their
// value heads (the planner refuses a tp that does not divide them).
LinearAttention local_linear(const Architecture& arch, const ExecutorOptions& o) {
  LinearAttention la = arch.text.linear;
  const int64_t tp = o.sharding != nullptr && o.sharding->tp ? o.sharding->tp->size() : 1;
  la.num_k_heads /= tp;
  la.num_v_heads /= tp;
  return la;
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
      attention_scale_(attention_scale(arch.text)),
      op_(model_ops(arch, options.dtype, options.act_quant, checkpoint_dtype(arch, ckpt))),
      linear_(local_linear(arch, options)),
      fused_(linear_.fused_projections ? fused_columns(linear_) : FusedColumns{}) {}

Executor::~Executor() = default;

void Executor::free_sequence(int seq) {
  cache_.free_sequence(seq);
  linear_states_.erase(seq);
  mrope_next_.erase(seq);
}

Executor::LinearState& Executor::linear_state(int seq, int64_t layer) {
  auto& layers = linear_states_[seq];
  auto it = layers.find(layer);
  if (it != layers.end()) return it->second;
  const LinearAttention& la = linear_;
  LinearState st{
      backend_.upload(tensor::Tensor::zeros(options_.dtype, {la.conv_dim(), la.conv_kernel - 1})),
      backend_.upload(tensor::Tensor::zeros(tensor::DType::kF32,
                                            {la.num_v_heads, la.k_head_dim, la.v_head_dim}))};
  return layers.emplace(layer, std::move(st)).first->second;
}

// transformers' fix_query_key_value_ordering: in_proj_qkvz's outputs are, per key head g,
// [q (Dk), k (Dk), v (r·Dv), z (r·Dv)] with r = Hv / Hk; in_proj_ba's [b (r), a (r)].
Executor::FusedColumns Executor::fused_columns(const LinearAttention& la) {
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
    ops::Json attrs = {{"context_len", s.start + s.tokens},
                       {"scale", attention_scale_},
                       {"causal", true},
                       {"q_offset", s.start}};
    s.paged_attention = bind_op("paged_attention", attrs);
    if (arch_.text.attn.sliding_window > 0) {  // the sliding layers' (TextModel::layer_kinds)
      attrs["sliding_window"] = arch_.text.attn.sliding_window;
      s.sliding_attention = bind_op("paged_attention", attrs);
    }
    if (op_.index_select.def != nullptr) {  // DeepSeek-V3.2
      s.sparse_attention = bind_op("sparse_attention", attrs);
      for (const char* key : {"topk", "scale"}) attrs[key] = op_.index_select.attrs.at(key);
      s.indexer = bind_op("lightning_indexer", attrs);
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
  const bool linear_layer = t.layer_kind(layer) == TextModel::LayerKind::kLinear;
  DeviceTensor a = linear_layer ? linear_attention(layer, h, step)
                   : t.attn.mla ? latent_attention(layer, h, step)
                                : attention(layer, h, step);
  probe(step, p + (linear_layer ? ".linear_attn" : ".self_attn"), a);
  if (t.sandwich_norms) a = norm(TensorRole::kAttnPostNorm, a);
  x = ops_.run1(op_.add, {&x, &a});
  h = norm(TensorRole::kFfnNorm, x);
  DeviceTensor m = t.is_moe_layer(layer) ? moe(layer, h) : mlp(layer, TensorRole::kFfnGate, h);
  probe(step, p + ".mlp", m);
  if (t.sandwich_norms) m = norm(TensorRole::kFfnPostNorm, m);
  x = ops_.run1(op_.add, {&x, &m});
  probe(step, p, x);
  return x;
}

DeviceTensor Executor::attention(int64_t layer, const DeviceTensor& h, Step& step) {
  const Attention& at = arch_.text.attn;
  const int64_t T = step.tokens, hd = at.head_dim;
  const int64_t H = options_.sharding ? options_.sharding->heads : at.num_heads;
  const int64_t Hkv = options_.sharding ? options_.sharding->kv_heads : at.num_kv_heads;
  DeviceTensor q = linear(layer, TensorRole::kAttnQ, h), k = linear(layer, TensorRole::kAttnK, h),
               v = linear(layer, TensorRole::kAttnV, h);
  std::optional<DeviceTensor> gate;
  if (at.output_gate) {  // Qwen3-Next: q_proj writes [query | gate] per head
    auto [query, g] = glue::split_last(backend_.download(q).reshape({T, H, 2 * hd}), hd);
    q = backend_.upload(query);
    gate = backend_.upload(g.reshape({T, H * hd}));
  }
  if (at.qk_norm) {  // Qwen3: RMSNorm over each head before RoPE
    q.reshape({T * H, hd});
    k.reshape({T * Hkv, hd});
    q = ops_.run1(op_.rmsnorm, {&q, &weights_->get(layer, TensorRole::kAttnQNorm)});
    k = ops_.run1(op_.rmsnorm, {&k, &weights_->get(layer, TensorRole::kAttnKNorm)});
  }
  q.reshape({T, H, hd});
  k.reshape({T, Hkv, hd});
  v.reshape({T, Hkv, hd});
  const bool local = op_.local_rope.def != nullptr &&
                     arch_.text.layer_kind(layer) == TextModel::LayerKind::kSliding;
  const BoundOp& rope = local ? op_.local_rope : op_.rope;  // Gemma 3: the sliding layers' own base
  q = ops_.run1(rope, {&q, &step.positions});
  k = ops_.run1(rope, {&k, &step.positions});
  DeviceTensor o = cached_attention(layer, q, backend_.download(k), backend_.download(v), step);
  o.reshape({T, H * hd});
  if (gate) {  // o · sigmoid(gate)
    const DeviceTensor s = ops_.run1(op_.sigmoid, {&*gate});
    o = ops_.run1(op_.mul, {&o, &s});
  }
  DeviceTensor out =
      linear(layer, TensorRole::kAttnO, o, first_tp_rank());  // row-parallel under TP
  if (options_.sharding) all_reduce(options_.sharding->tp.get(), &out);
  return out;
}

// DeepSeek-V3 (HF DeepseekV3Attention): q through the q_a/q_b low-rank pair, the latent kv
// through kv_a (with the shared rotary key) and kv_b; RoPE only on the rotary dims (interleaved);
// keys and values cached per head, expanded from the latent.
DeviceTensor Executor::latent_attention(int64_t layer, const DeviceTensor& h, Step& step) {
  const Attention& at = arch_.text.attn;
  const int64_t T = step.tokens, nope = at.qk_nope_head_dim, rot = at.qk_rope_head_dim;
  const int64_t H = options_.sharding ? options_.sharding->heads : at.num_heads;
  DeviceTensor q, qa;  // qa: the q latent (q_lora_rank > 0)
  if (at.q_lora_rank > 0) {
    qa = linear(layer, TensorRole::kAttnQA, h);
    qa = ops_.run1(op_.rmsnorm, {&qa, &weights_->get(layer, TensorRole::kAttnQANorm)});
    q = linear(layer, TensorRole::kAttnQB, qa);
  } else {
    q = linear(layer, TensorRole::kAttnQ, h);
  }
  auto [q_nope, q_rot] = glue::split_last(backend_.download(q).reshape({T, H, nope + rot}), nope);
  auto [latent, k_rot] =
      glue::split_last(backend_.download(linear(layer, TensorRole::kAttnKVA, h)), at.kv_lora_rank);
  DeviceTensor c = backend_.upload(latent);
  c = ops_.run1(op_.rmsnorm, {&c, &weights_->get(layer, TensorRole::kAttnKVANorm)});
  auto [k_nope, value] = glue::split_last(backend_.download(linear(layer, TensorRole::kAttnKVB, c))
                                              .reshape({T, H, nope + at.v_head_dim}),
                                          nope);

  DeviceTensor q_rot_dev = backend_.upload(q_rot),
               k_rot_dev = backend_.upload(k_rot.reshape({T, 1, rot}));
  q_rot_dev = ops_.run1(op_.rope, {&q_rot_dev, &step.positions});
  k_rot_dev = ops_.run1(op_.rope, {&k_rot_dev, &step.positions});
  const tensor::Tensor key =
      glue::concat_last(k_nope, glue::repeat_heads(backend_.download(k_rot_dev), H));
  const DeviceTensor query =
      backend_.upload(glue::concat_last(q_nope, backend_.download(q_rot_dev)));
  std::optional<IndexerInputs> index;
  if (arch_.text.indexer.n_heads > 0) index = indexer_inputs(layer, h, qa, step);
  DeviceTensor o = cached_attention(layer, query, key, value, step, index ? &*index : nullptr);
  o.reshape({T, H * at.v_head_dim});
  DeviceTensor out = linear(layer, TensorRole::kAttnO, o, first_tp_rank());
  if (options_.sharding) all_reduce(options_.sharding->tp.get(), &out);
  return out;
}

// transformers' DeepseekV32Indexer: queries wq_b(q latent) and one key k_norm(wk(x)) per token,
// both with half-split RoPE over their first qk_rope_head_dim dims, and the heads' weights
// weights_proj(x) (their H^-0.5 is in the bound indexer's scale).
Executor::IndexerInputs Executor::indexer_inputs(int64_t layer, const DeviceTensor& h,
                                                 const DeviceTensor& q_latent, Step& step) {
  const Indexer& x = arch_.text.indexer;
  const int64_t T = step.tokens;
  IndexerInputs in;
  in.q = linear(layer, TensorRole::kIdxQB, q_latent);
  in.q.reshape({T, x.n_heads, x.head_dim});
  in.q = ops_.run1(op_.index_rope, {&in.q, &step.positions});
  DeviceTensor k = linear(layer, TensorRole::kIdxK, h);
  k = ops_.run1(op_.index_norm, {&k, &weights_->get(layer, TensorRole::kIdxKNorm),
                                 &weights_->get(layer, TensorRole::kIdxKNorm, TensorPiece::kBias)});
  k.reshape({T, 1, x.head_dim});
  in.k =
      backend_.download(ops_.run1(op_.index_rope, {&k, &step.positions})).reshape({T, x.head_dim});
  in.weights = linear(layer, TensorRole::kIdxWeights, h);
  return in;
}

// Gated DeltaNet (transformers' Qwen3NextGatedDeltaNet): the input projections (Qwen3-Next's
// fused ones regrouped on the host), the gating g and beta, then per sequence the causal conv over
// q|k|v and the gated delta rule, each from and into that sequence's state; the gated RMSNorm of
// every value head's output by z, and out_proj. Under TP a rank runs its key heads and their value
// heads (its share of in_proj_qkvz, or of each q|k|v part of in_proj_qkv and the conv), and
// out_proj is row-parallel: the partial sums are all-reduced.
DeviceTensor Executor::linear_attention(int64_t layer, const DeviceTensor& h, Step& step) {
  const LinearAttention& la = linear_;  // this rank's heads
  const int64_t T = step.tokens, hk = la.num_k_heads, hv = la.num_v_heads, dk = la.k_head_dim,
                dv = la.v_head_dim;
  const int64_t key_dim = hk * dk;
  DeviceTensor qkv, z, b, a;
  if (la.fused_projections) {
    const tensor::Tensor qkvz = backend_.download(linear(layer, TensorRole::kLinQKVZ, h));
    const tensor::Tensor ba = backend_.download(linear(layer, TensorRole::kLinBA, h));
    qkv = backend_.upload(glue::gather_columns(qkvz, fused_.qkv));
    z = backend_.upload(glue::gather_columns(qkvz, fused_.z));
    b = backend_.upload(glue::gather_columns(ba, fused_.b));
    a = backend_.upload(glue::gather_columns(ba, fused_.a));
  } else {
    qkv = linear(layer, TensorRole::kLinQKV, h);
    z = linear(layer, TensorRole::kLinZ, h);
    b = linear(layer, TensorRole::kLinB, h);
    a = linear(layer, TensorRole::kLinA, h);
  }
  std::vector<DeviceTensor> gating =
      ops_.run(op_.gdn_gating, {&a, &b, &weights_->get(layer, TensorRole::kLinALog),
                                &weights_->get(layer, TensorRole::kLinDtBias)});
  const DeviceTensor& conv_w = weights_->get(layer, TensorRole::kLinConv);  // [C, K]
  const bool one = step.segments.size() == 1;
  tensor::Tensor qkv_host, g_host, beta_host;
  if (!one)
    qkv_host = backend_.download(qkv), g_host = backend_.download(gating[0]),
    beta_host = backend_.download(gating[1]);
  const auto rows = [&](const tensor::Tensor& t, const Segment& s) {
    return backend_.upload(t.slice_rows(s.row, s.row + s.tokens));
  };
  tensor::Tensor core = tensor::Tensor::zeros(options_.dtype, {T, hv, dv});
  for (const Segment& s : step.segments) {
    LinearState& st = linear_state(s.seq, layer);
    const DeviceTensor x = one ? std::move(qkv) : rows(qkv_host, s);
    std::vector<DeviceTensor> conv = ops_.run(op_.conv1d, {&x, &conv_w, &st.conv});
    st.conv = std::move(conv[1]);
    auto [qk, v] = glue::split_last(backend_.download(conv[0]), 2 * key_dim);
    auto [q, k] = glue::split_last(qk, key_dim);
    const DeviceTensor qd = backend_.upload(q.reshape({s.tokens, hk, dk})),
                       kd = backend_.upload(k.reshape({s.tokens, hk, dk})),
                       vd = backend_.upload(v.reshape({s.tokens, hv, dv}));
    const DeviceTensor g = one ? std::move(gating[0]) : rows(g_host, s),
                       beta = one ? std::move(gating[1]) : rows(beta_host, s);
    std::vector<DeviceTensor> out =
        ops_.run(op_.delta_rule, {&qd, &kd, &vd, &g, &beta, &st.recurrent});
    st.recurrent = std::move(out[1]);
    tensor::Tensor dst = core.slice_rows(s.row, s.row + s.tokens);
    backend_.download(out[0], &dst);
  }
  DeviceTensor o = backend_.upload(core.reshape({T * hv, dv}));
  z.reshape({T * hv, dv});
  o = ops_.run1(op_.norm_gated, {&o, &weights_->get(layer, TensorRole::kLinNorm), &z});
  o.reshape({T, hv * dv});
  DeviceTensor out =
      linear(layer, TensorRole::kLinOut, o, first_tp_rank());  // row-parallel under TP
  if (options_.sharding) all_reduce(options_.sharding->tp.get(), &out);
  return out;
}

// k and v rows of every segment go to its sequence's blocks (and the indexer keys to theirs), the
// layer is uploaded once, then attention runs per segment (one sequence per call) on its rows of
// q [T, H, Dh]: paged_attention, or lightning_indexer and sparse_attention over the keys it picks.
DeviceTensor Executor::cached_attention(int64_t layer, const DeviceTensor& q,
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
  const bool sliding = arch_.text.layer_kind(layer) == TextModel::LayerKind::kSliding &&
                       arch_.text.attn.sliding_window > 0;
  const auto op = [sliding](const Segment& s) -> const BoundOp& {
    return sliding ? s.sliding_attention : s.paged_attention;
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
          ops_.run1(s.indexer, {one ? &index->q : &iq_rows, &cache_.index_k(layer),
                                one ? &index->weights : &w_rows, &s.table});
      return ops_.run1(s.sparse_attention, {&q_rows, &k_cache, &v_cache, &s.table, &picked});
    }
    return sinks != nullptr ? ops_.run1(op(s), {&q_rows, &k_cache, &v_cache, &s.table, sinks})
                            : ops_.run1(op(s), {&q_rows, &k_cache, &v_cache, &s.table});
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

// A dense MLP: `gate` is kFfnGate (the layer's) or kSharedGate (its shared experts); up and down
// are the two roles after it.
DeviceTensor Executor::mlp(int64_t layer, TensorRole gate, const DeviceTensor& h) {
  const auto up = TensorRole(uint8_t(gate) + 1), down = TensorRole(uint8_t(gate) + 2);
  const DeviceTensor g = linear(layer, gate, h), u = linear(layer, up, h);
  DeviceTensor a;
  if (op_.swiglu.def != nullptr) {
    a = ops_.run1(op_.swiglu, {&g, &u});
  } else {  // act(gate) · up (Gemma 3: gelu_pytorch_tanh)
    const DeviceTensor act = ops_.run1(op_.mlp_act, {&g});
    a = ops_.run1(op_.mul, {&act, &u});
  }
  DeviceTensor out = linear(layer, down, a, first_tp_rank());  // row-parallel under TP
  if (options_.sharding) all_reduce(options_.sharding->tp.get(), &out);
  return out;
}

// Expert parallelism's dispatch: the routes to this rank's experts [first, last), renumbered
// from 0; a route to another rank's expert keeps weight 0 (and a valid id).
std::vector<DeviceTensor> Executor::local_routes(std::vector<DeviceTensor> routed, int64_t first,
                                                 int64_t last) {
  tensor::Tensor w = backend_.download(routed[0]), ids = backend_.download(routed[1]);
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
  backend_.upload_into(w, &routed[0]);
  backend_.upload_into(ids, &routed[1]);
  return routed;
}

DeviceTensor Executor::moe_stored(const StoredExperts& experts, const DeviceTensor& h,
                                  const std::vector<DeviceTensor>& routed) {
  const tensor::Tensor x = backend_.download(h);
  const tensor::Tensor w = backend_.download(routed[0]), ids = backend_.download(routed[1]);
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
      expert_bytes_ / 2 / std::max<int64_t>(1, experts.widened_bytes()), 1, experts.count());
  std::vector<double> sum(size_t(t * d), 0.0);
  const size_t row_bytes = size_t(d) * tensor::dtype_size(x.dtype());
  std::vector<int64_t> slot(size_t(experts.count()), -1);
  // Groups of equal size (8 experts in groups of 7: 4 and 4).
  const size_t groups = (used.size() + size_t(group) - 1) / size_t(group);
  const size_t per = groups == 0 ? 1 : (used.size() + groups - 1) / groups;
  for (size_t g0 = 0; g0 < used.size(); g0 += per) {
    const std::vector<int64_t> chunk(used.begin() + long(g0),
                                     used.begin() + long(std::min(used.size(), g0 + per)));
    for (size_t j = 0; j < chunk.size(); ++j) slot[size_t(chunk[j])] = int64_t(j);
    // Route i's expert in this group, or -1.
    const auto slot_of = [&](int64_t i) { return wd[i] != 0 ? slot[size_t(id[i])] : -1; };
    // The tokens routed into this group, each with its routes there in their order (padded with
    // weight-0 routes to the group's first expert).
    std::vector<int64_t> rows;
    int64_t width = 1;
    for (int64_t r = 0; r < t; ++r) {
      int64_t n = 0;
      for (int64_t j = 0; j < k; ++j) n += slot_of(r * k + j) >= 0;
      if (n > 0) rows.push_back(r);
      width = std::max(width, n);
    }
    const auto m = int64_t(rows.size());
    tensor::Tensor xs = tensor::Tensor::empty(x.dtype(), {m, d});
    tensor::Tensor ws = tensor::Tensor::zeros(tensor::DType::kF32, {m, width});
    tensor::Tensor is = tensor::Tensor::zeros(tensor::DType::kI32, {m, width});
    for (int64_t i = 0; i < m; ++i) {
      const int64_t r = rows[size_t(i)];
      std::memcpy(static_cast<std::byte*>(xs.mutable_data()) + size_t(i) * row_bytes,
                  static_cast<const std::byte*>(x.data()) + size_t(r) * row_bytes, row_bytes);
      int64_t n = 0;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t s = slot_of(r * k + j);
        if (s < 0) continue;
        ws.mutable_data_as<float>()[i * width + n] = wd[r * k + j];
        is.mutable_data_as<int32_t>()[i * width + n] = int32_t(s);
        ++n;
      }
    }
    // The group's stacks, written on the host and copied into the backend's: both kept from step
    // to step at `group` experts (rows past the chunk's are stale and never routed to).
    ExpertScratch& sc = expert_scratch_;
    if (sc.capacity != group || sc.host.size() != (experts.biased() ? 6u : 3u)) {
      sc.device.clear();
      sc.host = experts.stacks(group);
      for (const tensor::Tensor& part : sc.host) sc.device.push_back(backend_.upload(part));
      sc.capacity = group;
    }
    experts.widen(chunk, &sc.host);
    for (size_t i = 0; i < sc.host.size(); ++i) backend_.upload_into(sc.host[i], &sc.device[i]);
    const DeviceTensor xd = backend_.upload(xs), wdv = backend_.upload(ws),
                       idv = backend_.upload(is);
    std::vector<const DeviceTensor*> in = {&xd, &wdv, &idv};
    for (const DeviceTensor& p : sc.device) in.push_back(&p);
    const tensor::Tensor y = glue::to_f32(backend_.download(ops_.run1(op_.moe_experts, in)));
    for (int64_t i = 0; i < m; ++i) {
      const float* yr = y.data_as<float>() + i * d;
      double* dst = &sum[size_t(rows[size_t(i)] * d)];
      for (int64_t c = 0; c < d; ++c) dst[c] += double(yr[c]);
    }
    for (const int64_t e : chunk) slot[size_t(e)] = -1;
  }
  return backend_.upload(
      glue::to_dtype(tensor::Tensor::copy_of(tensor::DType::kF64, {t, d}, sum.data()), x.dtype()));
}

DeviceTensor Executor::moe(int64_t layer, const DeviceTensor& h) {
  const Moe& m = arch_.text.moe;
  const DeviceTensor logits = linear(layer, TensorRole::kRouter, h,
                                     m.router_bias);  // scaled_linear if a quantizer stored it fp8
  const DeviceTensor* bias = weights_->find(layer, TensorRole::kRouterBias);
  std::vector<DeviceTensor> routed =
      bias ? ops_.run(op_.moe_gate, {&logits, bias}) : ops_.run(op_.moe_gate, {&logits});
  const Sharding* sh = options_.sharding;
  if (sh != nullptr && !sh->experts_split_by_tp)
    routed = local_routes(std::move(routed), sh->expert_begin, sh->expert_end);
  DeviceTensor y;
  if (const StoredExperts* stored = weights_->stored_experts(layer)) {
    y = moe_stored(*stored, h, routed);
  } else {
    const ExpertStack& e = weights_->experts(layer);
    y = e.b_gate
            ? ops_.run1(op_.moe_experts, {&h, &routed[0], &routed[1], &e.gate, &e.up, &e.down,
                                          &*e.b_gate, &*e.b_up, &*e.b_down})
            : ops_.run1(op_.moe_experts, {&h, &routed[0], &routed[1], &e.gate, &e.up, &e.down});
  }
  // Combine: under EP each token's experts ran on their ranks; under TP each expert's partial sums.
  if (sh != nullptr) all_reduce(sh->experts_split_by_tp ? sh->tp.get() : sh->ep.get(), &y);
  if (m.num_shared_experts > 0) {
    DeviceTensor s = mlp(layer, TensorRole::kSharedGate, h);
    if (m.shared_expert_gate) {  // Qwen2-MoE: s · sigmoid(h·gᵀ), one gate value per token
      const DeviceTensor logit = linear(layer, TensorRole::kSharedExpertGate, h, false);
      const tensor::Tensor g = backend_.download(ops_.run1(op_.sigmoid, {&logit}));  // [T, 1]
      // mul takes equal shapes: the per-token value is repeated over the hidden size on the host.
      const DeviceTensor gate = backend_.upload(glue::repeat_heads(g, arch_.text.hidden_size)
                                                    .reshape({g.dim(0), arch_.text.hidden_size}));
      s = ops_.run1(op_.mul, {&s, &gate});
    }
    y = ops_.run1(op_.add, {&y, &s});
  }
  return y;
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
