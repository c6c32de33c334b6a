// STUB: to be replaced by the real catalogue entries.
#include "ops/op_list.h"

namespace h0::ops {
const OpDef& argmax_op() { static const OpDef op = {.name = "argmax"}; return op; }
const OpDef& sample_op() { static const OpDef op = {.name = "sample"}; return op; }
}  // namespace h0::ops
