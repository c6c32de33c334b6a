#include "model/exec/model_weights.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/error.h"
#include "model/config/block.h"
#include "model/exec/host_glue.h"
#include "model/exec/sharding.h"
#include "model/weights/weight_loader.h"
#include "ops/op_list.h"
#include "tensor/convert.h"

namespace h0::model {
namespace {

// Concatenates equally shaped tensors along a new leading axis.
tensor::Tensor stack(const std::vector<tensor::Tensor>& parts) {
  tensor::Shape shape = parts[0].shape();
  shape.insert(shape.begin(), int64_t(parts.size()));
  tensor::Tensor out = tensor::Tensor::zeros(parts[0].dtype(), shape);
  auto* dst = static_cast<std::byte*>(out.mutable_data());
  for (const auto& p : parts) {
    std::memcpy(dst, p.data(), p.nbytes());
    dst += p.nbytes();
  }
  return out;
}

// InputError unless a scale of shape `scale` covers the 2-D fp8 weight of shape `q` in br x bc
// blocks (the last ragged).
void check_block_scales(const tensor::Shape& q, const tensor::Shape& scale, int64_t br, int64_t bc,
                        const std::string& where) {
  if (q.size() != 2 || scale.size() != 2)
    throw InputError(where, "an fp8 weight and its scale must be 2-D");
  const tensor::Shape want = {(q[0] + br - 1) / br, (q[1] + bc - 1) / bc};
  if (scale != want) {
    throw InputError(where, "weight_scale_inv is " + tensor::shape_string(scale) + ", but " +
                                tensor::shape_string(q) + " in " + std::to_string(br) + "x" +
                                std::to_string(bc) + " blocks needs " + tensor::shape_string(want));
  }
}

// q · scale per br x bc block in f32: the catalogue's dequantize (granularity block2d), the one
// block rule (check_block_scales first).
tensor::Tensor dequantize_blocks(const tensor::Tensor& q, const tensor::Tensor& scale, int64_t br,
                                 int64_t bc) {
  const ops::OpDef& op = ops::dequantize_op();
  const ops::Json attrs = ops::validate_attrs(op, {{"dtype", tensor::dtype_name(q.dtype())},
                                                   {"granularity", "block2d"},
                                                   {"block_rows", br},
                                                   {"block", bc},
                                                   {"out_dtype", "f32"}});
  tensor::Tensor out = tensor::Tensor::empty(tensor::DType::kF32, q.shape());
  op.reference({&q, &scale}, {&out}, attrs);
  return out;
}

// GPT-OSS's fused experts, out-major ([E, out, in], the layout moe_experts and an MXFP4
// checkpoint both use): gate_up [E, 2F, D] (gate rows ::2, up rows 1::2), down [E, D, F];
// gate_up_bias [E, 2F], down_bias [E, D].
struct FusedExperts {
  tensor::Tensor gate_up, gate_up_bias, down, down_bias;
};

// [E, a, b] -> [E, b, a] in f32: a float checkpoint's x · w layout [E, in, out] made out-major.
tensor::Tensor swap_last_two(const tensor::Tensor& t) {
  const tensor::Tensor src = glue::to_f32(t);
  const int64_t e = src.dim(0), a = src.dim(1), b = src.dim(2);
  tensor::Tensor out = tensor::Tensor::empty(tensor::DType::kF32, {e, b, a});
  const float* in = src.data_as<float>();
  float* dst = out.mutable_data_as<float>();
  for (int64_t x = 0; x < e; ++x) {
    for (int64_t i = 0; i < a; ++i) {
      for (int64_t j = 0; j < b; ++j) dst[(x * b + j) * a + i] = in[(x * a + i) * b + j];
    }
  }
  return out;
}

// moe_experts' operands in `dtype`: w_gate, w_up [E, F, D] (gate_up's even and odd rows), w_down
// [E, D, F] (down as it is), b_gate, b_up [E, F], b_down [E, D].
std::array<tensor::Tensor, 6> unpack_fused(const FusedExperts& in, tensor::DType dtype) {
  const tensor::Tensor gu = glue::to_f32(in.gate_up), gub = glue::to_f32(in.gate_up_bias);
  const int64_t e = gu.dim(0), f = gu.dim(1) / 2, d = gu.dim(2);
  tensor::Tensor gate = tensor::Tensor::empty(tensor::DType::kF32, {e, f, d}),
                 up = tensor::Tensor::empty(tensor::DType::kF32, {e, f, d});
  tensor::Tensor b_gate = tensor::Tensor::empty(tensor::DType::kF32, {e, f}),
                 b_up = tensor::Tensor::empty(tensor::DType::kF32, {e, f});
  const float *src = gu.data_as<float>(), *bsrc = gub.data_as<float>();
  for (int64_t row = 0; row < e * f;
       ++row) {  // (expert, i): gate_up rows 2i and 2i + 1 of that expert
    std::copy_n(src + (2 * row) * d, d, gate.mutable_data_as<float>() + row * d);
    std::copy_n(src + (2 * row + 1) * d, d, up.mutable_data_as<float>() + row * d);
    b_gate.mutable_data_as<float>()[row] = bsrc[2 * row];
    b_up.mutable_data_as<float>()[row] = bsrc[2 * row + 1];
  }
  return {glue::to_dtype(gate, dtype),    glue::to_dtype(up, dtype),
          glue::to_dtype(in.down, dtype), glue::to_dtype(b_gate, dtype),
          glue::to_dtype(b_up, dtype),    glue::to_dtype(in.down_bias, dtype)};
}

// An MXFP4 checkpoint's fused expert weight (`<name>_blocks` [E, out, G, 16] and `<name>_scales`
// [E, out, G], both u8), this rank's `part` of it (cut as the float layout [E, in, out] is: axis
// 0 the experts, read alone; axes 1 and 2 swapped), out-major in f32: the catalogue's
// dequantize_mxfp4 (its reference, on the host, as fp8 experts are dequantized on load).
void check_mxfp4(const io::ShardedCheckpoint& ckpt, const WeightInfo& w, const Architecture& arch) {
  const std::string blocks_name = w.name + "_blocks", scales_name = w.name + "_scales";
  if (arch.quantization.method != "mxfp4") {
    throw InputError(ckpt.path(), "tensor '" + w.name + "' is stored as MXFP4 (" + blocks_name +
                                      "), but config.json has no mxfp4 quantization_config");
  }
  const io::TensorEntry *blocks_entry = ckpt.find(blocks_name),
                        *scales_entry = ckpt.find(scales_name);
  if (scales_entry == nullptr)
    throw InputError(ckpt.path(), "tensor '" + blocks_name + "' has no '" + scales_name + "'");
  const int64_t e = w.shape[0], in = w.shape[1], out = w.shape[2];
  const tensor::Shape want_blocks = {e, out, in / 32, 16}, want_scales = {e, out, in / 32};
  if (blocks_entry->dtype != tensor::DType::kU8 || scales_entry->dtype != tensor::DType::kU8 ||
      blocks_entry->shape != want_blocks || scales_entry->shape != want_scales) {
    throw InputError(ckpt.path(), "MXFP4 '" + w.name + "' is " +
                                      tensor::dtype_name(blocks_entry->dtype) + " " +
                                      tensor::shape_string(blocks_entry->shape) + " with scales " +
                                      tensor::dtype_name(scales_entry->dtype) + " " +
                                      tensor::shape_string(scales_entry->shape) + ", expected u8 " +
                                      tensor::shape_string(want_blocks) + " and u8 " +
                                      tensor::shape_string(want_scales) + " (its float shape " +
                                      tensor::shape_string(w.shape) + ", out and in swapped)");
  }
}

tensor::Tensor dequantize_mxfp4(const io::ShardedCheckpoint& ckpt, const WeightInfo& w,
                                const Architecture& arch, const WeightSlice& part) {
  check_mxfp4(ckpt, w, arch);
  const std::string blocks_name = w.name + "_blocks", scales_name = w.name + "_scales";
  const int64_t in = w.shape[1], out = w.shape[2];
  const bool by_expert = part.axis == 0;  // only this rank's experts are read and dequantized
  const tensor::Tensor blocks =
      by_expert ? ckpt.slice(blocks_name, 0, part.begin, part.end) : ckpt.get(blocks_name);
  const tensor::Tensor scales =
      by_expert ? ckpt.slice(scales_name, 0, part.begin, part.end) : ckpt.get(scales_name);
  const ops::OpDef& op = ops::dequantize_mxfp4_op();
  const ops::Json attrs = ops::validate_attrs(op, {{"out_dtype", "f32"}});
  tensor::Tensor x = tensor::Tensor::empty(tensor::DType::kF32, {blocks.shape()[0], out, in});
  op.reference({&blocks, &scales}, {&x}, attrs);
  return part.axis > 0 ? x.slice(3 - part.axis, part.begin, part.end) : x;
}

// `part` of a float weight as stored: its rows [begin, end) of `axis`, or its pieces of axis 0
// one after another (WeightSlice::pieces).
tensor::Tensor read_part(const io::ShardedCheckpoint& ckpt, const std::string& name,
                         const WeightSlice& part) {
  if (part.axis < 0) return ckpt.get(name);
  if (part.pieces.empty()) return ckpt.slice(name, part.axis, part.begin, part.end);
  std::vector<tensor::Tensor> pieces;
  for (const auto& [begin, end] : part.pieces) pieces.push_back(ckpt.slice(name, 0, begin, end));
  tensor::Shape shape = pieces[0].shape();
  shape[0] = part.extent();
  tensor::Tensor out = tensor::Tensor::empty(pieces[0].dtype(), shape);
  auto* dst = static_cast<std::byte*>(out.mutable_data());
  for (const tensor::Tensor& p : pieces)
    dst = static_cast<std::byte*>(std::memcpy(dst, p.data(), p.nbytes())) + p.nbytes();
  return out;
}

bool stored_as_mxfp4(const io::ShardedCheckpoint& ckpt, const WeightInfo& w) {
  return w.all_experts && w.piece == TensorPiece::kWeight && ckpt.find(w.name) == nullptr &&
         ckpt.find(w.name + "_blocks") != nullptr;
}

// The roles the executor runs by linear (Executor::linear): their weights may stay as stored.
bool runs_by_linear(TensorRole role) {
  switch (role) {
    case TensorRole::kAttnQ:
    case TensorRole::kAttnK:
    case TensorRole::kAttnV:
    case TensorRole::kAttnO:
    case TensorRole::kAttnQA:
    case TensorRole::kAttnQB:
    case TensorRole::kAttnKVA:
    case TensorRole::kAttnKVB:
    case TensorRole::kFfnGate:
    case TensorRole::kFfnUp:
    case TensorRole::kFfnDown:
    case TensorRole::kSharedGate:
    case TensorRole::kSharedUp:
    case TensorRole::kSharedDown:
    case TensorRole::kSharedExpertGate:
    case TensorRole::kRouter:
    case TensorRole::kIdxK:
    case TensorRole::kIdxQB:
    case TensorRole::kIdxWeights:
    case TensorRole::kLinQKVZ:
    case TensorRole::kLinBA:
    case TensorRole::kLinQKV:
    case TensorRole::kLinZ:
    case TensorRole::kLinA:
    case TensorRole::kLinB:
    case TensorRole::kLinOut:
    case TensorRole::kHead:
    case TensorRole::kEmbed:  // the embedding's table, and the head when tied
    case TensorRole::kVisAttnQ:
    case TensorRole::kVisAttnK:
    case TensorRole::kVisAttnV:
    case TensorRole::kVisAttnO:
    case TensorRole::kVisAttnQKV:
    case TensorRole::kVisFfnGate:
    case TensorRole::kVisFfnUp:
    case TensorRole::kVisFfnDown:
    case TensorRole::kVisFc1:
    case TensorRole::kVisFc2:
    case TensorRole::kVisMerger1:
    case TensorRole::kVisMerger2:
    case TensorRole::kVisPatchEmbed:  // Qwen2.5-VL's, flattened to 2-D (LLaVA's is patch_embed's)
    case TensorRole::kProjector1:
    case TensorRole::kProjector2:
      return true;
    default:
      return false;
  }
}

// An fp8 block-quantized weight and its block scales (weight_scale_inv), checked against the
// config's weight_block_size.
struct Fp8Weight {
  tensor::Tensor q, scale;
  int64_t block_rows, block_cols;
};

// InputError unless the fp8 weight `w` has block scales the config's weight_block_size covers.
void check_fp8(const io::ShardedCheckpoint& ckpt, const Architecture& arch, const WeightInfo& w) {
  const std::string scale = w.name + "_scale_inv";
  const io::TensorEntry* s = ckpt.find(scale);
  if (s == nullptr) {
    throw InputError(ckpt.path(), "tensor '" + w.name + "' is stored in fp8 with no '" + scale +
                                      "' (block scales)");
  }
  if (arch.quantization.method != "fp8") {
    throw InputError(ckpt.path(), "tensor '" + w.name +
                                      "' is stored in fp8, but config.json has no fp8 "
                                      "quantization_config (its weight_block_size says how the "
                                      "scales apply)");
  }
  check_block_scales(ckpt.find(w.name)->shape, s->shape, arch.quantization.block_rows,
                     arch.quantization.block_cols,
                     ckpt.path() + ": " + w.name);  // > 0 for fp8 (architecture.cc)
}

Fp8Weight read_fp8(const io::ShardedCheckpoint& ckpt, const Architecture& arch,
                   const WeightInfo& w) {
  check_fp8(ckpt, arch, w);
  return {ckpt.get(w.name), ckpt.get(w.name + "_scale_inv"), arch.quantization.block_rows,
          arch.quantization.block_cols};
}

// A routed expert's weight (one expert's gate, up or down) as float: fp8 dequantized by its
// block scales (moe_experts takes float weights), a float one as stored.
tensor::Tensor read_expert_weight(const io::ShardedCheckpoint& ckpt, const Architecture& arch,
                                  const WeightInfo& w) {
  if (!tensor::is_fp8(ckpt.find(w.name)->dtype)) return ckpt.get(w.name);
  const Fp8Weight f = read_fp8(ckpt, arch, w);
  return dequantize_blocks(f.q, f.scale, f.block_rows, f.block_cols);
}

void release_tensor(const io::ShardedCheckpoint& ckpt, const std::string& name) {
  for (const char* suffix : {"", "_scale_inv", "_blocks", "_scales"}) ckpt.release(name + suffix);
}

}  // namespace

namespace {

// Every tensor of `inv` is in `ckpt` at its shape (MXFP4 ones are checked where they are
// dequantized). InputError naming the first that is not.
void require_tensors(const Inventory& inv, const io::ShardedCheckpoint& ckpt) {
  for (const WeightInfo& w : inv.weights) {
    if (stored_as_mxfp4(ckpt, w)) continue;  // checked where it is dequantized
    const io::TensorEntry* e = ckpt.find(w.name);
    if (e == nullptr)
      throw InputError(ckpt.path(),
                       "missing tensor '" + w.name + "' (see `harness load` for the full check)");
    if (e->shape != w.shape) {
      throw InputError(ckpt.path(), "tensor '" + w.name + "' is " + tensor::shape_string(e->shape) +
                                        ", expected " + tensor::shape_string(w.shape));
    }
  }
}

// A GPT-OSS fused expert tensor's part into `f` (a float checkpoint's [E, in, out] swapped to
// out-major; under TP the down bias only on the first rank).
void add_fused_part(const io::ShardedCheckpoint& ckpt, const WeightInfo& w,
                    const Sharding* sharding, tensor::Tensor stored, FusedExperts* f) {
  const bool bias = w.piece == TensorPiece::kBias;
  // A float checkpoint stores the weights as x · w, [E, in, out]; MXFP4's came out-major.
  if (!bias && !stored_as_mxfp4(ckpt, w)) stored = swap_last_two(stored);
  if (w.tensor == TensorRole::kExpertsGateUp) {
    (bias ? f->gate_up_bias : f->gate_up) = stored;
  } else if (bias && sharding != nullptr && sharding->experts_split_by_tp &&
             sharding->tp_rank != 0) {
    f->down_bias = tensor::Tensor::zeros(stored.dtype(), stored.shape());  // the first rank adds it
  } else {
    (bias ? f->down_bias : f->down) = stored;
  }
}

// The layout the ops take a weight in: a decoder layer's as its blocks say (Block::op_layout);
// Qwen2.5-VL's Conv3d patch embedding [D, C, T, P, P] is a linear over flattened patches,
// [D, C·T·P·P].
tensor::Tensor in_op_layout(const TextModel& t, const WeightInfo& w, tensor::Tensor host) {
  if (w.tensor == TensorRole::kVisPatchEmbed && host.shape().size() == 5)
    return host.reshape({host.dim(0), host.numel() / host.dim(0)});
  if (w.layer < 0 || w.layer >= t.num_layers || is_vision_role(w.tensor)) return host;
  for (const BlockSlot slot : {BlockSlot::kMixer, BlockSlot::kFeedForward}) {
    if (const Block* b = block_at(t, w.layer, slot)) host = b->op_layout(w.tensor, std::move(host));
  }
  return host;
}

}  // namespace

struct ModelWeights::Loading {
  const Architecture& arch;
  const io::ShardedCheckpoint& ckpt;
  backend::Backend& backend;
  tensor::DType dtype;
  const Sharding* sharding;
  std::optional<tensor::DType> kept;      // the float dtype linear_widen takes as stored
  std::map<int64_t, FusedExperts> fused;  // by layer: GPT-OSS's fused experts, as read
  std::map<int64_t, std::array<std::vector<tensor::Tensor>, 3>> expert_parts;  // gate, up, down
};

ModelWeights::ModelWeights(const Architecture& arch, const io::ShardedCheckpoint& ckpt,
                           backend::Backend& backend, tensor::DType dtype, const Sharding* sharding,
                           std::optional<tensor::DType> kept, int64_t expert_bytes,
                           int64_t only_layer) {
  Inventory inv =
      build_inventory(arch, {.dtype = std::nullopt, .quantized = false, .include_mtp = false});
  if (only_layer >= 0) {
    std::erase_if(inv.weights, [&](const WeightInfo& w) {
      return w.layer != only_layer || is_vision_role(w.tensor);
    });
  }
  require_tensors(inv, ckpt);
  if (sharding == nullptr || !sharding->experts_split_by_tp)
    leave_experts_stored(arch, ckpt, inv, dtype, sharding, expert_bytes);
  Loading l{arch, ckpt, backend, dtype, sharding, kept, {}, {}};
  for (const WeightInfo& w : inv.weights) {
    // Once a tensor is in backend memory its file pages stop counting in this process's memory
    // (the checkpoint stays mapped; a later read reads the file again).
    struct Release {
      const io::ShardedCheckpoint& ckpt;
      const std::string& name;
      ~Release() { release_tensor(ckpt, name); }
    } release{ckpt, w.name};
    std::optional<WeightSlice> part = WeightSlice{-1, 0, 0, {}};
    if (sharding != nullptr) part = sharding->slice(w);
    if (!part) continue;  // another rank's
    if (keep_stored_expert(arch, ckpt, w)) continue;
    load(l, w, *part);
  }
  for (const auto& [layer, f] : l.fused) {
    std::array<tensor::Tensor, 6> t = unpack_fused(f, dtype);
    ExpertStack stack{backend.upload(t[0]), backend.upload(t[1]), backend.upload(t[2]),
                      backend.upload(t[3]), backend.upload(t[4]), backend.upload(t[5])};
    for (const tensor::Tensor& part : t) bytes_ += int64_t(part.nbytes());
    experts_.emplace(layer, std::move(stack));
  }
  for (auto& [layer, parts] : l.expert_parts) {
    experts_.emplace(
        layer,
        ExpertStack{backend.upload(stack(parts[0])), backend.upload(stack(parts[1])),
                    backend.upload(stack(parts[2])), std::nullopt, std::nullopt, std::nullopt});
  }
}

// Routed experts that would reach `expert_bytes` widened (all MoE layers together) stay as
// stored.
void ModelWeights::leave_experts_stored(const Architecture& arch, const io::ShardedCheckpoint& ckpt,
                                        const Inventory& inv, tensor::DType dtype,
                                        const Sharding* sharding, int64_t expert_bytes) {
  const int64_t first = sharding != nullptr ? sharding->expert_begin : 0;
  const int64_t count =
      sharding != nullptr ? sharding->expert_end - first : arch.text.moe.num_experts;
  std::map<int64_t, int64_t> per_expert;  // layer -> one expert's elements
  for (const WeightInfo& w : inv.weights) {
    if (w.expert == 0) per_expert[w.layer] += tensor::numel(w.shape);
    if (w.all_experts) per_expert[w.layer] += tensor::numel(w.shape) / w.shape[0];
  }
  int64_t widened = 0;
  const auto size = int64_t(tensor::dtype_size(dtype));
  for (const auto& [layer, n] : per_expert) widened += n * count * size;
  if (widened < expert_bytes) return;
  for (const auto& [layer, n] : per_expert) {
    stored_.emplace(layer, StoredExperts(ckpt, arch, dtype, first, count, n * size));
  }
}

// A routed expert's tensor of a layer whose experts stay as stored: checked now, read when a step
// routes to it. False for any other tensor.
bool ModelWeights::keep_stored_expert(const Architecture& arch, const io::ShardedCheckpoint& ckpt,
                                      const WeightInfo& w) {
  auto it = stored_.find(w.layer);
  if (it == stored_.end() || (w.expert < 0 && !w.all_experts)) return false;
  StoredExperts& e = it->second;
  if (stored_as_mxfp4(ckpt, w)) {
    check_mxfp4(ckpt, w, arch);
  } else if (tensor::is_fp8(ckpt.find(w.name)->dtype)) {
    check_fp8(ckpt, arch, w);
  }
  if (w.all_experts) {
    const size_t slot =
        (w.tensor == TensorRole::kExpertsGateUp ? 0 : 2) + (w.piece == TensorPiece::kBias ? 1 : 0);
    e.fused_[slot] = w;
  } else {
    e.per_expert_[size_t(w.expert - e.first_)]
                 [size_t(int(w.tensor) - int(TensorRole::kExpertGate))] = w;
  }
  return true;
}

// An fp8 weight run quantized by scaled_linear: this rank's whole blocks of q and their scales.
void ModelWeights::load_fp8(const Loading& l, const WeightInfo& w, const WeightSlice& part) {
  if (!part.pieces.empty()) {  // stored fp8 where the reference layout keeps it float (the
                               // planner refuses the rest)
    throw InputError(l.ckpt.path(), "tensor '" + w.name +
                                        "' is stored in fp8 and cut by tp into q|k|v parts: "
                                        "not run yet (run it with tp 1, or pp)");
  }
  const Fp8Weight f = read_fp8(l.ckpt, l.arch, w);
  tensor::Tensor q_part = f.q, s_part = f.scale;
  if (part.axis >= 0) {
    const int64_t block = part.axis == 0 ? f.block_rows : f.block_cols;
    require_whole_blocks(w.name, l.sharding->tp ? l.sharding->tp->size() : 1, part.begin, part.end,
                         f.q.shape()[size_t(part.axis)], block);
    q_part = f.q.slice(part.axis, part.begin, part.end);
    s_part = f.scale.slice(part.axis, part.begin / block, (part.end + block - 1) / block);
  }
  bytes_ += int64_t(q_part.nbytes() + s_part.nbytes());
  add(w, w.name, l.backend.upload(q_part), TensorPiece::kWeight);
  add(w, w.name + "_scale_inv", l.backend.upload(s_part), TensorPiece::kScale);
}

// One weight (this rank's `part`) read, converted as the run takes it and uploaded; a routed
// expert's or a fused expert tensor's collected in `l` for their stacks.
void ModelWeights::load(Loading& l, const WeightInfo& w, const WeightSlice& part) {
  const io::ShardedCheckpoint& ckpt = l.ckpt;
  tensor::Tensor stored;
  if (stored_as_mxfp4(ckpt, w)) {  // GPT-OSS's experts as released: this rank's part, out-major
    stored = dequantize_mxfp4(ckpt, w, l.arch, part);
  } else if (w.expert >= 0 && tensor::is_fp8(ckpt.find(w.name)->dtype)) {
    const tensor::Tensor full = read_expert_weight(ckpt, l.arch, w);
    stored = part.axis < 0 ? full : full.slice(part.axis, part.begin, part.end);
  } else if (tensor::is_fp8(ckpt.find(w.name)->dtype)) {  // run quantized by scaled_linear
    load_fp8(l, w, part);
    return;
  } else {
    stored = read_part(ckpt, w.name, part);
  }
  if (w.all_experts) {  // unpacked into moe_experts' operands
    add_fused_part(ckpt, w, l.sharding, stored, &l.fused[w.layer]);
    return;
  }
  tensor::Tensor host = in_op_layout(l.arch.text, w, stored);
  const bool keep = l.kept && host.dtype() == *l.kept && w.piece == TensorPiece::kWeight &&
                    w.expert < 0 && host.shape().size() == 2 && runs_by_linear(w.tensor);
  if (tensor::is_float(host.dtype()) && !keep) host = glue::to_dtype(host, l.dtype);
  bytes_ += int64_t(host.nbytes());
  if (w.expert >= 0) {  // moe_experts' w_gate, w_up, w_down, in expert order
    H0_CHECK(w.tensor == TensorRole::kExpertGate || w.tensor == TensorRole::kExpertUp ||
             w.tensor == TensorRole::kExpertDown)
        << w.name << ": a routed expert weight with no expert role";
    const int which = int(w.tensor) - int(TensorRole::kExpertGate);
    l.expert_parts[w.layer][size_t(which)].push_back(host);
    return;
  }
  // A weight kept as stored is still the file's bytes: uploaded in pieces, each piece's pages
  // dropped once copied, so the file and the copy are never both resident whole.
  add(w, w.name,
      l.backend.upload_in_pieces(host, size_t{64} << 20,
                                 [&](size_t offset, size_t bytes) {
                                   ckpt.release_range(
                                       static_cast<const std::byte*>(host.data()) + offset, bytes);
                                 }),
      w.piece);
}

const StoredExperts* ModelWeights::stored_experts(int64_t layer) const {
  auto it = stored_.find(layer);
  return it == stored_.end() ? nullptr : &it->second;
}

StoredExperts::StoredExperts(const io::ShardedCheckpoint& ckpt, const Architecture& arch,
                             tensor::DType dtype, int64_t first, int64_t count,
                             int64_t widened_bytes)
    : ckpt_(ckpt),
      arch_(arch),
      dtype_(dtype),
      first_(first),
      count_(count),
      widened_bytes_(widened_bytes),
      per_expert_(size_t(count)) {}

std::vector<tensor::Tensor> StoredExperts::stacks(int64_t capacity) const {
  int64_t f = 0, d = 0;
  if (fused_[0]) {  // gate_up as stored in float: [E, D, 2F]
    d = fused_[0]->shape[1];
    f = fused_[0]->shape[2] / 2;
  } else {  // gate_proj [F, D]
    H0_CHECK(!per_expert_.empty() && per_expert_[0][0].has_value()) << "no experts listed";
    f = per_expert_[0][0]->shape[0];
    d = per_expert_[0][0]->shape[1];
  }
  std::vector<tensor::Tensor> out = {tensor::Tensor::empty(dtype_, {capacity, f, d}),
                                     tensor::Tensor::empty(dtype_, {capacity, f, d}),
                                     tensor::Tensor::empty(dtype_, {capacity, d, f})};
  if (biased()) {
    out.push_back(tensor::Tensor::empty(dtype_, {capacity, f}));
    out.push_back(tensor::Tensor::empty(dtype_, {capacity, f}));
    out.push_back(tensor::Tensor::empty(dtype_, {capacity, d}));
  }
  return out;
}

void StoredExperts::widen(const std::vector<int64_t>& ids,
                          std::vector<tensor::Tensor>* stacks) const {
  H0_CHECK(!stacks->empty() && int64_t(ids.size()) <= (*stacks)[0].dim(0))
      << ids.size() << " experts for stacks of " << (stacks->empty() ? 0 : (*stacks)[0].dim(0));
  const auto put = [&](size_t which, size_t i, const tensor::Tensor& t) {
    const tensor::Tensor dst = (*stacks)[which].slice_rows(int64_t(i), int64_t(i) + 1);
    H0_CHECK(t.numel() == dst.numel())
        << "an expert operand of " << t.numel() << " values for " << dst.numel();
    tensor::convert(t.data(), t.dtype(), dst.mutable_data(), dst.dtype(), size_t(t.numel()));
  };
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    H0_CHECK(id >= 0 && id < count_) << "expert " << id << " of " << count_;
    if (fused_[0]) {  // GPT-OSS's: this expert's slice of each fused tensor, as on load
      const WeightSlice one{0, first_ + id, first_ + id + 1, {}};
      FusedExperts f;
      tensor::Tensor* dst[4] = {&f.gate_up, &f.gate_up_bias, &f.down, &f.down_bias};
      for (size_t slot = 0; slot < 4; ++slot) {
        if (!fused_[slot]) continue;
        const WeightInfo& w = *fused_[slot];
        if (stored_as_mxfp4(ckpt_, w)) {
          *dst[slot] = dequantize_mxfp4(ckpt_, w, arch_, one);
        } else {
          *dst[slot] = read_part(ckpt_, w.name, one);
          if (w.piece == TensorPiece::kWeight) *dst[slot] = swap_last_two(*dst[slot]);
        }
        release_tensor(ckpt_, w.name);
      }
      if (!biased()) {  // unpack_fused reads biases: zeros, not kept
        f.gate_up_bias = tensor::Tensor::zeros(tensor::DType::kF32, {1, f.gate_up.dim(1)});
        f.down_bias = tensor::Tensor::zeros(tensor::DType::kF32, {1, f.down.dim(1)});
      }
      const std::array<tensor::Tensor, 6> t = unpack_fused(f, dtype_);
      for (size_t which = 0; which < stacks->size(); ++which) put(which, i, t[which]);
      continue;
    }
    for (size_t which = 0; which < 3; ++which) {
      H0_CHECK(per_expert_[size_t(id)][which].has_value()) << "expert " << id << " not listed";
      const WeightInfo& w = *per_expert_[size_t(id)][which];
      // A float weight is converted from the mapped file straight into its stack.
      put(which, i, read_expert_weight(ckpt_, arch_, w));
      release_tensor(ckpt_, w.name);
    }
  }
}

