// kind: rounding — which rounding the platform's kernels use for an op in a dtype, told bit for
// bit from probes whose exact result is known (compare/rounding.h). Passes when every output is
// round-to-nearest-even's; otherwise fails naming the rounding the outputs follow ("rounds toward
// zero (truncation)", "... flushing subnormal results to zero") or what none explains.
//   - id: rounding/add-bf16
//     kind: rounding
//     op: add          # add or mul
//     dtype: bf16      # f32, bf16, f16
#pragma once

#include "checks/check.h"

namespace h0::checks {

CheckKind rounding_check_kind();

}  // namespace h0::checks
