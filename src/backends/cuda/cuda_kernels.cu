// The portable kernels (../portable/kernels) compiled as CUDA, once per storage dtype, each in
// its own namespace; h0_cuda_kernel() finds one by name for cudaLaunchKernel.
#include <cstring>

#include "../portable/kernels/kernel_list.h"
#include "../portable/kernels/prelude_cuda.cuh"
#include "cuda_kernels.h"

// One namespace per dtype: T, LD and ST for that dtype, then every kernel file.
namespace h0cu_f32 {
typedef float T;
#define LD(p, i) ((p)[i])
#define ST(p, i, v) ((p)[i] = (v))
#include "../portable/kernels/common.inc"
#include "../portable/kernels/elementwise.inc"
#include "../portable/kernels/rows.inc"
#include "../portable/kernels/gemm.inc"
#include "../portable/kernels/attention.inc"
#include "../portable/kernels/moe.inc"
#include "../portable/kernels/linear_attention.inc"
#include "../portable/kernels/sparse_attention.inc"
#include "../portable/kernels/quant.inc"
#undef LD
#undef ST
}  // namespace h0cu_f32

namespace h0cu_f16 {
typedef __half T;
#define LD(p, i) __half2float((p)[i])
#define ST(p, i, v) ((p)[i] = __float2half_rn(v))
#include "../portable/kernels/common.inc"
#include "../portable/kernels/elementwise.inc"
#include "../portable/kernels/rows.inc"
#include "../portable/kernels/gemm.inc"
#include "../portable/kernels/attention.inc"
#include "../portable/kernels/moe.inc"
#include "../portable/kernels/linear_attention.inc"
#include "../portable/kernels/sparse_attention.inc"
#include "../portable/kernels/quant.inc"
#undef LD
#undef ST
}  // namespace h0cu_f16

namespace h0cu_bf16 {
typedef u16 T;  // bf16 bits; f32 math (bf16_to_f32 / f32_to_bf16 in common.inc)
#define LD(p, i) bf16_to_f32((p)[i])
#define ST(p, i, v) ((p)[i] = f32_to_bf16(v))
#include "../portable/kernels/common.inc"
#include "../portable/kernels/elementwise.inc"
#include "../portable/kernels/rows.inc"
#include "../portable/kernels/gemm.inc"
#include "../portable/kernels/attention.inc"
#include "../portable/kernels/moe.inc"
#include "../portable/kernels/linear_attention.inc"
#include "../portable/kernels/sparse_attention.inc"
#include "../portable/kernels/quant.inc"
#undef LD
#undef ST
}  // namespace h0cu_bf16

namespace {

struct KernelEntry {
  const char* name;
  const void* fn;
};

#define H0_ENTRY_F32(name) {#name, reinterpret_cast<const void*>(&h0cu_f32::name)},
#define H0_ENTRY_F16(name) {#name, reinterpret_cast<const void*>(&h0cu_f16::name)},
#define H0_ENTRY_BF16(name) {#name, reinterpret_cast<const void*>(&h0cu_bf16::name)},
const KernelEntry kF32[] = {H0_PORTABLE_KERNELS(H0_ENTRY_F32)};
const KernelEntry kF16[] = {H0_PORTABLE_KERNELS(H0_ENTRY_F16)};
const KernelEntry kBF16[] = {H0_PORTABLE_KERNELS(H0_ENTRY_BF16)};

}  // namespace

const void* h0_cuda_kernel(const char* name, hb_dtype dtype) {
  const KernelEntry* table = dtype == HB_F32 ? kF32 : dtype == HB_F16 ? kF16 : dtype == HB_BF16 ? kBF16 : nullptr;
  if (table == nullptr || name == nullptr) return nullptr;
  for (size_t i = 0; i < sizeof(kF32) / sizeof(kF32[0]); ++i) {
    if (std::strcmp(table[i].name, name) == 0) return table[i].fn;
  }
  return nullptr;
}

const char* h0_cuda_compiler() {
#define H0_STR2(x) #x
#define H0_STR(x) H0_STR2(x)
  return "nvcc " H0_STR(__CUDACC_VER_MAJOR__) "." H0_STR(__CUDACC_VER_MINOR__) "." H0_STR(__CUDACC_VER_BUILD__);
}