void ModelWeights::add(const WeightInfo& w, const std::string& name, backend::DeviceTensor t,
                       TensorPiece piece) {
  const auto it = tensors_.emplace(name, std::move(t)).first;
  if (w.tensor != TensorRole::kOther)
    by_role_[{is_vision_role(w.tensor) ? w.vision_layer : w.layer, w.tensor, piece}] = &it->second;
}

const backend::DeviceTensor* ModelWeights::find(int64_t layer, TensorRole tensor,
                                                TensorPiece piece) const {
  auto it = by_role_.find({layer, tensor, piece});
  return it == by_role_.end() ? nullptr : it->second;
}

const backend::DeviceTensor& ModelWeights::get(int64_t layer, TensorRole tensor,
                                               TensorPiece piece) const {
  const backend::DeviceTensor* t = find(layer, tensor, piece);
  if (t == nullptr) {
    static constexpr const char* kPiece[] = {"weight", "bias", "block scales", "mxfp4 blocks"};
    throw InputError("model weights", std::string("no ") + tensor_role_name(tensor) + " " +
                                          kPiece[size_t(piece)] + " in layer " +
                                          std::to_string(layer));
  }
  return *t;
}

const ExpertStack& ModelWeights::experts(int64_t layer) const {
  auto it = experts_.find(layer);
  if (it == experts_.end())
    throw InputError("model weights", "layer " + std::to_string(layer) + " has no experts");
  return it->second;
}

}  // namespace h0::model
