// A suite file: its checks, with defaults merged and includes expanded, validated against the
// registered check kinds. Field values a kind reads for itself (op, attrs, golden, ...) stay
// YAML nodes, with their positions, for the checks module to parse.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "suite/location.h"

namespace h0::suite {

struct CheckSpec {
  std::string id, kind;
  std::string file;  // the suite file it came from
  Location where;    // of the check's mapping
  // The check mapping after merging defaults. It shares nodes with the parsed file (and, for
  // fields taken from defaults, with other checks): read it, never modify it.
  YAML::Node node;
  std::vector<std::string> tags;
  std::string skip_reason, xfail_reason;  // empty = not skipped / not expected to fail
  // The matrix in the order written: param name -> values (each a YAML node, with its location).
  std::vector<std::pair<std::string, std::vector<YAML::Node>>> matrix;
};

struct Suite {
  std::string name, description;
  std::string file;                // the path given to load_suite
  std::string sha256;              // of that file's contents
  std::vector<CheckSpec> checks;   // included checks first, in include order, then the file's own
  std::vector<std::string> files;  // every file read, in the order read, each once
};

// A check kind and the fields it accepts besides the common ones (id, kind, matrix, tolerance,
// tags, skip, xfail). The checks module registers its kinds; tests may register their own.
struct KindSchema {
  std::string kind;
  std::vector<std::string> fields;
};

// Adds a kind; registering a kind again replaces it in place. Not thread-safe: register at
// startup, before loading suites.
void register_kind(KindSchema schema);
// The registered kinds, in registration order.
const std::vector<KindSchema>& kinds();

// The fields every check accepts, whatever its kind.
const std::vector<std::string>& common_fields();

// Reads and validates a suite file and everything it includes. Include paths are relative to
// the including file; a file included twice (a diamond) is read once, at its first include.
// Throws InputError naming file:line:col on any mistake.
Suite load_suite(const std::string& path);

}  // namespace h0::suite
