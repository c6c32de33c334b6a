#include "plan/memory_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "base/error.h"
#include "model/config/block.h"
#include "model/config/tower.h"
#include "model/weights/inventory.h"

namespace h0::plan {
namespace {

using model::Architecture;
using model::WeightInfo;
using tensor::DType;

constexpr int64_t kQuantBlock = 128;  // fp8 block edge, int4 group size
constexpr double kActivationSlack = 1.25;
constexpr int64_t kSamplerRows = 256;  // vLLM's default max_num_seqs

struct FormatRow {
  WeightFormat format;
  const char* name;
};
constexpr FormatRow kFormats[] = {{WeightFormat::kBF16, "bf16"},  {WeightFormat::kF16, "f16"},
                                  {WeightFormat::kF32, "f32"},    {WeightFormat::kFP8, "fp8"},
                                  {WeightFormat::kINT8, "int8"},  {WeightFormat::kINT4, "int4"},
                                  {WeightFormat::kMXFP4, "mxfp4"}};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool is_quantized_format(WeightFormat f) {
  return f == WeightFormat::kFP8 || f == WeightFormat::kINT8 || f == WeightFormat::kINT4 ||
         f == WeightFormat::kMXFP4;
}

DType compute_dtype(WeightFormat f) {
  return f == WeightFormat::kF16   ? DType::kF16
         : f == WeightFormat::kF32 ? DType::kF32
                                   : DType::kBF16;
}

// The inventory in the format's layout. For the quantized formats the inventory is built as an
// fp8 checkpoint would be, which marks exactly the decoder's linear weights (quantized = true);
// only fp8 constrains the split to its 128×128 blocks.
model::Inventory inventory_for(const Architecture& arch, const MemoryOptions& o) {
  model::InventoryOptions io;
  io.dtype = compute_dtype(o.weights);
  io.include_mtp = o.include_mtp;
  io.quantized = is_quantized_format(o.weights);
  if (!io.quantized) return model::build_inventory(arch, io);
  if (o.weights ==
      WeightFormat::kMXFP4) {  // the layout of its own quantization_config (GPT-OSS: the experts)
    Architecture as_mxfp4 = arch;
    as_mxfp4.quantization = {"mxfp4", 0, 0};
    return model::build_inventory(as_mxfp4, io);
  }
  Architecture as_quantized = arch;
  const int64_t block = o.weights == WeightFormat::kFP8 ? kQuantBlock : 1;
  as_quantized.quantization = {"fp8", block, block};
  return model::build_inventory(as_quantized, io);
}

// Bytes of one rank's slice of `w`; scales are counted with their weights.
int64_t slice_bytes(const WeightInfo& w, const Slice& s, WeightFormat f) {
  if (f == WeightFormat::kMXFP4)
    return s.numel() *
           static_cast<int64_t>(tensor::dtype_size(w.dtype));  // as laid out: u8 blocks and scales
  if (w.role == model::WeightRole::kQuantScale) return 0;
  if (!w.quantized) return s.numel() * static_cast<int64_t>(tensor::dtype_size(w.dtype));
  const int64_t rows = s.shape[0], cols = s.shape[1];
  switch (f) {
    case WeightFormat::kFP8:
      return rows * cols + ceil_div(rows, kQuantBlock) * ceil_div(cols, kQuantBlock) * 4;
    case WeightFormat::kINT8:
      return rows * cols + rows * 2;
    case WeightFormat::kINT4:
      return ceil_div(rows * cols, 2) + rows * ceil_div(cols, kQuantBlock) * 4;
    default:
      return s.numel() * static_cast<int64_t>(tensor::dtype_size(w.dtype));
  }
}

// The weights of every distinct (stage, tp rank, ep group, etp rank); dp replicas share them.
class WeightTally {
 public:
  WeightTally(const Architecture& arch, const ParallelPlan& plan, const MemoryOptions& o)
      : arch_(arch),
        plan_(plan),
        format_(o.weights),
        as_stored_(o.checkpoint != nullptr),
        inventory_(as_stored_ ? *o.checkpoint : inventory_for(arch, o)) {}

