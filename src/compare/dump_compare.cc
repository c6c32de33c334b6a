#include "compare/dump_compare.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <optional>
#include <system_error>

#include "base/error.h"
#include "base/json_read.h"
#include "io/msprobe_dump.h"
#include "io/safetensors_reader.h"
#include "suite/location.h"

namespace h0::compare {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> dump_files(const std::string& dir) {
  if (!fs::is_directory(dir)) throw InputError(dir, "not a directory of probe dumps");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".safetensors") files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(dir, "holds no .safetensors files");
  return files;
}

// The golden's probe names in execution order: its `probes` metadata, else its tensor order.
std::vector<std::string> execution_order(const io::SafetensorsFile& f) {
  std::vector<std::string> order;
  auto it = f.metadata().find("probes");
  if (it != f.metadata().end()) {
    try {
      const nlohmann::json names = base::parse_json_or_discarded(it->second);
      for (const auto& n : names.is_array() ? names : nlohmann::json::array())
        order.push_back(n.get<std::string>());
    } catch (const nlohmann::json::exception&) {
      order.clear();
    }
  }
  if (order.empty()) {
    for (const auto& e : f.entries()) order.push_back(e.name);
  }
  if (f.find("logits") != nullptr && std::find(order.begin(), order.end(), "logits") == order.end())
    order.push_back("logits");
  return order;
}

bool is_probe(const io::SafetensorsFile& f, const std::string& name) {
  const io::TensorEntry* e = f.find(name);
  return e != nullptr && tensor::is_float(e->dtype) && name.rfind("greedy_", 0) != 0;
}

// Max, min and mean relative to the golden's range, the norm relative to its norm.
ProbeRow stats_row(const std::string& name, const io::TensorStats& a, const io::TensorStats& g,
                   double tol) {
  const double range = std::max({std::fabs(g.max), std::fabs(g.min), 1e-30});
  const double diffs[] = {std::fabs(a.max - g.max), std::fabs(a.min - g.min),
                          std::fabs(a.mean - g.mean), std::fabs(a.norm - g.norm)};
  const double rel[] = {diffs[0] / range, diffs[1] / range, diffs[2] / range,
                        diffs[3] / std::max(g.norm, 1e-30)};
  ProbeRow r;
  r.name = name;
  r.cosine = NAN;
  r.max_abs_err = *std::max_element(std::begin(diffs), std::end(diffs));
  r.rel_l2 = *std::max_element(std::begin(rel), std::end(rel));
  r.ok = r.rel_l2 <= tol;
  r.statistics = true;
  return r;
}

// The golden file an msprobe dump (one forward pass) is compared with: the only one, else the
// one whose prompt has as many tokens as the dump's embedding output.
std::string golden_for_msprobe(const std::string& golden_dir, const io::MsprobeDump& a) {
  const std::vector<std::string> files = dump_files(golden_dir);
  if (files.size() == 1) return files[0];
  int64_t tokens = -1;
  for (const auto& p : a.probes) {
    if (p.name.size() >= 12 && p.name.compare(p.name.size() - 12, 12, "embed_tokens") == 0 &&
        p.shape.size() >= 2)
      tokens = p.shape[p.shape.size() - 2];
  }
  std::vector<std::string> matching;
  for (const auto& f : files) {
    const io::SafetensorsFile g = io::SafetensorsFile::open((fs::path(golden_dir) / f).string());
    const io::TensorEntry* ids = g.find("input_ids");
    if (ids != nullptr && !ids->shape.empty() && ids->shape.back() == tokens) matching.push_back(f);
  }
  if (matching.size() == 1) return matching[0];
  throw InputError(golden_dir,
                   std::to_string(matching.size()) + " of its " + std::to_string(files.size()) +
                       " golden files have the msprobe dump's " + std::to_string(tokens) +
                       " tokens: give a directory holding the one golden of that prompt");
}

// An msprobe dump (`actual_dir`) against dump_hf.py's golden: every golden probe in execution
// order, by tensor where the dump holds tensors, else by statistics.
DumpComparison compare_msprobe(const std::string& golden_dir, const std::string& actual_dir,
                               const NameMap& map, double cosine_min, double rel_l2_max) {
  const io::MsprobeDump a = io::read_msprobe_dump(actual_dir);
  DumpComparison out;
  DumpFileResult r;
  r.file = golden_for_msprobe(golden_dir, a);
  const io::SafetensorsFile g = io::SafetensorsFile::open((fs::path(golden_dir) / r.file).string());
  for (const std::string& probe : execution_order(g)) {
    if (!is_probe(g, probe)) continue;
    const io::MsprobeProbe* p = a.find(map.map(probe));
    if (p == nullptr) {
      r.not_dumped.push_back(probe);
      continue;
    }
    if (p->tensor_file.empty() &&
        !p->stats) {  // in the dump, but neither its tensor nor its statistics
      r.unmatched.push_back(probe);
      continue;
    }
    if (!p->tensor_file.empty()) {
      ProbeReport one = compare_probes({{probe, p->load()}}, g, cosine_min, rel_l2_max);
      r.report.rows.push_back(one.rows.at(0));
    } else {
      r.report.rows.push_back(stats_row(probe, *p->stats, io::stats_of(g.get(probe)), rel_l2_max));
    }
    if (!r.report.rows.back().ok && r.report.first_divergent < 0)
      r.report.first_divergent = int(r.report.rows.size() - 1);
  }
  out.files.push_back(std::move(r));
  return out;
}

// "ids 1, 2, 3" (the first 8, then how many more).
std::string ids_text(const std::vector<int64_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < 8; ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > 8) out += ", ... (" + std::to_string(ids.size()) + " in all)";
  return out.empty() ? "no id" : out;
}

