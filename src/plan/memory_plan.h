// The memory planner: for a model, a parallel plan and serving limits, the device memory each
// rank needs (weights, activations, communication buffers, a reserve), how much KV cache fits in
// what is left, and whether the plan fits.
//
// Weights: the sum over the inventory of the slices shard_of gives the rank, in the chosen
// format. Linear weights of the decoder (the inventory's projections) take the format; the
// rest (embeddings, LM head, norms, routers, biases, vision tower) stay in the compute dtype:
//   bf16/f16/f32  2/2/4 bytes per element
//   fp8           1 byte + an f32 scale per 128×128 block (DeepSeek-V3's checkpoint layout)
//   int8          1 byte + a bf16 scale per output channel
//   int4          ½ byte + a bf16 scale and a bf16 zero per group of 128 along the input dim
// With `checkpoint` (a model the executor does not model: model/weights/checkpoint_inventory.h),
// the weights are the checkpoint's own tensors as stored, every byte of them (the format is
// ignored). KV cache, bytes per token of one layer: 2·kv_heads_per_rank·head_dim·size(kv dtype) for
// standard attention; (kv_lora_rank + qk_rope_head_dim)·size for MLA (one latent, held whole by
// every tp rank). A layer's KV lives on the stage holding the layer; MTP layers hold none.
// A sliding-window layer holds at most `sliding_window` tokens of a sequence: over a sequence of
// max_model_len it costs min(window, max_model_len) / max_model_len of a full layer's bytes per
// token (rounded up). DeepSeek-V3.2's lightning indexer adds, per attention layer, one key of
// index_head_dim per token in the KV dtype (every rank: the indexer is replicated); shown apart as
// "idx B/tok" and included in "KV B/tok".
// A linear-attention layer (Gated DeltaNet) holds no KV but a fixed state per sequence: its conv
// window conv_dim/tp · (conv_kernel − 1) in the compute dtype plus the recurrent state
// num_v_heads/tp · k_head_dim · v_head_dim in f32. Every sequence being served holds one, so a
// rank sets aside state bytes per sequence × ceil(concurrency / dp) before the KV blocks.
// Activations (T = max_batch_tokens, c = compute dtype size), per rank:
//   1.25 · (2·T·D·c  [residual + normed hidden]
//           + max(attention: T·c·(q + k + v + o widths of the rank's heads),
//                 dense MLP: 3·T·c·ceil(F/tp)  [gate, up, activation],
//                 MoE: T·k·c·(3·ceil(F_e/etp) + D)  [fused-MoE workspace of the rank's T·k routed
//                 pairs], logits (last stage): R·(ceil(V/tp) + V)·4, R = min(T, max(concurrency,
//                 256))))
//   The 1.25 covers allocator fragmentation; CUDA graphs, the runtime and workspaces are in the
//   reserve.
// A vision tower runs on stage 0 before the prefill, whole on every rank (as the executor runs
// it); its activations are its own (Tower::activation_bytes) at the largest image. Qwen2.5-VL's: P
// = max_image_pixels / patch² patches of K = channels·temporal·patch² values, width Dv, MLP width
// Iv:
//   vision = 1.25 · (P·K·4 [f32 pixel values] + 2·P·Dv·c
//                    + max(4·P·Dv·c [q, k, v, o], 3·P·Iv·c [gate, up, activation],
//                          P·Dv·c + (P/m²)·(m²·Dv + D)·c [the merger]))
//   with attention scores not held (a flash kernel's; an eager one adds heads·S²·4 per window).
//   Stage 0's activations are the larger of the two.
// Communication buffers: T·D·c for the tensor-parallel all-reduce when tp > 1; 2·T·k·D·c for the
// expert all-to-all (dispatch + combine) when ep > 1 and the stage has MoE layers; T·D·c per
// tensor (hidden, residual) per pipeline direction the stage sends or receives.
// Usable = device_memory · utilization; KV space = usable − weights − activations − comm − reserve
// − state, in whole blocks of block_size tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text_format.h"
#include "model/config/architecture.h"
#include "model/weights/inventory.h"
#include "plan/parallel_plan.h"
#include "tensor/dtype.h"

