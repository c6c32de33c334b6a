// The MPI runtime as the MPI engine uses it (internal to mesh/, built with HARNESS_HAVE_MPI):
// initialization on first use, errors as MeshError, deadline-bounded waits, dtype mapping.
#pragma once

// The C API only: MPI's deprecated C++ bindings would need libmpi_cxx.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <string>

#include "mesh/communicator.h"

namespace h0::mesh::mpi {

// Initializes MPI on the first call (MPI_Init_thread asking for MPI_THREAD_FUNNELED; MPI_Finalize
// registered with atexit) unless someone else already did, and sets MPI_ERRORS_RETURN on
// MPI_COMM_WORLD. Thread-safe. Throws MeshError if MPI is finalized or gives less threading.
void ensure_initialized();
// Throws MeshError(prefix + MPI_Error_string(rc)) unless rc is MPI_SUCCESS.
void check(int rc, const std::string& prefix);
// Polls the requests with MPI_Testall until all completed (returns true) or `timeout_s` seconds
// passed or MPI failed (false; *error is MPI's error code, MPI_SUCCESS on a timeout; the
// requests stay pending). timeout_s <= 0 waits forever. Nothing allocated: it is on every call's
// path.
bool wait_all(MPI_Request* requests, int n, double timeout_s, int* error);
// The MPI type moving elements of `dtype` (an integer of the element's width for f16/bf16/f8).
MPI_Datatype element_type(tensor::DType dtype);
// The MPI type reducing `dtype`; f16 and bf16 map to MPI_FLOAT (the caller widens them).
MPI_Datatype reduce_type(tensor::DType dtype);
MPI_Op reduce_op(ReduceOp op);

}  // namespace h0::mesh::mpi
