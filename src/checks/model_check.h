// Check kinds `model`, `image`, `layer` and `prefill_consistency` (model_check.cc).
#pragma once

#include "checks/check.h"

namespace h0::checks {

CheckKind model_check_kind();
CheckKind image_check_kind();
CheckKind layer_check_kind();
// kind prefill_consistency: a synthetic long prompt prefilled whole and in chunks must agree (the
// long-context stage's golden-free evidence for a model without long goldens).
CheckKind prefill_consistency_check_kind();

}  // namespace h0::checks
