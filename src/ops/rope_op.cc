// STUB: to be replaced by the real catalogue entries.
#include "ops/op_list.h"

namespace h0::ops {
const OpDef& rope_op() { static const OpDef op = {.name = "rope"}; return op; }
}  // namespace h0::ops
