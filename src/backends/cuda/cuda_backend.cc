// The `cuda` plugin: matmul and linear on cuBLAS (cublasGemmEx, f32 compute), every other op
// with kernels on the portable kernels (../portable) compiled by nvcc, behind the plugin ABI
// alone (loaded with dlopen; exports only hb_backend_entry). Options: {"device": 0}.
// f32, f16 and bf16; fp8 scaled_linear in f32 with its weight dequantized on the device
// (../portable/ops_quant.cc; bf16/f16 calls are decomposed) and dequantize_mxfp4; sample,
// quantize, dequantize and f64 are answered unsupported, so the harness falls back for them.
// Without a device, init fails with "cuda: no CUDA device (cudaGetDeviceCount: ...)" and nothing
// else is called. Timing: the ABI has no device-timer hook, so op checks time run_op + synchronize
// on the host.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "../portable/device_plugin.h"
#include "cuda_device.h"
#include "harness_backend.h"

namespace {

std::unique_ptr<h0cuda::CudaDevice> open_device(const nlohmann::json& options,
                                                const hb_host_api* host) {
  int device = 0;
  for (const auto& [key, value] : options.items()) {
    if (key != "device" || !value.is_number_unsigned())
      throw h0p::OpError(HB_INVALID_ARGUMENT, "cuda: bad option '" + key + "': " + value.dump() +
                                                  " (expected device: a device index)");
    device = value.get<int>();
  }
  auto dev = std::make_unique<h0cuda::CudaDevice>(device);
  if (host != nullptr && host->log != nullptr) host->log(1, ("cuda: " + dev->stack_info()).c_str());
  return dev;
}

}  // namespace

// The one symbol the plugin exports (everything else is hidden: -fvisibility=hidden).
extern "C" __attribute__((visibility("default"))) const hb_backend* hb_backend_entry(void) {
  return h0p::DevicePlugin<h0cuda::CudaDevice>::entry("cuda", &open_device);
}
