// `kind: load` (load_check.cc).
#pragma once

#include "checks/check.h"

namespace h0::checks {

CheckKind load_check_kind();

}  // namespace h0::checks
