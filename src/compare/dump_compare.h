// Comparing two directories of probe dumps (safetensors; one file per prompt or step, or one
// per probe), e.g. golden/tools/dump_hf.py run on the reference stack and on the platform, or
// `harness model run --dump`. Files pair by name; tensors by name, exactly or through a map
// (golden name -> actual name, and prefix rewrites); probes are reported in the golden's
// execution order (its `probes` metadata) with the first divergence.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "compare/model_compare.h"

namespace h0::compare {

struct NameMap {
  std::map<std::string, std::string> names;                   // golden name -> actual name
  std::vector<std::pair<std::string, std::string>> prefixes;  // golden prefix -> actual prefix
  std::string map(const std::string& golden) const;
};
// Reads a YAML map file: {names: {golden: actual, ...}, prefixes: {golden_prefix: actual_prefix}}.
// Throws InputError at the file's place of a malformed entry.
NameMap load_name_map(const std::string& path);

struct DumpFileResult {
  std::string file;
  ProbeReport report;
  std::vector<std::string> unmatched;  // golden probes with no actual tensor
  // An msprobe dump: golden probes outside the dump's scope (its `list` / `scope` config left
  // them out). Reported, not failing: what was compared is listed, and at least one probe must be.
  std::vector<std::string> not_dumped;
  // What was checked of the inputs both dumps saw: "the same 7 input ids", or why not.
  std::string inputs;
};
struct DumpComparison {
  std::vector<DumpFileResult> files;
  std::vector<std::string> missing_files;  // golden files with no actual file
  // Every golden file has its actual file, every probe its actual tensor, and none diverges.
  bool ok() const;
  nlohmann::json to_json() const;
};

// `actual_dir` may also be an msprobe dump (io/msprobe_dump.h): its module entries are the
// probes, named as HF's modules, compared with the golden file of the same prompt by tensor, or
// by statistics (max, min, mean, norm within rel_l2_max) when the dump holds statistics only.
// Throws InputError when a directory does not exist or holds no .safetensors file, and when a
// pair of files saw different input_ids (no probe of theirs is comparable).
DumpComparison compare_dump_dirs(const std::string& golden_dir, const std::string& actual_dir,
                                 const NameMap& map, double cosine_min, double rel_l2_max);

}  // namespace h0::compare
