#include "checks/dump_compare.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>

#include <yaml-cpp/yaml.h>

#include "base/error.h"
#include "io/safetensors_reader.h"
#include "suite/location.h"

namespace h0::checks {
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
      for (const auto& n : nlohmann::json::parse(it->second)) order.push_back(n.get<std::string>());
    } catch (const nlohmann::json::exception&) {
      order.clear();
    }
  }
  if (order.empty()) {
    for (const auto& e : f.entries()) order.push_back(e.name);
  }
  if (f.find("logits") != nullptr && std::find(order.begin(), order.end(), "logits") == order.end()) order.push_back("logits");
  return order;
}

bool is_probe(const io::SafetensorsFile& f, const std::string& name) {
  const io::TensorEntry* e = f.find(name);
  return e != nullptr && tensor::is_float(e->dtype) && name.rfind("greedy_", 0) != 0;
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
    throw InputError(path, std::filesystem::exists(path, ec) ? "cannot read the name map" : "name map not found");
  }
  const YAML::Node root = suite::parse_yaml(path, *text);
  if (!root.IsMap()) suite::fail_at(path, root, "a name map is a mapping {names: {...}, prefixes: {...}}");
  suite::for_each_entry(path, root, [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& value) {
    if (key != "names" && key != "prefixes") suite::fail_at(path, key_node, "unknown key '" + key + "' (names, prefixes)");
    if (!value.IsMap()) suite::fail_at(path, value, key + " must map golden names to actual names");
    suite::for_each_entry(path, value, [&](const std::string& from, const YAML::Node&, const YAML::Node& to) {
      if (!to.IsScalar()) suite::fail_at(path, to, "must be a name");
      if (key == "names") m.names[from] = to.Scalar();
      else m.prefixes.emplace_back(from, to.Scalar());
    });
  });
  return m;
}

bool DumpComparison::ok() const {
  if (!missing_files.empty()) return false;
  for (const auto& f : files) {  // a probe with nothing to compare against is not a pass
    if (f.report.first_divergent >= 0 || !f.unmatched.empty() || f.report.rows.empty()) return false;
  }
  return !files.empty();
}

nlohmann::json DumpComparison::to_json() const {
  nlohmann::json j = {{"ok", ok()}, {"missing_files", missing_files}, {"files", nlohmann::json::array()}};
  for (const auto& f : files) {
    nlohmann::json fj = f.report.to_json();
    fj["file"] = f.file;
    fj["unmatched"] = f.unmatched;
    j["files"].push_back(fj);
  }
  return j;
}

DumpComparison compare_dump_dirs(const std::string& golden_dir, const std::string& actual_dir, const NameMap& map,
                                 double cosine_min, double rel_l2_max) {
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

}  // namespace h0::checks
