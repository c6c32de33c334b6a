#include <string>

#include "base/error.h"
#include "ops/op.h"
#include "ops/op_list.h"

namespace h0::ops {
namespace {

std::string where(const OpDef& op) { return std::string("op '") + op.name + "'"; }

const char* type_name(AttrType t) {
  switch (t) {
    case AttrType::kBool:
      return "a boolean";
    case AttrType::kInt:
      return "an integer";
    case AttrType::kFloat:
      return "a number";
    case AttrType::kString:
      return "a string";
    default:
      return "an object or null";
  }
}

bool has_type(AttrType t, const Json& v) {
  switch (t) {
    case AttrType::kBool:
      return v.is_boolean();
    case AttrType::kInt:
      return v.is_number_integer();
    case AttrType::kFloat:
      return v.is_number();
    case AttrType::kString:
      return v.is_string();
    default:
      return v.is_object() || v.is_null();
  }
}

bool in_choices(const char* choices, const std::string& value) {
  std::string all(choices);
  size_t start = 0;
  while (start <= all.size()) {
    size_t bar = all.find('|', start);
    if (bar == std::string::npos) bar = all.size();
    if (all.compare(start, bar - start, value) == 0 && bar - start == value.size()) return true;
    start = bar + 1;
  }
  return false;
}

std::string dtypes_allowed(OperandKind kind) {
  switch (kind) {
    case OperandKind::kFloat:
      return "f32, bf16, f16 or f64";
    case OperandKind::kIndex:
      return "i32 or i64";
    case OperandKind::kF32:
      return "f32";
    case OperandKind::kI32:
      return "i32";
    case OperandKind::kI64:
      return "i64";
    case OperandKind::kU8:
      return "u8";
    case OperandKind::kStored:
      return "bf16, f16 or f32";
    default:
      return "i8, f8_e4m3 or f8_e5m2";
  }
}

bool dtype_fits(OperandKind kind, DType d) {
  switch (kind) {
    case OperandKind::kFloat:
      return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16 || d == DType::kF64;
    case OperandKind::kIndex:
      return d == DType::kI32 || d == DType::kI64;
    case OperandKind::kF32:
      return d == DType::kF32;
    case OperandKind::kI32:
      return d == DType::kI32;
    case OperandKind::kI64:
      return d == DType::kI64;
    case OperandKind::kU8:
      return d == DType::kU8;
    case OperandKind::kStored:
      return d == DType::kBF16 || d == DType::kF16 || d == DType::kF32;
    default:
      return d == DType::kI8 || d == DType::kF8E4M3 || d == DType::kF8E5M2;
  }
}

}  // namespace

const std::vector<const OpDef*>& all_ops() {
  static const std::vector<const OpDef*> ops = {
      &matmul_op(),
      &linear_op(),
      &linear_widen_op(),
      &embedding_op(),
      &add_op(),
      &mul_op(),
      &rmsnorm_op(),
      &layernorm_op(),
      &rmsnorm_gated_op(),
      &rope_op(),
      &softmax_op(),
      &silu_op(),
      &sigmoid_op(),
      &gelu_op(),
      &swiglu_op(),
      &attention_op(),
      &paged_attention_op(),
      &lightning_indexer_op(),
      &sparse_attention_op(),
      &causal_conv1d_op(),
      &gated_delta_rule_op(),
      &gdn_gating_op(),
      &moe_gate_op(),
      &moe_experts_op(),
      &patch_embed_op(),
      &quantize_op(),
      &dequantize_op(),
      &dequantize_mxfp4_op(),
      &scaled_linear_op(),
      &argmax_op(),
      &sample_op(),
  };
  return ops;
}

const OpDef* find_op(std::string_view name) {
  for (const OpDef* op : all_ops()) {
    if (name == op->name) return op;
  }
  return nullptr;
}

const OpDef& require_op(std::string_view name) {
  if (const OpDef* op = find_op(name)) return *op;
  std::string known;
  for (const OpDef* op : all_ops()) known += (known.empty() ? "" : ", ") + std::string(op->name);
  throw InputError("op '" + std::string(name) + "'", "unknown op (expected one of " + known + ")");
}

Json validate_attrs(const OpDef& op, const Json& attrs) {
  if (!attrs.is_null() && !attrs.is_object()) {
    throw InputError(where(op), "attrs must be an object, got " + attrs.dump());
  }
  Json out = Json::object();
  if (attrs.is_object()) {
    for (const auto& [key, value] : attrs.items()) {
      const AttrSpec* spec = nullptr;
      for (const auto& a : op.attrs) {
        if (key == a.name) spec = &a;
      }
      if (spec == nullptr) {
        std::string known;
        for (const auto& a : op.attrs) known += (known.empty() ? "" : ", ") + std::string(a.name);
        throw InputError(where(op), "unknown attr '" + key + "' (" +
                                        (known.empty() ? "it takes none" : "expected " + known) +
                                        ")");
      }
      // null is accepted where it is the default ("use the default"), e.g. rotary_dim.
      const bool null_default = value.is_null() && spec->default_json != nullptr &&
                                std::string_view(spec->default_json) == "null";
      if (!null_default && !has_type(spec->type, value)) {
        throw InputError(where(op), "attr '" + key + "' must be " + type_name(spec->type) +
                                        ", got " + value.dump());
      }
      if (spec->choices != nullptr && value.is_string() &&
          !in_choices(spec->choices, value.get<std::string>())) {
        throw InputError(where(op), "attr '" + key + "' must be one of " + spec->choices +
                                        ", got " + value.dump());
      }
      out[key] =
          spec->type == AttrType::kFloat && value.is_number() ? Json(value.get<double>()) : value;
    }
  }
  for (const auto& a : op.attrs) {
    if (out.contains(a.name)) continue;
    if (a.default_json == nullptr)
      throw InputError(where(op), std::string("missing attr '") + a.name + "'");
    out[a.name] = Json::parse(a.default_json);
  }
  return out;
}

std::vector<TensorDesc> infer_outputs(const OpDef& op, const std::vector<TensorDesc>& inputs,
                                      const Json& attrs) {
  size_t required = 0;
  for (const auto& in : op.inputs) required += in.optional ? 0 : 1;
  if (inputs.size() < required || inputs.size() > op.inputs.size()) {
    throw InputError(
        where(op),
        "takes " + std::to_string(required) +
            (required == op.inputs.size() ? "" : " to " + std::to_string(op.inputs.size())) +
            " inputs, got " + std::to_string(inputs.size()));
  }
  std::vector<TensorDesc> full = inputs;
  full.resize(op.inputs.size(), TensorDesc{DType::kF32, {}, false});
  DType float_dtype = DType::kF32;
  bool have_float = false;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const OperandSpec& spec = op.inputs[i];
    const TensorDesc& d = full[i];
    if (!d.present) {
      if (!spec.optional)
        throw InputError(where(op), std::string("missing input '") + spec.name + "'");
      continue;
    }
    if (spec.kind == OperandKind::kQuant || spec.kind == OperandKind::kStored) {
      const auto want = tensor::parse_dtype(
          attrs.value("dtype", std::string(spec.kind == OperandKind::kQuant ? "i8" : "bf16")));
      if (want && d.dtype != *want) {
        throw InputError(where(op), std::string("input '") + spec.name + "' must be " +
                                        tensor::dtype_name(*want) + " (attr dtype), got " +
                                        tensor::dtype_name(d.dtype));
      }
    }
    if (!dtype_fits(spec.kind, d.dtype)) {
      throw InputError(where(op), std::string("input '") + spec.name + "' must be " +
                                      dtypes_allowed(spec.kind) + ", got " +
                                      tensor::dtype_name(d.dtype));
    }
    if (spec.kind == OperandKind::kFloat) {
      if (have_float && d.dtype != float_dtype) {
        throw InputError(
            where(op), std::string("input '") + spec.name + "' is " + tensor::dtype_name(d.dtype) +
                           " but the other float inputs are " + tensor::dtype_name(float_dtype));
      }
      float_dtype = d.dtype;
      have_float = true;
    }
    if (d.shape.size() > 8)
      throw InputError(where(op), std::string("input '") + spec.name + "' has more than 8 dims");
  }
  return op.infer(full, attrs);
}

}  // namespace h0::ops
