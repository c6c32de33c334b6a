// Rank discovery from the launcher's environment, and the world communicator built on it.
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "mesh/communicator.h"

namespace h0::mesh {
namespace {

// One launcher: the variables holding this process's rank, the world size and the rank on
// this node. The first launcher whose rank and size are both set wins.
struct LauncherVars {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
};

constexpr LauncherVars kLaunchers[] = {
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},                         // Open MPI
    {"mpirun", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},  // MPICH, Intel MPI
    {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
};

// The variable's value as a non-negative integer; `fallback` when unset. Throws InputError
// naming the variable when it is set to something else.
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  int out = -1;
  const char* end = v + std::strlen(v);
  auto [p, ec] = std::from_chars(v, end, out);
  if (ec != std::errc() || p != end || out < 0) {
    throw InputError("environment",
                     std::string(name) + "='" + v + "' is not a non-negative integer");
  }
  return out;
}

}  // namespace

RankEnv detect_rank_env() {
  for (const LauncherVars& l : kLaunchers) {
    if (std::getenv(l.rank) == nullptr || std::getenv(l.size) == nullptr) continue;
    RankEnv e;
    e.launcher = l.launcher;
    e.rank = env_int(l.rank, 0);
    e.size = env_int(l.size, 1);
    e.local_rank = env_int(l.local_rank, 0);
    if (e.size < 1 || e.rank >= e.size) {
      throw InputError("environment", std::string(l.rank) + "=" + std::to_string(e.rank) +
                                          " is not a rank of " + l.size + "=" +
                                          std::to_string(e.size));
    }
    return e;
  }
  return {};
}

std::unique_ptr<Communicator> make_world_communicator(double timeout_s) {
  const RankEnv env = detect_rank_env();
  if (env.size == 1) return make_single_communicator();
  if (!HARNESS_HAVE_MPI) {
    throw MeshError(env.launcher + " started " + std::to_string(env.size) +
                    " ranks, but this build has no MPI (configure with HARNESS_WITH_MPI=ON)");
  }
  std::unique_ptr<Communicator> world = make_mpi_communicator(timeout_s);
  if (world->size() != env.size || world->rank() != env.rank) {
    throw MeshError(env.launcher + " says rank " + std::to_string(env.rank) + " of " +
                    std::to_string(env.size) + " but MPI sees rank " +
                    std::to_string(world->rank()) + " of " + std::to_string(world->size()) +
                    " (launch multi-rank runs with mpirun or srun)");
  }
  return world;
}

}  // namespace h0::mesh
