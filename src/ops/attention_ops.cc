// STUB: to be replaced by the real catalogue entries.
#include "ops/op_list.h"

namespace h0::ops {
const OpDef& attention_op() { static const OpDef op = {.name = "attention"}; return op; }
const OpDef& paged_attention_op() { static const OpDef op = {.name = "paged_attention"}; return op; }
}  // namespace h0::ops
