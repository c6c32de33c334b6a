// The `opencl` plugin: the catalogue's ops as OpenCL C kernels (the portable kernels of
// ../portable, built per storage dtype at first use and cached for the process), behind the
// plugin ABI alone, as a vendor's plugin would be (loaded with dlopen; exports only
// hb_backend_entry). Options (all optional):
//   {"platform": 0 | "PoCL", "device": 0 | "name part", "f16": true}
// f32 and bf16 (stored as u16, f32 math) everywhere; f16 where the device has cl_khr_fp16 (or
// "f16": true: storage-only f16 through the core vload_half/vstore_half). sample, quantize,
// dequantize and f64 are answered unsupported, so the harness falls back for them.
//
// JIT: the program for a dtype is built by the first op of that dtype in the process (and a
// driver may compile each kernel again at its first launch), so an op check's `first_call`
// phase includes the JIT and `steady` does not; the build time is also logged (info level).
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "../portable/device_ops.h"
#include "harness_backend.h"
#include "opencl_context.h"

namespace {

using Json = nlohmann::json;

struct Plugin {
  const hb_host_api* host = nullptr;
  std::unique_ptr<h0cl::ClContext> cl;
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
    return fail(HB_OUT_OF_MEMORY, "opencl: out of host memory");
  } catch (const std::exception& e) {
    return fail(HB_DEVICE_ERROR, std::string("opencl: ") + e.what());
  }
}

// An option given as an index or a name: "0" or "PoCL".
std::string selector(const Json& v, const char* key) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  throw h0p::OpError(HB_INVALID_ARGUMENT, std::string("opencl: option ") + key +
                                              " must be an index or a name substring, got " + v.dump());
}

h0cl::Selection parse_options(const char* options_json) {
  Json options;
  try {
    options = options_json == nullptr || *options_json == '\0' ? Json::object() : Json::parse(options_json);
  } catch (const Json::exception& e) {
    throw h0p::OpError(HB_INVALID_ARGUMENT, std::string("opencl: options are not JSON: ") + e.what());
  }
  if (options.is_null()) options = Json::object();
  if (!options.is_object())
    throw h0p::OpError(HB_INVALID_ARGUMENT, "opencl: options must be an object, got " + options.dump());
  h0cl::Selection sel;
  for (const auto& [key, value] : options.items()) {
    if (key == "platform") {
      sel.platform = selector(value, "platform");
    } else if (key == "device") {
      sel.device = selector(value, "device");
    } else if (key == "f16" && value.is_boolean()) {
      sel.force_f16 = value.get<bool>();
    } else {
      throw h0p::OpError(HB_INVALID_ARGUMENT, "opencl: bad option '" + key + "': " + value.dump() +
                                                  " (expected platform, device: an index or a name part; f16: a boolean)");
    }
  }
  return sel;
}

hb_status cl_init(void*, const hb_host_api* host, const char* options_json) {
  g_plugin.host = host;
  return guarded([&] {
    const h0cl::Selection sel = parse_options(options_json);
    g_plugin.cl.reset();
    g_plugin.cl = std::make_unique<h0cl::ClContext>(sel, [](int level, const std::string& m) {
      if (g_plugin.host != nullptr && g_plugin.host->log != nullptr) g_plugin.host->log(level, m.c_str());
    });
    g_plugin.stack_info = g_plugin.cl->stack_info();
  });
}

const char* cl_stack_info_json(void*) { return g_plugin.stack_info.c_str(); }

int32_t cl_supports(void*, const char* op, hb_dtype dtype) {
  return g_plugin.cl ? h0p::device_supports(*g_plugin.cl, op, dtype) : 0;
}

// Every call below needs init to have succeeded.
hb_status not_ready() { return fail(HB_DEVICE_ERROR, "opencl: the backend is not initialized"); }

hb_status cl_alloc(void*, size_t bytes, void** device_ptr) {
  if (!g_plugin.cl) return not_ready();
  if (device_ptr == nullptr) return fail(HB_INVALID_ARGUMENT, "alloc: device_ptr is null");
  return guarded([&] { *device_ptr = g_plugin.cl->alloc(bytes); });
}

void cl_free(void*, void* device_ptr) {
  if (g_plugin.cl) g_plugin.cl->release(device_ptr);
}

hb_status cl_copy_to_device(void*, void* dst, const void* src, size_t bytes) {
  if (!g_plugin.cl) return not_ready();
  return guarded([&] { g_plugin.cl->write(dst, src, bytes); });
}

hb_status cl_copy_to_host(void*, void* dst, const void* src, size_t bytes) {
  if (!g_plugin.cl) return not_ready();
  return guarded([&] { g_plugin.cl->read(dst, src, bytes); });
}

hb_status cl_run_op(void*, const char* op, const hb_tensor* inputs, int32_t n_inputs, hb_tensor* outputs,
                    int32_t n_outputs, const char* attrs_json) {
  if (!g_plugin.cl) return not_ready();
  return guarded([&] { h0p::run_device_op(*g_plugin.cl, op, inputs, n_inputs, outputs, n_outputs, attrs_json); });
}

hb_status cl_synchronize(void*) {
  if (!g_plugin.cl) return not_ready();
  return guarded([] { g_plugin.cl->finish(); });
}

// OpenCL reports the device's global memory size but not what is free: total only.
hb_status cl_memory_info(void*, size_t* free_bytes, size_t* total_bytes) {
  if (!g_plugin.cl) return not_ready();
  return fail(HB_UNSUPPORTED, "opencl: free device memory is not reported by OpenCL (total " +
                                  std::to_string(g_plugin.cl->total_memory()) + " bytes)");
}

const char* cl_last_error(void*) { return g_plugin.last_error.c_str(); }

void cl_shutdown(void*) { g_plugin.cl.reset(); }

const hb_backend kBackend = {
    HB_ABI_VERSION, "opencl", &g_plugin, &cl_init, &cl_stack_info_json, &cl_supports, &cl_alloc,
    &cl_free, &cl_copy_to_device, &cl_copy_to_host, &cl_run_op, &cl_synchronize, &cl_memory_info,
    &cl_last_error, &cl_shutdown,
};

}  // namespace

// The one symbol the plugin exports (everything else is hidden: -fvisibility=hidden).
extern "C" __attribute__((visibility("default"))) const hb_backend* hb_backend_entry(void) { return &kBackend; }
