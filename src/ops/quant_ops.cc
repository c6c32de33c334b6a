// STUB: to be replaced by the real catalogue entries.
#include "ops/op_list.h"

namespace h0::ops {
const OpDef& quantize_op() { static const OpDef op = {.name = "quantize"}; return op; }
const OpDef& dequantize_op() { static const OpDef op = {.name = "dequantize"}; return op; }
}  // namespace h0::ops
