// What `harness run` and `harness day0` share about the process they run in: the world
// communicator under a launcher (mpirun, srun, torchrun) and the store's stack labels.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mesh/communicator.h"

namespace h0::cli {

// Under a launcher with more than one rank, every rank runs in-process over one world
// communicator; rank 0 alone prints, writes the store and the reports.
struct MeshRun {
  std::unique_ptr<mesh::Communicator> world;
  bool root = true;
  std::string name;  // the store's `mesh` of the run: "mpi x4"; empty for one rank
};

// `fault`: JSON options of mesh::make_faulty_communicator (tests); "" for none.
MeshRun open_mesh(const std::string& fault, double timeout_s);

// --label KEY=VALUE items. Throws InputError naming a malformed one.
std::map<std::string, std::string> parse_labels(const std::vector<std::string>& items);

}  // namespace h0::cli
