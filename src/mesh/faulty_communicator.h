// A Communicator decorator that injects one fault into one rank's operations, for tests of the
// mesh and of the checks that must notice a wrong or missing peer (DESIGN.md: faulty backends
// do the same for ops). Options, as JSON (a platform config's `mesh_fault:`):
//   {op: all_reduce, rank: 1, call: 2, fault: drop}
//   op     all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send, recv, send_recv,
//          barrier (required)
//   rank   the misbehaving rank of the wrapped communicator (default 0)
//   call   which call of `op` on that rank, counted from 1 (default 1), or "every"
//   fault  drop   the rank takes part (its peers are unaffected) but keeps what it had without
//                 them: all_reduce recv = send (its partial sum only), reduce_scatter recv = its
//                 own block of send, the others leave recv (broadcast: buf) as it was
//          scale  the rank's result is multiplied by `factor` (default 2)
//          delay  the rank sleeps `seconds` (default 10) before the operation
//          exit   the rank leaves through std::exit(`exit_code`, default 0) before the operation
//                 (atexit handlers, MPI_Finalize among them, run); its peers see a rank that
//                 stopped answering
// drop and scale need an operation with a result (not send, barrier) and host buffers (the
// single and MPI engines). split() wraps the wrapped communicator's split with the same fault,
// still aimed at this rank and counting its calls over every communicator split from this one.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "mesh/communicator.h"

namespace h0::mesh {

// Throws InputError("mesh_fault", what is wrong) for bad options.
std::unique_ptr<Communicator> make_faulty_communicator(std::unique_ptr<Communicator> inner,
                                                       const nlohmann::json& options);

}  // namespace h0::mesh
