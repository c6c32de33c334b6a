// Case filters in GoogleTest's --gtest_filter form: "POS1:POS2-NEG1:NEG2".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace h0::suite {

// Whether `text` as a whole matches `pattern`: '*' matches any run of characters (even
// empty), '?' any one character; every other character, '[', ']', '=', ',' included, only
// itself.
bool glob_match(std::string_view pattern, std::string_view text);

// A case matches if it matches some positive pattern and no negative one; an empty positive
// part means "*". Patterns are separated by ':'. The negative part starts at the first '-'
// that opens the spec or follows ':', '*', '?' or ']' ("rmsnorm*-*bf16*", "-*slow*",
// "a*:-b*"); any other '-' is part of a pattern, as in case ids like "tiny-llama/logits"
// (write "*?llama*" to match a '-' right after a '*').
class Filter {
 public:
  explicit Filter(const std::string& spec = "");
  bool matches(const std::string& case_id) const;

  const std::vector<std::string>& positive() const { return positive_; }
  const std::vector<std::string>& negative() const { return negative_; }

 private:
  std::vector<std::string> positive_;
  std::vector<std::string> negative_;
};

}  // namespace h0::suite
