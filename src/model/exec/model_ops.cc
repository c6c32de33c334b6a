#include "model/exec/model_ops.h"

#include <cmath>

#include "base/check.h"
#include "base/error.h"
#include "model/config/tower.h"
#include "tensor/convert.h"

namespace h0::model {

namespace {

// v as a value of `dtype` (PyTorch's tensor.to(dtype) of a scalar).
double rounded_to(double v, tensor::DType dtype) {
  const float f = float(v);
  std::byte narrow[8];
  float back = 0;
  tensor::convert(&f, tensor::DType::kF32, narrow, dtype, 1);
  tensor::convert(narrow, dtype, &back, tensor::DType::kF32, 1);
  return back;
}

}  // namespace

std::optional<tensor::DType> widened_weight_dtype(const Architecture& arch, tensor::DType dtype,
                                                  std::optional<tensor::DType> checkpoint) {
  const std::optional<tensor::DType> stored = arch.text.dtype ? arch.text.dtype : checkpoint;
  if (dtype != tensor::DType::kF32 || !stored) return std::nullopt;
  if (*stored != tensor::DType::kBF16 && *stored != tensor::DType::kF16) return std::nullopt;
  return stored;
}

ModelOps model_ops(const Architecture& arch, tensor::DType dtype, bool act_quant,
                   std::optional<tensor::DType> checkpoint) {
  const TextModel& t = arch.text;
  ModelOps o;
  if (const auto stored = widened_weight_dtype(arch, dtype, checkpoint))
    o.linear_widen = bind_op("linear_widen", {{"dtype", tensor::dtype_name(*stored)}});
  ops::Json norm = {{"eps", t.rms_norm_eps}};
  if (t.norm_offset != 0) norm["offset"] = t.norm_offset;
  o.rmsnorm = bind_op("rmsnorm", norm);
  o.linear = bind_op("linear");
  if (arch.quantization.method == "fp8") {
    const Quantization& q = arch.quantization;
    o.scaled_linear =
        bind_op("scaled_linear", {{"block_n", q.block_rows},  // > 0 for fp8 (architecture.cc)
                                  {"block_k", q.block_cols},
                                  {"act_quant", act_quant ? "dynamic" : "none"}});
  }
  o.add = bind_op("add");
  // Gemma 3: rows · √D, the scale rounded to the run dtype (HF: embed_scale.to(weight.dtype)).
  o.embedding =
      t.embed_scaled
          ? bind_op("embedding", {{"scale", rounded_to(std::sqrt(double(t.hidden_size)), dtype)}})
          : bind_op("embedding");
  for (const Block* b : blocks()) {  // the blocks some layer runs bind their own ops
    if (layers_running(t, *b) == 0) continue;
    b->bind(arch, dtype, &o.blocks[b]);
    BlockOps per_step;  // at a sample context: which ops each step binds
    b->bind_context(
        arch,
        {{"context_len", 1}, {"scale", b->attention_scale(t)}, {"causal", true}, {"q_offset", 0}},
        &per_step);
    for (const auto& [label, op] : per_step.ops) o.context.insert(op.def->name);
  }
  o.argmax = bind_op("argmax");
  if (const Tower* tower = tower_of(arch)) tower->bind(arch, &o);
  return o;
}

std::set<std::string> ModelOps::names() const {
  std::set<std::string> out = context;
  out.insert("sample");
  // With linear_widen every projection runs by it (ModelWeights keeps them all as stored); a
  // tensor a checkpoint stores otherwise (an f32 router in a bf16 checkpoint) still runs by linear.
  if (linear_widen.def != nullptr) out.insert("linear_widen");
  for (const BoundOp* op : {&rmsnorm, linear_widen.def != nullptr ? &linear_widen : &linear, &add,
                            &embedding, &argmax, &scaled_linear, &layernorm, &mul, &silu, &gelu,
                            &swiglu, &patch_embed, &vision_attention, &vision_norm, &vision_rope}) {
    if (op->def != nullptr) out.insert(op->def->name);
  }
  for (const auto& [block, bound] : blocks) {
    for (const auto& [label, op] : bound.ops) out.insert(op.def->name);
  }
  return out;
}

const BoundOp* ModelOps::find(const std::string& label) const {
  for (const Block* b : model::blocks()) {
    const auto bound = blocks.find(b);
    if (bound == blocks.end()) continue;
    if (const BoundOp* op = bound->second.find(label)) return op;
  }
  return nullptr;
}

const BoundOp& BlockOps::at(const std::string& label) const {
  const auto it = ops.find(label);
  H0_CHECK(it != ops.end()) << "no op bound as '" << label << "'";
  return it->second;
}

}  // namespace h0::model
