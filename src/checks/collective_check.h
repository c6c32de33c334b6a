// `kind: collective` — one collective of the mesh communicator over a sweep of sizes, checked
// and timed the way nccl-tests does it: inputs crafted so the exact result is known on every
// rank, a count of wrong elements per size (out of place and in place), algbw and busbw.
//
//   - id: all_reduce
//     kind: collective
//     op: all_reduce            # all_reduce, all_gather, reduce_scatter, all_to_all, broadcast,
//                               # send_recv (a ring: rank r sends to r + 1)
//     reduce: sum               # sum | max (all_reduce, reduce_scatter; default sum)
//     dtype: bf16               # f32, bf16, f16, i32, ... (default f32)
//     sizes: {min: 8B, max: 64MiB, factor: 2}   # or a list [1KiB, 1MiB], or one size
//     root: 0                   # broadcast (default 0)
//     engine: world             # world (the run's communicator) | nccl (device buffers)
//     warmup: 2, repeats: 5     # untimed, then timed calls per size and form
//     timeout: 120s
// Sizes are nccl-tests' "size": the whole buffer of size() blocks for all_gather,
// reduce_scatter and all_to_all. Any world size runs (at 1, every collective is a copy and
// busbw is 0 by the factors). Metrics, identical on every rank (wrong summed over ranks, time
// the slowest rank's mean): wrong@<size>, algbw_gbps@<size>, busbw_gbps@<size> (suffixed
// _in_place for the in-place form of collectives with both), wrong_total, busbw_gbps_max,
// ranks. Profile rows: phase "collective", name "all_reduce[1MiB]" / "all_reduce[1MiB,in_place]".
#pragma once

#include "checks/check.h"

namespace h0::checks {

CheckKind collective_check_kind();

}  // namespace h0::checks