namespace h0::plan {

// kMXFP4: the layout of an mxfp4 quantization_config (GPT-OSS: routed experts as u8 E2M1 pairs and
// E8M0 scales per 32, the rest bf16), planned only for a model that has one.
enum class WeightFormat { kBF16, kF16, kF32, kFP8, kINT8, kINT4, kMXFP4 };
// "bf16", "f16", "f32", "fp8", "int8", "int4" (also "fp16", "float16", "bfloat16", "fp32").
std::optional<WeightFormat> parse_weight_format(std::string_view name);
const char* weight_format_name(WeightFormat format);
// "bf16, f16, f32, fp8, int8, int4, mxfp4", for errors.
const char* weight_format_names();
// The format the model's checkpoint stores its linear weights in: fp8 when its
// quantization_config says fp8 (block scales), else its torch_dtype (bf16 when absent). `why`
// (optional) gets where that came from, e.g. "quantization_config fp8 [128, 128]".
WeightFormat checkpoint_weight_format(const model::Architecture& arch, std::string* why = nullptr);
// A KV-cache dtype: a float dtype name, or "fp8" (f8_e4m3).
std::optional<tensor::DType> parse_kv_dtype(std::string_view name);

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct MemoryOptions {
  WeightFormat weights = WeightFormat::kBF16;
  tensor::DType kv_dtype = tensor::DType::kBF16;
  int64_t block_size = 16;
  int64_t max_model_len = 0;  // 0: min(max_position_embeddings, 8192)
  int64_t concurrency = 1;    // sequences of max_model_len that must fit at once
  int64_t max_batch_tokens = 8192;
  double device_memory = 0;  // bytes per device; required
  double utilization = 0.9;
  double reserve = kGiB;     // runtime, CUDA graphs, workspaces
  bool include_mtp = false;  // load the MTP layers too (speculative decoding)
  // The largest image a request may carry, in pixels (Qwen2-VL's processor max_pixels); 0: the
  // processor class default 28·28·1280 for a Qwen2.5-VL tower (a note says so). Unused without one.
  int64_t max_image_pixels = 0;
  // The checkpoint's tensors as stored (inventory_from_checkpoint); nullptr: build_inventory.
  // Not owned; must outlive plan_memory.
  const model::Inventory* checkpoint = nullptr;
};

struct RankMemory {
  RankCoord coord;
  std::pair<int64_t, int64_t> layers{0, 0};   // decoder layers [begin, end)
  std::pair<int64_t, int64_t> experts{0, 0};  // routed experts [begin, end); {0, 0} dense
  std::pair<int64_t, int64_t> vocab{0, 0};    // embedding / LM-head rows [begin, end); {0, 0} none
  int64_t kv_heads = 0;                       // kv heads per rank (1 for MLA)
  int64_t weights = 0, activations = 0, comm = 0, reserve = 0;
  int64_t vision_activations = 0;     // stage 0: the vision tower's at the largest image (0: none)
  int64_t kv_bytes_per_token = 0;     // this rank's share, all its layers (indexer keys included)
  int64_t index_bytes_per_token = 0;  // of which DeepSeek-V3.2's indexer keys
  int64_t state_bytes_per_sequence = 0;  // linear-attention layers' conv + recurrent state
  int64_t state = 0;                     // that × the sequences a replica serves at once
  int64_t free_for_kv = 0;               // usable minus the above; negative: does not fit
  int64_t kv_blocks = 0, kv_tokens = 0;
};

struct MemoryPlan {
  ParallelPlan plan;
  MemoryOptions options;           // defaults resolved
  std::vector<std::string> notes;  // replication, uneven splits, defaults taken
  int64_t usable = 0;
  int64_t kv_bytes_per_token = 0;  // the model's: all layers, each kv head once
  int64_t total_weights = 0;       // summed over every rank, replicas included
  std::vector<RankMemory> ranks;   // every rank, in rank order
  int64_t kv_tokens = 0;           // one dp replica's KV capacity: the minimum over its ranks
  int64_t required_tokens = 0;     // max_model_len · concurrency
  int64_t headroom = 0;            // min over ranks of KV space left after the required tokens
  bool fits = false;
  std::string reason;  // why it does not fit; "" when it fits
};

// The model's KV-cache bytes per token over all layers (MTP excluded), each kv head once;
// sliding-window layers as over a sequence of `max_model_len` (0: every layer full).
int64_t model_kv_bytes_per_token(const model::Architecture& arch, tensor::DType kv_dtype,
                                 int64_t max_model_len = 0);

// The KV cache (and linear-attention state) of one kind of layer, rank 0's share under `plan`:
// kind "full attention", "MLA latent", "sliding window", "indexer keys" or
// "linear-attention state". bytes_per_layer is per token (state: per sequence); bytes is over the
// `layers` of that kind, per token of a max_model_len sequence (a sliding layer holds
// min(window, len) of its tokens), or per sequence for the state.
struct KvLayerType {
  std::string kind;
  int64_t layers = 0;
  int64_t bytes_per_layer = 0;
  int64_t bytes = 0;
  bool per_sequence = false;
  std::string note;  // "window 4 of 2,048 tokens"
};
// Rank 0's layers (stage 0 under pp), its kv heads. Its per-token rows sum to that rank's
// kv_bytes_per_token.
std::vector<KvLayerType> kv_by_layer_type(const model::Architecture& arch, const MemoryPlan& plan);

// The decoder layers to check one at a time (day0's layer stage; golden/tools/dump_hf.py --layers
// makes their goldens on a reference machine): the first layer of each block type, its attention
// (full, sliding window, linear attention, MLA; DeepSeek-V3.2's lightning indexer added) by its
// MLP (dense, MoE), with what a device checking it alone loads, as the checkpoint stores it: the
// layer's tensors and the embedding its input comes from.
struct LayerChoice {
  int64_t layer = 0;
  std::string block;  // "MLA + indexer attention, MoE MLP"
  int64_t bytes = 0;
  std::vector<int64_t> layers;  // every layer of this block type, `layer` first
};
std::vector<LayerChoice> representative_layers(const model::Architecture& arch);
// "3 (MLA, MoE; 12.4 GiB; 58 layers like it)", with ", over the device's 24.0 GiB" after the
// size when `device_memory` (> 0: stated) is smaller; and as JSON (layer, block, bytes, layers,
// fits_device when stated).
std::string describe(const LayerChoice& c, double device_memory);
nlohmann::json to_json(const LayerChoice& c, double device_memory);

// Plans `plan` (check_plan must accept it). Throws InputError for impossible options
// (device_memory <= 0, block_size < 1, ...) and for weights the plan cannot cut (shard_of).
MemoryPlan plan_memory(const model::Architecture& arch, const ParallelPlan& plan,
                       MemoryOptions options);

using h0::with_commas;  // base/text_format.h: 1234567 -> "1,234,567"

}  // namespace h0::plan