  int64_t bytes(const RankCoord& c) {
    const auto key = std::make_tuple(c.pp_rank, c.tp_rank, c.ep_rank, c.etp_rank);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    int64_t sum = 0;
    for (const WeightInfo& w : inventory_.weights) {
      const auto s = shard_of(w, arch_, plan_, c);
      if (!s) continue;
      sum += as_stored_ ? s->numel() * static_cast<int64_t>(tensor::dtype_size(w.dtype))
                        : slice_bytes(w, *s, format_);
    }
    return cache_[key] = sum;
  }

 private:
  const Architecture& arch_;
  const ParallelPlan& plan_;
  WeightFormat format_;
  bool as_stored_;
  model::Inventory inventory_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, int64_t> cache_;
};

// Layer `l`'s mixer block (config/block.h; every layer of a parsed config has one).
const model::Block& mixer_of(const Architecture& arch, int64_t l) {
  return model::block_of(arch.text, l, model::BlockSlot::kMixer);
}

// One sequence's fixed state (linear attention) on a rank holding `layers`.
int64_t state_bytes_of_layers(const Architecture& arch, std::pair<int64_t, int64_t> layers,
                              int64_t tp, DType act) {
  int64_t bytes = 0;
  for (int64_t l = layers.first; l < layers.second; ++l)
    bytes += mixer_of(arch, l).state_bytes(arch.text, tp, int64_t(tensor::dtype_size(act)));
  return bytes;
}

// Layers [begin, end)'s KV bytes per token of a sequence of `len` tokens (0: as if no window
// cut), each block's cache per its mixer: a windowed layer at min(window, len) / len, a linear
// attention at none; `index_only`: the indexer keys' part alone.
int64_t kv_bytes_of_layers(const Architecture& arch, std::pair<int64_t, int64_t> layers,
                           int64_t kv_heads, DType kv, int64_t len, bool index_only = false) {
  const int64_t size = int64_t(tensor::dtype_size(kv));
  int64_t whole = 0, windowed = 0, window = 0;
  for (int64_t l = layers.first; l < layers.second; ++l) {
    const model::BlockCache c = mixer_of(arch, l).cache(arch.text, l, kv_heads);
    const int64_t bytes = (index_only ? c.index_elements : c.elements) * size;
    if (len > 0 && c.window > 0 && c.window < len) {
      windowed += bytes;
      window = c.window;
    } else {
      whole += bytes;
    }
  }
  return whole + (windowed > 0 ? ceil_div(windowed * window, len) : 0);
}

bool stage_has_moe(const Architecture& arch, std::pair<int64_t, int64_t> layers) {
  for (int64_t l = layers.first; l < layers.second; ++l) {
    if (arch.text.is_moe_layer(l)) return true;
  }
  return false;
}

bool stage_has_dense(const Architecture& arch, std::pair<int64_t, int64_t> layers) {
  for (int64_t l = layers.first; l < layers.second; ++l) {
    if (!arch.text.is_moe_layer(l)) return true;
  }
  return false;
}

int64_t activation_bytes(const Architecture& arch, const ParallelPlan& plan, const MemoryOptions& o,
                         const RankMemory& r) {
  const model::TextModel& t = arch.text;
  const model::Attention& a = t.attn;
  const int64_t T = o.max_batch_tokens, D = t.hidden_size,
                c = tensor::dtype_size(compute_dtype(o.weights));
  const int64_t heads = a.num_heads / plan.tp;
  // q and o of this rank's heads, k and v of its kv heads (MLA: expanded per head from the latent).
  const int64_t kv_rows = model::kv_split_by_heads(t) ? r.kv_heads : heads;
  const int64_t attn = T * c * (heads + kv_rows) * (a.qk_head_dim() + a.value_head_dim());
  int64_t peak = attn;
  if (stage_has_dense(arch, r.layers))
    peak = std::max(peak, 3 * T * c * ceil_div(t.intermediate_size, plan.tp));
  if (stage_has_moe(arch, r.layers)) {
    const model::Moe& m = t.moe;
    peak = std::max(peak, T * m.experts_per_token * c *
                              (3 * ceil_div(m.expert_intermediate_size, plan.etp()) + D));
    peak = std::max(peak, 3 * T * c * ceil_div(m.shared_inter(), plan.tp));
  }
  if (r.coord.pp_rank == plan.pp - 1) {
    const int64_t rows = std::min(T, std::max(o.concurrency, kSamplerRows));
    peak = std::max(peak, rows * (ceil_div(t.vocab_size, plan.tp) + t.vocab_size) * 4);
  }
  return static_cast<int64_t>(
      std::ceil(kActivationSlack * static_cast<double>(2 * T * D * c + peak)));
}

// The vision tower's activations at the largest image (memory_plan.h); 0 without a tower that
// sizes them (Tower::activation_bytes).
int64_t vision_activation_bytes(const Architecture& arch, const MemoryOptions& o) {
  const model::Tower* tower = model::tower_of(arch);
  const int64_t bytes =
      tower ? tower->activation_bytes(arch, o.max_image_pixels,
                                      int64_t(tensor::dtype_size(compute_dtype(o.weights))))
            : 0;
  return static_cast<int64_t>(std::ceil(kActivationSlack * static_cast<double>(bytes)));
}

int64_t comm_bytes(const Architecture& arch, const ParallelPlan& plan, const MemoryOptions& o,
                   const RankMemory& r) {
  const int64_t T = o.max_batch_tokens, D = arch.text.hidden_size,
                c = tensor::dtype_size(compute_dtype(o.weights));
  int64_t bytes = 0;
  if (plan.tp > 1) bytes += T * D * c;
  if (plan.ep > 1 && stage_has_moe(arch, r.layers))
    bytes += 2 * T * arch.text.moe.experts_per_token * D * c;
  const int64_t directions = (r.coord.pp_rank > 0) + (r.coord.pp_rank < plan.pp - 1);
  bytes += directions * 2 * T * D * c;
  return bytes;
}

std::string sizes_of(int64_t n, int64_t parts) {
  if (n % parts == 0) return std::to_string(n / parts) + " each";
  std::string out;
  for (int64_t i = 0; i < parts; ++i) {
    const auto [b, e] = split(n, parts, i);
    if (i > 0) out += '/';
    out += std::to_string(e - b);
  }
  return out + " (uneven)";
}

std::vector<std::string> plan_notes(const Architecture& arch, const ParallelPlan& plan,
                                    const MemoryOptions& o) {
  const model::TextModel& t = arch.text;
  std::vector<std::string> notes;
  if (const int64_t x = kv_head_replication(arch, plan); x > 1) {
    notes.push_back("kv heads replicated x" + std::to_string(x) + " (" +
                    std::to_string(t.attn.num_kv_heads) + " kv heads over tp " +
                    std::to_string(plan.tp) + ")");
  }
  if (plan.pp > 1)
    notes.push_back("layers " + std::to_string(t.num_layers) + " over pp " +
                    std::to_string(plan.pp) + ": " + sizes_of(t.num_layers, plan.pp));
  if (arch.is_moe()) {
    notes.push_back("experts " + std::to_string(t.moe.num_experts) + " over ep " +
                    std::to_string(plan.ep) + ": " + sizes_of(t.moe.num_experts, plan.ep) +
                    ", each tensor-split over etp " + std::to_string(plan.etp()));
  }
  if (plan.tp > 1)
    notes.push_back("vocab " + std::to_string(t.vocab_size) + " over tp " +
                    std::to_string(plan.tp) + ": " + sizes_of(t.vocab_size, plan.tp));
  if (const model::Tower* tower = model::tower_of(arch))
    tower->plan_notes(arch, o.max_image_pixels, &notes);
  if (t.tie_word_embeddings && plan.pp > 1)
    notes.push_back("tied embedding: held by the first stage and, as the LM head, by the last");
  if (t.num_nextn_predict_layers > 0 && !o.include_mtp)
    notes.push_back("MTP layers not loaded (speculative decoding off)");
  // What each block says of itself (a window, a state, an indexer), in the registry's order.
  for (const model::Block* b : model::blocks()) {
    const model::PlanFacts facts{model::layers_running(t, *b),
                                 t.num_layers,
                                 plan.tp,
                                 plan.dp,
                                 ceil_div(o.concurrency, plan.dp),
                                 int64_t(tensor::dtype_size(compute_dtype(o.weights)))};
    if (facts.layers > 0) b->plan_notes(t, facts, &notes);
  }
  if (!arch.kv_basis.empty()) {  // a family the executor does not model: what the KV rests on
    std::string basis;
    for (const std::string& b : arch.kv_basis) basis += (basis.empty() ? "" : "; ") + b;
    notes.push_back("KV cache from the config's " + basis);
  }
  for (const std::string& n : arch.not_understood) notes.push_back("not understood: " + n);
  if (o.checkpoint != nullptr)
    notes.push_back("weights as the checkpoint stores them (" +
                    std::to_string(o.checkpoint->weights.size()) +
                    " tensors, split by the name-pattern rule table)");
  return notes;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / kGiB);
  return buf;
}

std::string rank_name(const RankMemory& r) {
  return "rank " + std::to_string(r.coord.rank) + " (stage " + std::to_string(r.coord.pp_rank) +
         ")";
}

void resolve_defaults(const Architecture& arch, MemoryOptions& o) {
  if (o.max_model_len == 0) {
    o.max_model_len = arch.text.max_position_embeddings > 0
                          ? std::min<int64_t>(arch.text.max_position_embeddings, 8192)
                          : 8192;
  }
  const std::pair<const char*, int64_t> positive[] = {{"block_size", o.block_size},
                                                      {"max_model_len", o.max_model_len},
                                                      {"concurrency", o.concurrency},
                                                      {"max_batch_tokens", o.max_batch_tokens}};
  for (const auto& [name, value] : positive) {
    if (value < 1) throw InputError(name, "must be >= 1, got " + std::to_string(value));
  }
  if (!(o.device_memory > 0))
    throw InputError("device_memory", "must be given and > 0 (e.g. 80GiB)");
  if (!(o.utilization > 0 && o.utilization <= 1))
    throw InputError("utilization", "must be in (0, 1]");
  if (!(o.reserve >= 0)) throw InputError("reserve", "must be >= 0");
}

// The verdict: every rank's fixed memory within usable, one sequence of max_model_len per
// replica, and the whole concurrency over the dp replicas.
void decide(MemoryPlan& p) {
  const RankMemory* worst = &p.ranks[0];
  const RankMemory* limiting = &p.ranks[0];
  for (const RankMemory& r : p.ranks) {
    if (r.free_for_kv < worst->free_for_kv) worst = &r;
    if (r.kv_tokens < limiting->kv_tokens) limiting = &r;
  }
  p.kv_tokens = limiting->kv_tokens;
  const int64_t per_replica = ceil_div(p.required_tokens, p.plan.dp);
  p.headroom = INT64_MAX;
  for (const RankMemory& r : p.ranks)
    p.headroom = std::min(p.headroom, r.free_for_kv - per_replica * r.kv_bytes_per_token);
  p.fits = false;
  if (worst->free_for_kv < 0) {
    const RankMemory& r = *worst;
    p.reason = rank_name(r) + ": weights " + gib(r.weights) + " + activations " +
               gib(r.activations) + " + comm " + gib(r.comm) + " + reserve " + gib(r.reserve) +
               (r.state > 0 ? " + linear-attention state " + gib(r.state) : std::string()) +
               " exceed usable " + gib(p.usable);
  } else if (p.kv_tokens < p.options.max_model_len) {
    p.reason = rank_name(*limiting) + ": KV cache holds " + with_commas(p.kv_tokens) +
               " tokens, less than one sequence of max_model_len " +
               with_commas(p.options.max_model_len);
  } else if (p.kv_tokens * p.plan.dp < p.required_tokens) {
    p.reason =
        rank_name(*limiting) + ": KV cache holds " + with_commas(p.kv_tokens) + " tokens" +
        (p.plan.dp > 1 ? " per replica (x dp " + std::to_string(p.plan.dp) + ")" : std::string()) +
        ", but max_model_len " + with_commas(p.options.max_model_len) + " x concurrency " +
        std::to_string(p.options.concurrency) + " needs " + with_commas(p.required_tokens);
  } else {
    p.fits = true;
  }
}

}  // namespace

