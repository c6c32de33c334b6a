// Check kinds `model`, `image` and `layer` (model_check.cc).
#pragma once

#include "checks/check.h"

namespace h0::checks {

CheckKind model_check_kind();
CheckKind image_check_kind();
CheckKind layer_check_kind();

}  // namespace h0::checks
