// Tier 2 of the error model: a user's mistake (bad file, bad flag, bad YAML). Thrown as
// InputError, caught at the command boundary, printed as "where: what", exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace h0 {

class InputError : public std::runtime_error {
 public:
  // `where` is a file, "file:line:col", or "file: tensor 'x'"; may be empty.
  InputError(std::string where, const std::string& message);

  const std::string& where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  std::string where_;
  std::string message_;
};

// Exit codes of every harness command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitMismatch = 1;  // a check failed or tensors differ
inline constexpr int kExitInput = 2;     // usage or input error

}  // namespace h0