std::vector<int64_t> input_ids(const io::SafetensorsFile& f) {
  const tensor::Tensor t = f.get("input_ids").to(tensor::DType::kI64);
  return {t.data_as<int64_t>(), t.data_as<int64_t>() + t.numel()};
}

// Two dumps of one forward pass compare only when they saw the same input: a prompt tokenized
// otherwise diverges at the embedding, which would blame the embedding. Throws InputError naming
// both files and the first position where the ids differ; returns what was checked.
std::string check_same_inputs(const io::SafetensorsFile& g, const io::SafetensorsFile& a,
                              const std::string& golden_path, const std::string& actual_path) {
  const bool in_g = g.find("input_ids") != nullptr, in_a = a.find("input_ids") != nullptr;
  if (!in_g || !in_a) {
    return std::string("not checked: the ") +
           (in_g   ? "actual"
            : in_a ? "golden"
                   : "two") +
           (in_g || in_a ? " dump has" : " dumps have") + " no input_ids";
  }
  const std::vector<int64_t> gi = input_ids(g), ai = input_ids(a);
  if (gi == ai) return "the same " + std::to_string(gi.size()) + " input ids";
  size_t at = 0;
  while (at < gi.size() && at < ai.size() && gi[at] == ai[at]) ++at;
  throw InputError(actual_path,
                   "the dumps saw different inputs, so their probes cannot be compared: input_ids "
                   "has " +
                       std::to_string(ai.size()) + " ids (" + ids_text(ai) + "), " + golden_path +
                       " has " + std::to_string(gi.size()) + " (" + ids_text(gi) +
                       "); they first differ at position " + std::to_string(at) +
                       " (dump both with the same --prompt-ids)");
}

}  // namespace

std::string NameMap::map(const std::string& golden) const {
  if (auto it = names.find(golden); it != names.end()) return it->second;
  for (const auto& [from, to] : prefixes) {
    if (golden.rfind(from, 0) == 0) return to + golden.substr(from.size());
  }
  return golden;
}

NameMap load_name_map(const std::string& path) {
  NameMap m;
  const std::optional<std::string> text = suite::read_text_file(path);
  if (!text) {
    std::error_code ec;
    throw InputError(path, std::filesystem::exists(path, ec) ? "cannot read the name map"
                                                             : "name map not found");
  }
  const YAML::Node root = suite::parse_yaml(path, *text);
  if (!root.IsMap())
    suite::fail_at(path, root, "a name map is a mapping {names: {...}, prefixes: {...}}");
  suite::for_each_entry(
      path, root, [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& value) {
        if (key != "names" && key != "prefixes")
          suite::fail_at(path, key_node, "unknown key '" + key + "' (names, prefixes)");
        if (!value.IsMap())
          suite::fail_at(path, value, key + " must map golden names to actual names");
        suite::for_each_entry(
            path, value, [&](const std::string& from, const YAML::Node&, const YAML::Node& to) {
              if (!to.IsScalar()) suite::fail_at(path, to, "must be a name");
              if (key == "names")
                m.names[from] = to.Scalar();
              else
                m.prefixes.emplace_back(from, to.Scalar());
            });
      });
  return m;
}

bool DumpComparison::ok() const {
  if (!missing_files.empty()) return false;
  for (const auto& f : files) {  // a probe with nothing to compare against is not a pass
    if (f.report.first_divergent >= 0 || !f.unmatched.empty() || f.report.rows.empty())
      return false;
  }
  return !files.empty();
}

nlohmann::json DumpComparison::to_json() const {
  nlohmann::json j = {
      {"ok", ok()}, {"missing_files", missing_files}, {"files", nlohmann::json::array()}};
  for (const auto& f : files) {
    nlohmann::json fj = f.report.to_json();
    fj["file"] = f.file;
    fj["unmatched"] = f.unmatched;
    if (!f.inputs.empty()) fj["inputs"] = f.inputs;
    if (!f.not_dumped.empty()) fj["not_dumped"] = f.not_dumped;
    j["files"].push_back(fj);
  }
  return j;
}

DumpComparison compare_dump_dirs(const std::string& golden_dir, const std::string& actual_dir,
                                 const NameMap& map, double cosine_min, double rel_l2_max) {
  if (io::is_msprobe_dump(actual_dir))
    return compare_msprobe(golden_dir, actual_dir, map, cosine_min, rel_l2_max);
  DumpComparison out;
  const std::vector<std::string> actual_files = dump_files(actual_dir);
  for (const std::string& name : dump_files(golden_dir)) {
    if (std::find(actual_files.begin(), actual_files.end(), name) == actual_files.end()) {
      out.missing_files.push_back(name);
      continue;
    }
    const io::SafetensorsFile g = io::SafetensorsFile::open((fs::path(golden_dir) / name).string());
    const io::SafetensorsFile a = io::SafetensorsFile::open((fs::path(actual_dir) / name).string());
    DumpFileResult r;
    r.file = name;
    r.inputs = check_same_inputs(g, a, (fs::path(golden_dir) / name).string(),
                                 (fs::path(actual_dir) / name).string());
    // Actual tensors, named as the golden's, in the golden's execution order.
    std::vector<std::pair<std::string, tensor::Tensor>> actual;
    for (const std::string& probe : execution_order(g)) {
      if (!is_probe(g, probe)) continue;
      const std::string mapped = map.map(probe);
      if (a.find(mapped) == nullptr) {
        r.unmatched.push_back(probe);
        continue;
      }
      actual.emplace_back(probe, a.get(mapped));
    }
    r.report = compare_probes(actual, g, cosine_min, rel_l2_max);
    out.files.push_back(std::move(r));
  }
  return out;
}

}  // namespace h0::compare
