// The hb_host_api handed to every backend at init.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/backend.h"
#include "base/error.h"
#include "ops/op.h"

namespace h0::backend {
namespace {

thread_local std::string g_last_host_error;

int log_threshold() {
  static const int level = [] {
    const char* env = std::getenv("HARNESS_LOG_LEVEL");
    return env != nullptr ? std::atoi(env) : 2;
  }();
  return level;
}

void host_log(int32_t level, const char* message) {
  if (level >= 3) g_last_host_error = message != nullptr ? message : "";
  if (level < log_threshold()) return;
  static const char* kNames[] = {"debug", "info", "warning", "error"};
  std::fprintf(stderr, "[backend] %s: %s\n",
               kNames[level < 0   ? 0
                      : level > 3 ? 3
                                  : level],
               message != nullptr ? message : "");
}

hb_status reference_op(const char* op_name, const hb_tensor* inputs, int32_t n_inputs,
                       hb_tensor* outputs, int32_t n_outputs, const char* attrs_json) {
  try {
    const ops::OpDef* op = ops::find_op(op_name != nullptr ? op_name : "");
    if (op == nullptr || op->reference == nullptr) {
      host_log(3, (std::string("reference_op: no reference kernel for '") +
                   (op_name ? op_name : "") + "'")
                      .c_str());
      return HB_UNSUPPORTED;
    }
    const ops::Json attrs = ops::validate_attrs(
        *op, ops::Json::parse(attrs_json != nullptr && *attrs_json ? attrs_json : "{}"));
    std::vector<ops::TensorDesc> descs;
    std::vector<tensor::Tensor> in_views;
    for (int32_t i = 0; i < n_inputs; ++i) {
      in_views.push_back(view_of(inputs[i], false));
      descs.push_back({in_views.back().dtype(), in_views.back().shape(), true});
    }
    const auto expected = ops::infer_outputs(*op, descs, attrs);
    if (static_cast<size_t>(n_outputs) != expected.size()) {
      throw InputError(std::string("op '") + op->name + "'",
                       "expects " + std::to_string(expected.size()) + " outputs, got " +
                           std::to_string(n_outputs));
    }
    std::vector<tensor::Tensor> out_views;
    for (int32_t i = 0; i < n_outputs; ++i) {
      out_views.push_back(view_of(outputs[i], true));
      if (out_views.back().dtype() != expected[i].dtype ||
          out_views.back().shape() != expected[i].shape) {
        throw InputError(std::string("op '") + op->name + "'",
                         "output " + std::to_string(i) + " must be " +
                             tensor::shape_string(expected[i].shape) + " " +
                             tensor::dtype_name(expected[i].dtype));
      }
    }
    std::vector<const tensor::Tensor*> in_ptrs(op->inputs.size(), nullptr);
    for (size_t i = 0; i < in_views.size(); ++i) in_ptrs[i] = &in_views[i];
    std::vector<tensor::Tensor*> out_ptrs;
    for (auto& t : out_views) out_ptrs.push_back(&t);
    op->reference(in_ptrs, out_ptrs, attrs);
    return HB_OK;
  } catch (const std::exception& e) {
    host_log(3, (std::string("reference_op: ") + e.what()).c_str());
    return HB_INVALID_ARGUMENT;
  }
}

const hb_host_api kHostApi = {HB_ABI_VERSION, &reference_op, &host_log};

}  // namespace

const hb_host_api* host_api() { return &kHostApi; }

std::string take_host_error() {
  std::string e;
  e.swap(g_last_host_error);
  return e;
}

}  // namespace h0::backend
