// The portable kernels compiled by nvcc (cuda_kernels.cu), for the host code compiled by g++.
#pragma once

#include "harness_backend.h"

// The host stub of kernel `name` (kernels/kernel_list.h) built for `dtype` (f32, f16, bf16),
// for cudaLaunchKernel; nullptr if there is none.
const void* h0_cuda_kernel(const char* name, hb_dtype dtype);
// "nvcc 13.0.48": the compiler the kernels were built with.
const char* h0_cuda_compiler();
