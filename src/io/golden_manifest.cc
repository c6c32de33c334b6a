#include "io/golden_manifest.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_read.h"
#include "base/sha256.h"

namespace h0::io {
namespace fs = std::filesystem;

GoldenManifest GoldenManifest::load(const std::string& root) {
  GoldenManifest m;
  m.root_ = root;
  const std::string path = (fs::path(root) / "manifest.json").string();
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(path, "cannot open the golden manifest");
  const nlohmann::json doc = base::read_json_file(path);
  if (!doc.is_object() || !doc.contains("files") || !doc["files"].is_object()) {
    throw InputError(path, "expected {\"version\": 1, \"files\": {...}}");
  }
  for (const auto& [name, entry] : doc["files"].items()) {
    GoldenFile g;
    g.path = name;
    try {
      g.sha256 = entry.at("sha256").get<std::string>();
      g.bytes = entry.at("bytes").get<uint64_t>();
      g.producer = entry.at("producer").get<std::string>();
      if (entry.contains("versions")) {
        for (const auto& [pkg, version] : entry["versions"].items()) {
          g.versions[pkg] = version.get<std::string>();
        }
      }
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path, "entry '" + name + "': " + e.what());
    }
    m.files_.emplace(name, std::move(g));
  }
  return m;
}

const GoldenFile* GoldenManifest::find(const std::string& path) const {
  auto it = files_.find(path);
  return it == files_.end() ? nullptr : &it->second;
}

std::vector<std::string> GoldenManifest::verify() const {
  std::vector<std::string> problems;
  for (const auto& [rel, g] : files_) {
    const fs::path p = fs::path(root_) / rel;
    if (!fs::is_regular_file(p)) {
      problems.push_back(rel + ": listed in the manifest but missing");
      continue;
    }
    const uint64_t size = fs::file_size(p);
    if (size != g.bytes) {
      problems.push_back(rel + ": " + std::to_string(size) + " bytes, manifest says " +
                         std::to_string(g.bytes));
      continue;
    }
    const std::string sha = base::sha256_file(p.string());
    if (sha != g.sha256)
      problems.push_back(rel + ": sha256 " + sha + ", manifest says " + g.sha256);
  }
  for (const auto& item : fs::recursive_directory_iterator(root_)) {
    if (!item.is_regular_file()) continue;
    const std::string rel = fs::relative(item.path(), root_).generic_string();
    if (rel == "manifest.json" || rel.rfind("tools/", 0) == 0) continue;
    if (item.path().filename() == "README.md") continue;
    if (files_.count(rel) == 0) problems.push_back(rel + ": not listed in the manifest");
  }
  return problems;
}

}  // namespace h0::io
