#include "base/error.h"

#include <cstdio>
#include <cstdlib>

#include "base/check.h"

namespace h0 {

InputError::InputError(std::string where, const std::string& message)
    : std::runtime_error(where.empty() ? message : where + ": " + message),
      where_(std::move(where)),
      message_(message) {}

namespace base {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": internal error: check failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace base
}  // namespace h0
