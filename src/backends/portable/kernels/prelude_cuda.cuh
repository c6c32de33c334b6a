// The CUDA side of the portable kernel dialect (see common.inc). cuda_kernels.cu includes the
// kernel files once per storage dtype, each time inside its own namespace with T, LD and ST
// defined for that dtype.
#pragma once
#include <cuda_fp16.h>

#define KERNEL __global__ void
#define DEVICE_FN static __device__ __forceinline__
#define GLOBAL
#define LOCAL_PTR
#define LOCAL_ARRAY(type, name, n) __shared__ type name[n]
#define BARRIER() __syncthreads()
#define BARRIER_ALL() __syncthreads()
#define GROUP_ID(d) ((int)((d) == 0 ? blockIdx.x : blockIdx.y))
#define LOCAL_ID(d) ((int)((d) == 0 ? threadIdx.x : threadIdx.y))
#define LOCAL_SIZE(d) ((int)((d) == 0 ? blockDim.x : blockDim.y))
#define AS_UINT(f) __float_as_uint(f)
#define AS_FLOAT(u) __uint_as_float(u)
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
