// The executor's view of one rank of a parallel plan (model/exec/sharding.h): its slices of every
// weight (shard_of), its heads, vocabulary rows, layers and experts, and the communicators of
// its tensor-parallel group, expert-parallel group and pipeline, split from `world`.
#pragma once

#include <memory>

#include "mesh/communicator.h"
#include "model/config/architecture.h"
#include "model/exec/sharding.h"
#include "plan/parallel_plan.h"

namespace h0::plan {

// Collective over `world` (every rank must call it). Throws InputError when world.size() is
// not plan.world(), or for a plan this executor cannot run (experts split by both ep and tp).
std::unique_ptr<model::Sharding> execution_sharding(const model::Architecture& arch,
                                                    const ParallelPlan& plan,
                                                    mesh::Communicator& world);

}  // namespace h0::plan