std::optional<WeightFormat> parse_weight_format(std::string_view name) {
  static constexpr std::pair<std::string_view, WeightFormat> kAliases[] = {
      {"bfloat16", WeightFormat::kBF16},
      {"fp16", WeightFormat::kF16},
      {"float16", WeightFormat::kF16},
      {"fp32", WeightFormat::kF32},
      {"float32", WeightFormat::kF32}};
  for (const FormatRow& row : kFormats) {
    if (name == row.name) return row.format;
  }
  for (const auto& [alias, format] : kAliases) {
    if (name == alias) return format;
  }
  return std::nullopt;
}

const char* weight_format_name(WeightFormat format) {
  for (const FormatRow& row : kFormats) {
    if (row.format == format) return row.name;
  }
  return "?";
}

WeightFormat checkpoint_weight_format(const Architecture& arch, std::string* why) {
  std::string source;
  WeightFormat f = WeightFormat::kBF16;
  if (arch.quantization.method == "fp8") {
    f = WeightFormat::kFP8;
    source = "quantization_config fp8";
    if (arch.quantization.block_rows > 0) {
      source += " [" + std::to_string(arch.quantization.block_rows) + ", " +
                std::to_string(arch.quantization.block_cols) + "]";
    }
  } else if (arch.quantization.method == "mxfp4" && arch.text.moe.fused_experts) {
    f = WeightFormat::kMXFP4;
    source = "quantization_config mxfp4 (the routed experts; the rest bf16)";
  } else if (arch.text.dtype == DType::kF16 || arch.text.dtype == DType::kF32) {
    f = *arch.text.dtype == DType::kF16 ? WeightFormat::kF16 : WeightFormat::kF32;
    source = std::string("torch_dtype ") + tensor::dtype_name(*arch.text.dtype);
  } else {
    source = arch.text.dtype ? "torch_dtype bf16" : "bf16 (the config names no dtype)";
  }
  if (!arch.quantization.method.empty() && f != WeightFormat::kFP8 && f != WeightFormat::kMXFP4) {
    source += "; quantization_config " + arch.quantization.method + " is not planned as such";
  }
  if (why != nullptr) *why = source;
  return f;
}

