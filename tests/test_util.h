// Shared helpers for the tests: paths into the source tree and temporary directories.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace h0::test {

// A path inside the source tree, e.g. source_path("golden/foundation/philox.safetensors").
inline std::string source_path(const std::string& rel) {
  return std::string(H0_SOURCE_DIR) + "/" + rel;
}

inline std::string golden_path(const std::string& rel) { return source_path("golden/" + rel); }

// A fresh temporary directory, removed when the object goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "h0test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace h0::test
