// golden/manifest.json: every golden file with its sha256, size, producer (the generator under
// golden/tools/) and the package versions it ran with. Goldens are only trusted through it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace h0::io {

struct GoldenFile {
  std::string path;  // relative to the golden root, '/'-separated
  std::string sha256;
  uint64_t bytes = 0;
  std::string producer;                         // e.g. golden/tools/gen_foundation.py
  std::map<std::string, std::string> versions;  // package -> version
};

class GoldenManifest {
 public:
  // Reads <root>/manifest.json. Throws InputError if missing or malformed.
  static GoldenManifest load(const std::string& root);

  const std::string& root() const { return root_; }
  const std::map<std::string, GoldenFile>& files() const { return files_; }
  // Returns nullptr if `path` (relative to the root) is not listed.
  const GoldenFile* find(const std::string& path) const;

  // Checks every listed file's size and sha256, and that every file under the root except
  // manifest.json, tools/ and README files is listed. Returns one line per problem.
  std::vector<std::string> verify() const;

 private:
  std::string root_;
  std::map<std::string, GoldenFile> files_;
};

}  // namespace h0::io
