#include "mesh_run.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_read.h"
#include "mesh/faulty_communicator.h"

namespace h0::cli {

std::map<std::string, std::string> parse_labels(const std::vector<std::string>& items) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--label " + item, "expected KEY=VALUE, e.g. stack=cann-8.1.rc2");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

MeshRun open_mesh(const std::string& fault, double timeout_s) {
  MeshRun m;
  const mesh::RankEnv env = mesh::detect_rank_env();
  if (env.size <= 1) {
    if (!fault.empty())
      throw InputError("--mesh-fault", "needs a multi-rank run (mpirun -np N harness run ...)");
    return m;
  }
  m.world = mesh::make_world_communicator(timeout_s);
  if (!fault.empty()) {
    const nlohmann::json options = base::parse_json(fault, "--mesh-fault");
    m.world = mesh::make_faulty_communicator(std::move(m.world), options);
  }
  m.root = m.world->rank() == 0;
  m.name = m.world->engine() + " x" + std::to_string(m.world->size());
  return m;
}

}  // namespace h0::cli
