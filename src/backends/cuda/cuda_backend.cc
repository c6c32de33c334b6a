// The `cuda` plugin: matmul and linear on cuBLAS (cublasGemmEx, f32 compute), every other op
// with kernels on the portable kernels (../portable) compiled by nvcc, behind the plugin ABI
// alone (loaded with dlopen; exports only hb_backend_entry). Options: {"device": 0}.
// f32, f16 and bf16; sample, quantize, dequantize and f64 are answered unsupported, so the
// harness falls back for them. Without a device, init fails with
// "cuda: no CUDA device (cudaGetDeviceCount: ...)" and nothing else is called.
// Timing: the ABI has no device-timer hook, so op checks time run_op + synchronize on the host.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "../portable/device_ops.h"
#include "cuda_device.h"
#include "harness_backend.h"

namespace {

using Json = nlohmann::json;

struct Plugin {
  const hb_host_api* host = nullptr;
  std::unique_ptr<h0cuda::CudaDevice> dev;
  std::string last_error;
  std::string stack_info = R"j({"device":"(not initialized)"})j";
};

Plugin g_plugin;

hb_status fail(hb_status status, const std::string& message) {
  g_plugin.last_error = message;
  return status;
}

// Runs fn, turning an h0p::OpError (or anything thrown) into a status and last_error.
template <typename Fn>
hb_status guarded(Fn fn) {
  g_plugin.last_error.clear();
  try {
    fn();
    return HB_OK;
  } catch (const h0p::OpError& e) {
    return fail(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(HB_OUT_OF_MEMORY, "cuda: out of host memory");
  } catch (const std::exception& e) {
    return fail(HB_DEVICE_ERROR, std::string("cuda: ") + e.what());
  }
}

int parse_device(const char* options_json) {
  Json options;
  try {
    options = options_json == nullptr || *options_json == '\0' ? Json::object() : Json::parse(options_json);
  } catch (const Json::exception& e) {
    throw h0p::OpError(HB_INVALID_ARGUMENT, std::string("cuda: options are not JSON: ") + e.what());
  }
  if (options.is_null()) options = Json::object();
  if (!options.is_object())
    throw h0p::OpError(HB_INVALID_ARGUMENT, "cuda: options must be an object, got " + options.dump());
  int device = 0;
  for (const auto& [key, value] : options.items()) {
    if (key != "device" || !value.is_number_unsigned())
      throw h0p::OpError(HB_INVALID_ARGUMENT, "cuda: bad option '" + key + "': " + value.dump() +
                                                  " (expected device: a device index)");
    device = value.get<int>();
  }
  return device;
}

hb_status cu_init(void*, const hb_host_api* host, const char* options_json) {
  g_plugin.host = host;
  return guarded([&] {
    const int device = parse_device(options_json);
    g_plugin.dev.reset();
    g_plugin.dev = std::make_unique<h0cuda::CudaDevice>(device);
    g_plugin.stack_info = g_plugin.dev->stack_info();
    if (host != nullptr && host->log != nullptr) host->log(1, ("cuda: " + g_plugin.stack_info).c_str());
  });
}

const char* cu_stack_info_json(void*) { return g_plugin.stack_info.c_str(); }

int32_t cu_supports(void*, const char* op, hb_dtype dtype) {
  return g_plugin.dev ? h0p::device_supports(*g_plugin.dev, op, dtype) : 0;
}

// Every call below needs init to have succeeded.
hb_status not_ready() { return fail(HB_DEVICE_ERROR, "cuda: the backend is not initialized"); }

hb_status cu_alloc(void*, size_t bytes, void** device_ptr) {
  if (!g_plugin.dev) return not_ready();
  if (device_ptr == nullptr) return fail(HB_INVALID_ARGUMENT, "alloc: device_ptr is null");
  return guarded([&] { *device_ptr = g_plugin.dev->alloc(bytes); });
}

void cu_free(void*, void* device_ptr) {
  if (g_plugin.dev) g_plugin.dev->release(device_ptr);
}

hb_status cu_copy_to_device(void*, void* dst, const void* src, size_t bytes) {
  if (!g_plugin.dev) return not_ready();
  return guarded([&] { g_plugin.dev->write(dst, src, bytes); });
}

hb_status cu_copy_to_host(void*, void* dst, const void* src, size_t bytes) {
  if (!g_plugin.dev) return not_ready();
  return guarded([&] { g_plugin.dev->read(dst, src, bytes); });
}

hb_status cu_run_op(void*, const char* op, const hb_tensor* inputs, int32_t n_inputs, hb_tensor* outputs,
                    int32_t n_outputs, const char* attrs_json) {
  if (!g_plugin.dev) return not_ready();
  return guarded([&] { h0p::run_device_op(*g_plugin.dev, op, inputs, n_inputs, outputs, n_outputs, attrs_json); });
}

hb_status cu_synchronize(void*) {
  if (!g_plugin.dev) return not_ready();
  return guarded([] { g_plugin.dev->synchronize(); });
}

hb_status cu_memory_info(void*, size_t* free_bytes, size_t* total_bytes) {
  if (!g_plugin.dev) return not_ready();
  return guarded([&] { g_plugin.dev->memory_info(free_bytes, total_bytes); });
}

const char* cu_last_error(void*) { return g_plugin.last_error.c_str(); }

void cu_shutdown(void*) { g_plugin.dev.reset(); }

const hb_backend kBackend = {
    HB_ABI_VERSION, "cuda", &g_plugin, &cu_init, &cu_stack_info_json, &cu_supports, &cu_alloc,
    &cu_free, &cu_copy_to_device, &cu_copy_to_host, &cu_run_op, &cu_synchronize, &cu_memory_info,
    &cu_last_error, &cu_shutdown,
};

}  // namespace

// The one symbol the plugin exports (everything else is hidden: -fvisibility=hidden).
extern "C" __attribute__((visibility("default"))) const hb_backend* hb_backend_entry(void) { return &kBackend; }
