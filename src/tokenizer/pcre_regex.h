// The regexes of tokenizer.json pre-tokenizers (Oniguruma syntax in HF: Unicode properties,
// lookaheads, (?i:...)), compiled with PCRE2 in UTF + UCP mode, JIT-compiled when available.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace h0::tokenizer {

struct Span {
  size_t begin = 0;
  size_t end = 0;  // exclusive; begin == end for an empty match
};

class Regex {
 public:
  // Compiles `pattern`; a bad pattern throws InputError(file, "path: ...").
  static Regex compile(const std::string& pattern, const std::string& file,
                       const std::string& path);
  // A pattern that matches `text` literally (HF's Split {"String": ...}).
  static Regex literal(const std::string& text, const std::string& file, const std::string& path);

  // The successive non-overlapping matches in `text` (valid UTF-8), leftmost first, as HF's
  // find_iter: after an empty match the search resumes one character further.
  std::vector<Span> find_all(std::string_view text) const;

 private:
  static Regex build(const std::string& pattern, uint32_t options, const std::string& file,
                     const std::string& path);

  std::shared_ptr<void> code_;  // pcre2_code_8, freed with pcre2_code_free_8
  std::string pattern_;
};

}  // namespace h0::tokenizer
