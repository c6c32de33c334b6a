// The CUDA side of the cuda plugin: one device, its buffers (device addresses are the plugin's
// device pointers), kernel launches on the default stream, and cuBLAS for the GEMMs. Implements
// h0p::Device, so the portable ops (../portable) run on it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "../portable/device.h"

namespace h0cuda {

class CudaDevice : public h0p::Device {
 public:
  // Opens device `index`. Throws h0p::OpError(HB_DEVICE_ERROR) with
  // "cuda: no CUDA device (cudaGetDeviceCount: ...)" when there is none, and
  // HB_INVALID_ARGUMENT for an index out of range.
  explicit CudaDevice(int index);
  ~CudaDevice() override;

  bool has_dtype(hb_dtype dtype) const override;  // f32, f16, bf16
  void launch(const char* name, hb_dtype dtype, const h0p::Grid& grid,
              std::initializer_list<h0p::Arg> args) override;
  // cudaMalloc / cudaFree; blocking cudaMemcpy each way.
  void* alloc(size_t bytes) override;
  void release(void* handle) override;
  void write(void* handle, const void* src, size_t bytes) override;
  void read(void* dst, const void* handle, size_t bytes) override;
  // cublasGemmEx, f32 compute (no TF32). f32: the bias is broadcast into c first (beta = 1).
  // bf16/f16 with a bias: the product goes to an f32 scratch and add_bias_f32 rounds once.
  void gemm(hb_dtype dtype, const void* a, const void* b, const void* bias, void* c, int m, int n,
            int k, bool b_trans) override;
  void synchronize();
  void memory_info(size_t* free_bytes, size_t* total_bytes);

 private:
  int index_ = 0;
  cublasHandle_t blas_ = nullptr;
  void* scratch_ = nullptr;  // f32 GEMM results before the bias (grown as needed)
  size_t scratch_bytes_ = 0;
};

}  // namespace h0cuda
