// Element-wise conversion between any two dtypes, as PyTorch's `.to(dtype)` does it:
//   float -> float: through f32 (f64 -> bf16 rounds twice, like torch), see float_bits.h;
//   float -> int: NaN -> 0, truncation toward zero, saturating at the type's range;
//   anything -> bool: nonzero (NaN included) -> true; int -> float: nearest.
#pragma once

#include <cstddef>

#include "tensor/dtype.h"

namespace h0::tensor {

// Converts n elements of `src` (dtype `from`) into `dst` (dtype `to`). The buffers must not
// overlap unless from == to. O(n), no allocation.
void convert(const void* src, DType from, void* dst, DType to, size_t n);

}  // namespace h0::tensor
