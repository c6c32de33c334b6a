// Tier 1 of the error model: a bug in our own code. H0_CHECK(cond) << "context" prints
// file:line, the condition and the context, then aborts. Never used for user input or for
// the platform under test misbehaving (those are h0::InputError and CheckResult statuses).
#pragma once

#include <sstream>

namespace h0::base {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

}  // namespace h0::base

#define H0_CHECK(cond)                 \
  if (__builtin_expect(!!(cond), 1)) { \
  } else                               \
    ::h0::base::CheckFailure(__FILE__, __LINE__, #cond)
