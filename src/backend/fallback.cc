#include "backend/fallback.h"

#include "base/error.h"

namespace h0::backend {
namespace {

const Decomposition* find_decomposition(const Backend& backend, const ops::OpDef& op,
                                        tensor::DType dtype) {
  for (const auto& d : decompositions()) {
    if (op.name != std::string_view(d.op)) continue;
    bool all = true;
    for (const char* need : d.needs) all = all && backend.supports(need, dtype);
    if (all) return &d;
  }
  return nullptr;
}

std::string describe(const Decomposition& d) {
  std::string out = std::string(d.op) + " -> ";
  for (size_t i = 0; i < d.needs.size(); ++i) out += (i ? ", " : "") + std::string(d.needs[i]);
  return out;
}

}  // namespace

const char* fallback_name(FallbackMode mode) {
  switch (mode) {
    case FallbackMode::kNone:
      return "none";
    case FallbackMode::kDecompose:
      return "decompose";
    default:
      return "host";
  }
}

bool parse_fallback(const std::string& text, FallbackMode* mode) {
  if (text == "none")
    *mode = FallbackMode::kNone;
  else if (text == "decompose")
    *mode = FallbackMode::kDecompose;
  else if (text == "host")
    *mode = FallbackMode::kHost;
  else
    return false;
  return true;
}

const char* route_name(Route route) {
  switch (route) {
    case Route::kNative:
      return "native";
    case Route::kDecomposed:
      return "decomposed";
    case Route::kHost:
      return "host";
    default:
      return "unsupported";
  }
}

tensor::DType call_dtype(const ops::OpDef& op, const std::vector<ops::TensorDesc>& inputs,
                         const std::vector<ops::TensorDesc>& outputs) {
  for (size_t i = 0; i < inputs.size() && i < op.inputs.size(); ++i) {
    if (op.inputs[i].kind == ops::OperandKind::kFloat && inputs[i].present) return inputs[i].dtype;
  }
  for (size_t i = 0; i < outputs.size() && i < op.outputs.size(); ++i) {
    if (op.outputs[i].kind == ops::OperandKind::kFloat) return outputs[i].dtype;
  }
  return tensor::DType::kF32;
}

Outcome plan(const Backend& backend, const ops::OpDef& op, tensor::DType dtype, FallbackMode mode) {
  if (backend.supports(op.name, dtype)) return {Route::kNative, ""};
  const std::string why = std::string("backend '") + backend.name() + "' does not support " +
                          op.name + " in " + tensor::dtype_name(dtype);
  if (mode == FallbackMode::kNone) return {Route::kUnsupported, why};
  if (const Decomposition* d = find_decomposition(backend, op, dtype))
    return {Route::kDecomposed, describe(*d)};
  if (mode == FallbackMode::kHost && op.reference != nullptr)
    return {Route::kHost, why + "; ran the host reference"};
  return {Route::kUnsupported,
          why + (mode == FallbackMode::kDecompose ? " and no decomposition applies" : "")};
}

Outcome execute(Backend& backend, const ops::OpDef& op,
                const std::vector<const DeviceTensor*>& inputs,
                const std::vector<DeviceTensor*>& outputs, const ops::Json& attrs,
                FallbackMode mode) {
  std::vector<ops::TensorDesc> in_descs, out_descs;
  for (const auto* t : inputs) in_descs.push_back({t->dtype(), t->shape(), true});
  for (const auto* t : outputs) out_descs.push_back({t->dtype(), t->shape(), true});
  const tensor::DType dtype = call_dtype(op, in_descs, out_descs);
  const Outcome outcome = plan(backend, op, dtype, mode);
  switch (outcome.route) {
    case Route::kNative:
      backend.run_op(op.name, inputs, outputs, attrs.dump());
      break;
    case Route::kDecomposed:
      find_decomposition(backend, op, dtype)->run(backend, inputs, outputs, attrs);
      break;
    case Route::kHost: {
      std::vector<tensor::Tensor> host_in, host_out;
      for (const auto* t : inputs) host_in.push_back(backend.download(*t));
      for (const auto* t : outputs)
        host_out.push_back(tensor::Tensor::zeros(t->dtype(), t->shape()));
      std::vector<const tensor::Tensor*> in_ptrs(op.inputs.size(), nullptr);
      for (size_t i = 0; i < host_in.size(); ++i) in_ptrs[i] = &host_in[i];
      std::vector<tensor::Tensor*> out_ptrs;
      for (auto& t : host_out) out_ptrs.push_back(&t);
      op.reference(in_ptrs, out_ptrs, attrs);
      for (size_t i = 0; i < outputs.size(); ++i) backend.upload_into(host_out[i], outputs[i]);
      break;
    }
    case Route::kUnsupported:
      break;
  }
  return outcome;
}

}  // namespace h0::backend
