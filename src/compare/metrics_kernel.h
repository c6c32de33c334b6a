// The inner loop of compute_metrics for blocks whose elements are all finite (the usual case):
// one pass over the raw actual/expected elements, upcast to f64 in registers. Compiled for
// AVX-512, AVX2 and baseline x86-64 and chosen at run time. Every variant accumulates in eight
// fixed lanes (lane j takes elements j, j+8, ...) without fused multiply-adds, so all of them
// give the same bits. Internal to compare/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace h0::compare::detail {

struct KernelParams {
  double eps_e;  // denominator where expected == 0 (msprobe's convention)
  double rtol;
  double atol;
};

// One block's results. If sum_aa or sum_ee is not finite the block held a NaN or Inf (or a
// square overflowed) and the caller redoes it on the general path.
struct BlockSums {
  double sum_d = 0, sum_d2 = 0, sum_aa = 0, sum_ee = 0, sum_ae = 0;
  double max_d = 0;
  double max_rel = 0;
  double lt_1e3 = 0, lt_5e3 = 0;
  double violations = 0, max_excess = 0;
  uint64_t max_ulp = 0;  // only from kernels asked for it
};

using BlockKernel = BlockSums (*)(const void* actual, const void* expected, size_t n,
                                  const KernelParams& params);

// The kernel for this dtype pair on this CPU; nullptr for pairs without one (f8, integers),
// which the caller upcasts to f64 first and runs through block_kernel(kF64, kF64). With
// `with_ulp` and equal dtypes the kernel also computes max_ulp.
BlockKernel block_kernel(tensor::DType actual, tensor::DType expected, bool with_ulp = false);

// Largest distance in units in the last place between same-dtype elements, over a block that
// holds no NaN: sign-magnitude bits mapped onto one integer line (+0 and -0 meet at 0).
using UlpKernel = uint64_t (*)(const void* actual, const void* expected, size_t n);
UlpKernel ulp_kernel(tensor::DType dtype);  // float dtypes only

// The instruction set used: 2 AVX-512, 1 AVX2, 0 baseline. HARNESS_ISA=avx512|avx2|baseline
// lowers it (for tests and for comparing machines).
int isa_level();
// Overrides the level for the rest of the process (tests).
void force_isa_level(int level);

}  // namespace h0::compare::detail
