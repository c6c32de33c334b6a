// `kind: dump` (dump_check.cc).
#pragma once

#include "checks/check.h"

namespace h0::checks {

CheckKind dump_check_kind();

}  // namespace h0::checks
