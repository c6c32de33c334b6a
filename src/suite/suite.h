// A suite file: its checks, with defaults merged and includes expanded, validated against the
// registered check kinds. Field values a kind reads for itself (op, attrs, golden, ...) stay
// YAML nodes, with their positions, for the checks module to parse.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
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

// A suite a program builds instead of reading it from a file (day0's cases for a model): each
// of `checks` is a mapping as a suite file's `checks:` entry (build them with yaml_of), and is
// validated as one read from a file; `origin` stands for the file in messages and in the cases'
// relative paths. Throws InputError as load_suite does.
Suite suite_of_checks(const std::string& name, const std::string& origin,
                      const std::vector<YAML::Node>& checks);

// A JSON value as the YAML node a suite file would hold for it: scalars plain (tag "?") as a file
// writes them, but a string that plain would read as another type (a number, a boolean, null)
// quoted.
YAML::Node yaml_of(const nlohmann::json& value);

}  // namespace h0::suite
