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

#include "../portable/device_plugin.h"
#include "harness_backend.h"
#include "opencl_context.h"

namespace {

using Json = nlohmann::json;

// An option given as an index or a name: "0" or "PoCL".
std::string selector(const Json& v, const char* key) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  throw h0p::OpError(HB_INVALID_ARGUMENT, std::string("opencl: option ") + key +
                                              " must be an index or a name substring, got " +
                                              v.dump());
}

std::unique_ptr<h0cl::ClContext> open_device(const Json& options, const hb_host_api* host) {
  h0cl::Selection sel;
  for (const auto& [key, value] : options.items()) {
    if (key == "platform") {
      sel.platform = selector(value, "platform");
    } else if (key == "device") {
      sel.device = selector(value, "device");
    } else if (key == "f16" && value.is_boolean()) {
      sel.force_f16 = value.get<bool>();
    } else {
      throw h0p::OpError(
          HB_INVALID_ARGUMENT,
          "opencl: bad option '" + key + "': " + value.dump() +
              " (expected platform, device: an index or a name part; f16: a boolean)");
    }
  }
  return std::make_unique<h0cl::ClContext>(sel, [host](int level, const std::string& m) {
    if (host != nullptr && host->log != nullptr) host->log(level, m.c_str());
  });
}

}  // namespace

// The one symbol the plugin exports (everything else is hidden: -fvisibility=hidden).
extern "C" __attribute__((visibility("default"))) const hb_backend* hb_backend_entry(void) {
  return h0p::DevicePlugin<h0cl::ClContext>::entry("opencl", &open_device);
}
