// STUB: to be replaced by the real catalogue entries.
#include "ops/op_list.h"

namespace h0::ops {
const OpDef& moe_gate_op() { static const OpDef op = {.name = "moe_gate"}; return op; }
const OpDef& moe_experts_op() { static const OpDef op = {.name = "moe_experts"}; return op; }
}  // namespace h0::ops
