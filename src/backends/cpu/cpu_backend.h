// The `cpu` backend: the default platform under test. An independent implementation of every
// catalogue operator on the host, GEMMs on OpenBLAS sgemm, everything else in f32 on
// base::parallel_for, behind the same plugin ABI a vendor library fills
// (backend/harness_backend.h). f64 is deliberately unsupported so the harness's fallback runs.
#pragma once

#include "backend/harness_backend.h"

// The backend's ABI table; a process-wide singleton, valid for the life of the program.
const hb_backend* h0_cpu_backend_entry();
