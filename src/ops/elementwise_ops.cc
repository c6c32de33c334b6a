// STUB: to be replaced by the real catalogue entries.
#include "ops/op_list.h"

namespace h0::ops {
const OpDef& add_op() { static const OpDef op = {.name = "add"}; return op; }
const OpDef& mul_op() { static const OpDef op = {.name = "mul"}; return op; }
const OpDef& silu_op() { static const OpDef op = {.name = "silu"}; return op; }
const OpDef& gelu_op() { static const OpDef op = {.name = "gelu"}; return op; }
const OpDef& swiglu_op() { static const OpDef op = {.name = "swiglu"}; return op; }
}  // namespace h0::ops
