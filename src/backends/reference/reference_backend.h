// The `reference` backend: the catalogue's reference kernels on host memory. The yardstick
// the other backends are compared with when a check says `golden: reference`.
#pragma once

#include "backend/harness_backend.h"

const hb_backend* h0_reference_backend_entry();
