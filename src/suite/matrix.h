// Matrix expansion: each check becomes one concrete case per combination of its matrix values.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "suite/suite.h"

namespace h0::suite {

// One concrete case. `check` points into the Suite it was expanded from, which must outlive
// it. Holds yaml-cpp nodes: copy-construct cases, never assign one over another (a node's
// assignment writes through to the node it was bound to).
struct Case {
  std::string id;  // "rmsnorm" without matrix, else "rmsnorm[dtype=bf16,shape=7x4096]"
  const CheckSpec* check = nullptr;
  std::vector<std::pair<std::string, YAML::Node>> params;  // in the matrix's order
};

// Every case of every check, in check order. Within a check: the cartesian product of the
// matrix in the order written, the first parameter varying slowest. Throws InputError at a
// value that formats like an earlier value of the same parameter (case ids must be unique).
std::vector<Case> expand(const Suite& suite);

// A matrix value as it appears in case ids: a scalar exactly as written; a sequence of
// scalars joined with 'x' ([7, 4096] -> 7x4096); a sequence holding sequences or mappings
// joined with '_' ([[1, 2], [3]] -> 1x2_3); a mapping as k1=v1;k2=v2; null as "null".
std::string format_value(const YAML::Node& value);

}  // namespace h0::suite
