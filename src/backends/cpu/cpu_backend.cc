// The cpu backend's hb_backend: host memory as "device" memory (64-byte aligned), the stack
// fingerprint of this machine, and run_op dispatching through one table of kernels.
//
// Error contract of run_op: an op without a kernel, or a call whose float dtype is not f32,
// bf16 or f16, is HB_UNSUPPORTED (the harness then falls back); wrong operand counts, shapes,
// dtypes, attrs or data (an id out of range) are HB_INVALID_ARGUMENT; both set last_error,
// which is per thread. Nothing throws across the ABI.
#include "backends/cpu/cpu_backend.h"

#include <cblas.h>
#include <sys/utsname.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "backends/cpu/cpu_kernels.h"

namespace h0::backends {
namespace {

using cpu::Json;

constexpr int kOutputDtype = -1;

// One catalogue op: its kernel, the operand counts it accepts, and which operand carries the
// call's float dtype (what supports() is asked about).
struct KernelEntry {
  const char* op;
  cpu::KernelFn fn;
  int min_inputs, max_inputs, outputs;
  int dtype_operand;  // an input index, or kOutputDtype for outputs[0]
};

constexpr KernelEntry kKernels[] = {
    {"matmul", cpu::matmul_kernel, 2, 2, 1, 0},
    {"linear", cpu::linear_kernel, 2, 3, 1, 0},
    {"linear_widen", cpu::linear_widen_kernel, 2, 3, 1, 0},
    {"embedding", cpu::embedding_kernel, 2, 2, 1, 1},
    {"add", cpu::add_kernel, 2, 2, 1, 0},
    {"mul", cpu::mul_kernel, 2, 2, 1, 0},
    {"rmsnorm", cpu::rmsnorm_kernel, 2, 2, 1, 0},
    {"layernorm", cpu::layernorm_kernel, 3, 3, 1, 0},
    {"rmsnorm_gated", cpu::rmsnorm_gated_kernel, 3, 3, 1, 0},
    {"rope", cpu::rope_kernel, 2, 2, 1, 0},
    {"softmax", cpu::softmax_kernel, 1, 1, 1, 0},
    {"silu", cpu::silu_kernel, 1, 1, 1, 0},
    {"sigmoid", cpu::sigmoid_kernel, 1, 1, 1, 0},
    {"gelu", cpu::gelu_kernel, 1, 1, 1, 0},
    {"swiglu", cpu::swiglu_kernel, 2, 2, 1, 0},
    {"attention", cpu::attention_kernel, 3, 3, 1, 0},
    {"paged_attention", cpu::paged_attention_kernel, 4, 5, 1, 0},
    {"lightning_indexer", cpu::lightning_indexer_kernel, 4, 4, 1, 0},
    {"sparse_attention", cpu::sparse_attention_kernel, 5, 5, 1, 0},
    {"causal_conv1d", cpu::causal_conv1d_kernel, 3, 4, 2, 0},
    {"gated_delta_rule", cpu::gated_delta_rule_kernel, 6, 6, 2, 0},
    {"gdn_gating", cpu::gdn_gating_kernel, 4, 4, 2, 0},
    {"moe_gate", cpu::moe_gate_kernel, 1, 2, 2, 0},
    {"moe_experts", cpu::moe_experts_kernel, 6, 9, 1, 0},
    {"patch_embed", cpu::patch_embed_kernel, 2, 3, 1, 0},
    {"quantize", cpu::quantize_kernel, 1, 1, 2, 0},
    {"dequantize", cpu::dequantize_kernel, 2, 2, 1, kOutputDtype},
    {"dequantize_mxfp4", cpu::dequantize_mxfp4_kernel, 2, 2, 1, kOutputDtype},
    {"scaled_linear", cpu::scaled_linear_kernel, 3, 4, 1, 0},
    {"argmax", cpu::argmax_kernel, 1, 1, 1, 0},
    {"sample", cpu::sample_kernel, 1, 1, 1, 0},
};

const KernelEntry* find_kernel(const char* op) {
  if (op == nullptr) return nullptr;
  for (const auto& k : kKernels) {
    if (std::strcmp(k.op, op) == 0) return &k;
  }
  return nullptr;
}

thread_local std::string t_last_error;

hb_status fail(hb_status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

// --- the stack fingerprint -------------------------------------------------------------------

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    for (const char* key : {"model name", "Model", "Hardware"}) {  // x86; arm64 boards
      if (line.rfind(key, 0) == 0 && line.find(':') != std::string::npos) {
        std::string v = line.substr(line.find(':') + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        if (!v.empty()) return v;
      }
    }
  }
  return "unknown CPU";
}

std::string kernel_release() {
  struct utsname u {};
  return uname(&u) == 0 ? std::string(u.release) : "unknown";
}

// "OpenBLAS 0.3.21" from openblas_get_config()'s "OpenBLAS 0.3.21 DYNAMIC_ARCH ... ".
std::string openblas_version() {
  std::istringstream words(openblas_get_config());
  std::string name, version;
  words >> name >> version;
  return "OpenBLAS " + (name == "OpenBLAS" && !version.empty() ? version : std::string("unknown"));
}

std::string compiler() {
#if defined(__clang__)
  return "Clang " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) + "." +
         std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  return "GCC " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
         std::to_string(__GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

const std::string& stack_info() {
  static const std::string info = Json{
      {"device", cpu_model()},
      {"driver", kernel_release()},
      {"runtime", "host"},
      {"op_library", openblas_version()},
      {"compiler", compiler()}}.dump();
  return info;
}

// --- the ABI functions -----------------------------------------------------------------------

hb_status cpu_init(void*, const hb_host_api*, const char* options_json) {
  Json options;
  try {
    options = options_json == nullptr || *options_json == '\0' ? Json::object()
                                                               : Json::parse(options_json);
  } catch (const Json::exception& e) {
    return fail(HB_INVALID_ARGUMENT, std::string("cpu backend options are not JSON: ") + e.what());
  }
  if (options.is_null()) options = Json::object();
  if (!options.is_object())
    return fail(HB_INVALID_ARGUMENT,
                "cpu backend options must be an object, got " + options.dump());
  for (const auto& [key, value] : options.items()) {
    if (key != "threads")
      return fail(HB_INVALID_ARGUMENT,
                  "cpu backend: unknown option '" + key + "' (expected threads)");
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 4096) {
      return fail(
          HB_INVALID_ARGUMENT,
          "cpu backend: option threads must be an integer in [1, 4096], got " + value.dump());
    }
    // OpenBLAS's threads for the GEMMs; the other kernels' results do not depend on it.
    openblas_set_num_threads(value.get<int>());
  }
  stack_info();
  return HB_OK;
}

const char* cpu_stack_info_json(void*) { return stack_info().c_str(); }

int32_t cpu_supports(void*, const char* op, hb_dtype dtype) {
  return find_kernel(op) != nullptr && cpu::is_float(dtype) ? 1 : 0;
}

hb_status cpu_alloc(void*, size_t bytes, void** device_ptr) {
  if (device_ptr == nullptr) return fail(HB_INVALID_ARGUMENT, "alloc: device_ptr is null");
  const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  if (rounded < bytes)
    return fail(HB_OUT_OF_MEMORY, "alloc: " + std::to_string(bytes) + " bytes is too large");
  *device_ptr = std::aligned_alloc(64, rounded);
  if (*device_ptr == nullptr)
    return fail(HB_OUT_OF_MEMORY,
                "alloc: out of host memory for " + std::to_string(bytes) + " bytes");
  return HB_OK;
}

void cpu_free(void*, void* device_ptr) { std::free(device_ptr); }

hb_status cpu_copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return HB_OK;
  if (dst == nullptr || src == nullptr) return fail(HB_INVALID_ARGUMENT, "copy: null pointer");
  std::memcpy(dst, src, bytes);
  return HB_OK;
}

hb_status cpu_copy_to_device(void*, void* dst, const void* src, size_t bytes) {
  return cpu_copy(dst, src, bytes);
}
hb_status cpu_copy_to_device_at(void*, void* dst, size_t offset, const void* src, size_t bytes) {
  return cpu_copy(static_cast<std::byte*>(dst) + offset, src, bytes);
}
hb_status cpu_copy_to_host(void*, void* dst, const void* src, size_t bytes) {
  return cpu_copy(dst, src, bytes);
}

// The counts and operands every kernel relies on (the device plugins' check), then the float
// dtype.
void check_call(const KernelEntry& k, const cpu::Operands& call) {
  h0p::require_operands(call, k.min_inputs, k.max_inputs, k.outputs);
  const hb_tensor& t = k.dtype_operand == kOutputDtype ? call.out[0] : call.in[k.dtype_operand];
  if (!cpu::is_float(t.dtype))
    cpu::unsupported(call, "the cpu backend computes f32, bf16 and f16, not " + cpu::describe(t));
}

hb_status cpu_run_op(void*, const char* op, const hb_tensor* inputs, int32_t n_inputs,
                     hb_tensor* outputs, int32_t n_outputs, const char* attrs_json) {
  t_last_error.clear();
  const KernelEntry* k = find_kernel(op);
  if (k == nullptr) {
    return fail(HB_UNSUPPORTED,
                std::string("the cpu backend has no op '") + (op ? op : "(null)") + "'");
  }
  try {
    Json attrs =
        attrs_json == nullptr || *attrs_json == '\0' ? Json::object() : Json::parse(attrs_json);
    if (attrs.is_null()) attrs = Json::object();
    if (!attrs.is_object())
      return fail(HB_INVALID_ARGUMENT, std::string(op) + ": attrs must be a JSON object");
    const cpu::Operands call{k->op,     inputs, n_inputs,           outputs,
                             n_outputs, attrs,  cpu::host_memory(), false};
    check_call(*k, call);
    k->fn(call);
  } catch (const cpu::OpError& e) {
    return fail(e.status(), e.what());
  } catch (const Json::exception& e) {
    return fail(HB_INVALID_ARGUMENT, std::string(op) + ": bad attrs: " + e.what());
  } catch (const std::bad_alloc&) {
    return fail(HB_OUT_OF_MEMORY, std::string(op) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(HB_DEVICE_ERROR, std::string(op) + ": " + e.what());
  }
  return HB_OK;
}

hb_status cpu_synchronize(void*) { return HB_OK; }

hb_status cpu_memory_info(void*, size_t* free_bytes, size_t* total_bytes) {
  std::ifstream in("/proc/meminfo");
  size_t available = 0, total = 0;
  for (std::string key; in >> key;) {
    size_t kib = 0;
    in >> kib;
    if (key == "MemAvailable:") available = kib * 1024;
    if (key == "MemTotal:") total = kib * 1024;
    in.ignore(1 << 10, '\n');
  }
  if (total == 0)
    return fail(HB_DEVICE_ERROR, "memory_info: cannot read MemTotal from /proc/meminfo");
  if (free_bytes != nullptr) *free_bytes = available;
  if (total_bytes != nullptr) *total_bytes = total;
  return HB_OK;
}

const char* cpu_last_error(void*) { return t_last_error.c_str(); }

void cpu_shutdown(void*) {}

}  // namespace
}  // namespace h0::backends

const hb_backend* h0_cpu_backend_entry() {
  using namespace h0::backends;  // the ABI functions above
  static const hb_backend backend = {
      .abi_version = HB_ABI_VERSION,
      .name = "cpu",
      .self = nullptr,
      .init = cpu_init,
      .stack_info_json = cpu_stack_info_json,
      .supports = cpu_supports,
      .alloc = cpu_alloc,
      .free = cpu_free,
      .copy_to_device = cpu_copy_to_device,
      .copy_to_host = cpu_copy_to_host,
      .run_op = cpu_run_op,
      .synchronize = cpu_synchronize,
      .memory_info = cpu_memory_info,
      .last_error = cpu_last_error,
      .shutdown = cpu_shutdown,
      .copy_to_device_at = cpu_copy_to_device_at,
  };
  return &backend;
}