const char* weight_format_names() { return "bf16, f16, f32, fp8, int8, int4, mxfp4"; }

std::optional<DType> parse_kv_dtype(std::string_view name) {
  if (name == "fp8") return DType::kF8E4M3;
  const auto d = tensor::parse_dtype(name);
  if (!d || !tensor::is_float(*d)) return std::nullopt;
  return d;
}

int64_t model_kv_bytes_per_token(const Architecture& arch, DType kv_dtype, int64_t max_model_len) {
  return kv_bytes_of_layers(arch, {0, arch.text.num_layers}, arch.text.attn.num_kv_heads, kv_dtype,
                            max_model_len);
}

std::vector<KvLayerType> kv_by_layer_type(const Architecture& arch, const MemoryPlan& p) {
  std::vector<KvLayerType> out;
  if (p.ranks.empty()) return out;
  const RankMemory& r = p.ranks.front();
  const int64_t size = int64_t(tensor::dtype_size(p.options.kv_dtype)),
                len = p.options.max_model_len;
  int64_t whole = 0, windowed = 0, window = 0, with_state = 0, attn = 0, index = 0;
  const char* kind = "";
  for (int64_t l = r.layers.first; l < r.layers.second; ++l) {
    const model::Block& b = mixer_of(arch, l);
    with_state += b.keeps_state();
    const model::BlockCache c = b.cache(arch.text, l, r.kv_heads);
    if (c.elements == 0) continue;
    attn = (c.elements - c.index_elements) * size;
    index = c.index_elements * size;
    if (len > 0 && c.window > 0 && c.window < len) {
      ++windowed;
      window = c.window;
    } else {
      if (whole++ == 0) kind = c.kind;
    }
  }
  if (whole > 0) out.push_back({kind, whole, attn, whole * attn, false, ""});
  if (windowed > 0)
    out.push_back({"sliding window", windowed, attn, ceil_div(windowed * attn * window, len), false,
                   "window " + with_commas(window) + " of " + with_commas(len) + " tokens"});
  // The indexer keys follow the same layers (their sliding share rounded with the rest).
  if (index > 0 && whole + windowed > 0)
    out.push_back({"indexer keys", whole + windowed, index, r.index_bytes_per_token, false, ""});
  if (with_state > 0)
    out.push_back({"linear-attention state", with_state, r.state_bytes_per_sequence / with_state,
                   r.state_bytes_per_sequence, true, ""});
  return out;
}

