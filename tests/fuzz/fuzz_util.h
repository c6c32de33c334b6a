// What every fuzz target shares. The contract each one checks: a parser given any bytes returns,
// or throws h0::InputError (the input's fault: exit 2 at the command boundary). Any other
// exception, a crash, a sanitizer report, a hang or a runaway allocation is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "base/error.h"

namespace h0::fuzz {

// A directory of this process's own under $TMPDIR (else /tmp), made on first use and removed
// at a normal exit.
inline const std::string& scratch_dir() {
  // Never destroyed: the exit handler below runs after static destructors would have.
  static const std::string* const dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    auto* d = new std::string(std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                              "/h0-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*dir, ec);
    });
    return d;
  }();
  return *dir;
}

// Writes `bytes` to scratch_dir()/name (name may hold one subdirectory) and returns the path.
inline std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::filesystem::path p = std::filesystem::path(scratch_dir()) / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p.string();
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`; an InputError is an expected outcome, anything else escapes to the fuzzer.
template <typename F>
void expect_input_errors(F&& parse) {
  try {
    parse();
  } catch (const InputError& e) {
    // The message is printed at the command boundary: it must be buildable, and short enough
    // that a hostile input is not echoed whole.
    if (e.where().size() + e.message().size() > (1u << 20)) std::abort();
  }
}

}  // namespace h0::fuzz
