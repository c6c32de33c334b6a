// STUB: to be replaced by the real catalogue entries.
#include "ops/op_list.h"

namespace h0::ops {
const OpDef& matmul_op() { static const OpDef op = {.name = "matmul"}; return op; }
const OpDef& linear_op() { static const OpDef op = {.name = "linear"}; return op; }
}  // namespace h0::ops