std::vector<LayerChoice> representative_layers(const Architecture& arch) {
  const model::TextModel& t = arch.text;
  const model::Inventory inv =
      model::build_inventory(arch, {.dtype = std::nullopt, .quantized = true});
  std::vector<int64_t> layer_bytes(static_cast<size_t>(std::max<int64_t>(t.num_layers, 0)), 0);
  int64_t embedding = 0;
  for (const WeightInfo& w : inv.weights) {
    if (w.vision_layer >= 0 || w.mtp) continue;
    if (w.layer >= 0 && w.layer < t.num_layers) {
      layer_bytes[static_cast<size_t>(w.layer)] += w.bytes();
    } else if (w.tensor == model::TensorRole::kEmbed) {
      embedding += w.bytes();
    }
  }
  std::vector<LayerChoice> out;
  std::map<std::string, size_t> seen;
  for (int64_t l = 0; l < t.num_layers; ++l) {
    const std::string block = mixer_of(arch, l).describe(t, l) + ", " +
                              model::block_of(t, l, model::BlockSlot::kFeedForward).describe(t, l);
    const auto [it, fresh] = seen.emplace(block, out.size());
    if (fresh) out.push_back({l, block, layer_bytes[static_cast<size_t>(l)] + embedding, {}});
    out[it->second].layers.push_back(l);
  }
  return out;
}

