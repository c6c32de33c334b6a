// The OpenCL C side of the portable kernel dialect (see common.inc). Prepended to the kernel
// sources; the program is built once per storage dtype with -DH0_DTYPE=<hb_dtype value>.
#pragma OPENCL FP_CONTRACT OFF
#define KERNEL __kernel void
#define DEVICE_FN static inline
#define GLOBAL __global
#define LOCAL_PTR __local
#define LOCAL_ARRAY(type, name, n) __local type name[n]
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define BARRIER_ALL() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#define GROUP_ID(d) ((int)get_group_id(d))
#define LOCAL_ID(d) ((int)get_local_id(d))
#define LOCAL_SIZE(d) ((int)get_local_size(d))
#define AS_UINT(f) as_uint(f)
#define AS_FLOAT(u) as_float(u)
typedef long i64;
typedef uint u32;
typedef ushort u16;
typedef uchar u8;
#if H0_DTYPE == 1
typedef float T;
#define LD(p, i) ((p)[i])
#define ST(p, i, v) ((p)[i] = (v))
#elif H0_DTYPE == 2
// f16 as storage only: vload_half / vstore_half_rte are core OpenCL, the math is f32.
typedef half T;
#define LD(p, i) vload_half((i), (p))
#define ST(p, i, v) vstore_half_rte((v), (i), (p))
#elif H0_DTYPE == 3
typedef ushort T;
#define LD(p, i) bf16_to_f32((p)[i])
#define ST(p, i, v) ((p)[i] = f32_to_bf16(v))
#else
#error "H0_DTYPE must be 1 (f32), 2 (f16) or 3 (bf16)"
#endif
