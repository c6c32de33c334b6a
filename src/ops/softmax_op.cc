// STUB: to be replaced by the real catalogue entries.
#include "ops/op_list.h"

namespace h0::ops {
const OpDef& softmax_op() { static const OpDef op = {.name = "softmax"}; return op; }
}  // namespace h0::ops