std::string describe(const LayerChoice& c, double device_memory) {
  std::string text = std::to_string(c.layer) + " (" + c.block + "; " + gib(c.bytes);
  if (device_memory > 0 && static_cast<double>(c.bytes) > device_memory)
    text += ", over the device's " + gib(static_cast<int64_t>(device_memory));
  if (c.layers.size() > 1) text += "; " + std::to_string(c.layers.size()) + " layers like it";
  return text + ")";
}

nlohmann::json to_json(const LayerChoice& c, double device_memory) {
  nlohmann::json j = {
      {"layer", c.layer}, {"block", c.block}, {"bytes", c.bytes}, {"layers", c.layers}};
  if (device_memory > 0) j["fits_device"] = static_cast<double>(c.bytes) <= device_memory;
  return j;
}

MemoryPlan plan_memory(const Architecture& arch, const ParallelPlan& plan, MemoryOptions options) {
  resolve_defaults(arch, options);
  MemoryPlan p;
  p.plan = plan;
  p.options = options;
  p.notes = plan_notes(arch, plan, options);
  p.usable = static_cast<int64_t>(options.device_memory * options.utilization);
  p.kv_bytes_per_token = model_kv_bytes_per_token(arch, options.kv_dtype, options.max_model_len);
  p.required_tokens = options.max_model_len * options.concurrency;
  WeightTally tally(arch, plan, options);
  const int64_t last = plan.pp - 1;
  for (int64_t rank = 0; rank < plan.world(); ++rank) {
    RankMemory r;
    r.coord = coord_of(plan, rank);
    r.layers = stage_layers(arch, plan, r.coord.pp_rank);
    r.experts = rank_experts(arch, plan, r.coord.ep_rank);
    if (r.coord.pp_rank == 0 || r.coord.pp_rank == last)
      r.vocab = rank_vocab(arch, plan, r.coord.tp_rank);
    r.kv_heads = kv_heads_per_rank(arch, plan);
    r.weights = tally.bytes(r.coord);
    r.activations = activation_bytes(arch, plan, options, r);
    if (r.coord.pp_rank == 0) {
      r.vision_activations = vision_activation_bytes(arch, options);
      r.activations = std::max(r.activations, r.vision_activations);
    }
    r.comm = comm_bytes(arch, plan, options, r);
    r.reserve = static_cast<int64_t>(options.reserve);
    r.kv_bytes_per_token =
        kv_bytes_of_layers(arch, r.layers, r.kv_heads, options.kv_dtype, options.max_model_len);
    r.index_bytes_per_token = kv_bytes_of_layers(arch, r.layers, r.kv_heads, options.kv_dtype,
                                                 options.max_model_len, true);
    r.state_bytes_per_sequence =
        state_bytes_of_layers(arch, r.layers, plan.tp, compute_dtype(options.weights));
    r.state = r.state_bytes_per_sequence * ceil_div(options.concurrency, plan.dp);
    r.free_for_kv = p.usable - r.weights - r.activations - r.comm - r.reserve - r.state;
    if (r.free_for_kv > 0 && r.kv_bytes_per_token > 0) {
      r.kv_blocks = r.free_for_kv / (r.kv_bytes_per_token * options.block_size);
      r.kv_tokens = r.kv_blocks * options.block_size;
    }
    p.total_weights += r.weights;
    p.ranks.push_back(r);
  }
  decide(p);
  return p;
}

}  // namespace h0::plan
