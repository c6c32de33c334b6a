// STUB: to be replaced by the real catalogue entries.
#include "ops/op_list.h"

namespace h0::ops {
const OpDef& embedding_op() { static const OpDef op = {.name = "embedding"}; return op; }
const OpDef& patch_embed_op() { static const OpDef op = {.name = "patch_embed"}; return op; }
}  // namespace h0::ops
