// The pre-tokenizer of tokenizer.json: splits (normalized) text into the pieces BPE sees.
// Supported: Split (Regex or String pattern, every behaviour, invert), ByteLevel
// (add_prefix_space, use_regex with GPT-2's pattern; maps bytes to the byte-level alphabet),
// Digits (individual_digits), and a Sequence of those.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_at.h"
#include "tokenizer/pcre_regex.h"

namespace h0::tokenizer {

// What a Split does with the matches of its pattern (HF's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  // Reads tokenizer.json's "pre_tokenizer"; nullopt (absent or null) keeps the text whole.
  static PreTokenizer from_json(const std::optional<JsonAt>& pre_tokenizer);

  // The non-empty pieces of `text` (valid UTF-8), in order.
  std::vector<std::string> split(std::string_view text) const;

 private:
  struct Step {
    enum class Kind { kSplit, kByteLevel } kind = Kind::kSplit;
    std::optional<Regex> regex;  // kSplit; kByteLevel when use_regex
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;  // kByteLevel
  };
  void add_steps(const JsonAt& pre_tokenizer);
  static Step split_step(const JsonAt& split);
  static Step byte_level_step(const JsonAt& byte_level);
  static std::vector<std::string> apply(const Step& step, std::vector<std::string> pieces);

  std::vector<Step> steps_;
};

// The pieces of `text` that a Split with these matches, behaviour and invert flag keeps
// (HF's NormalizedString::split followed by dropping empty pieces).
std::vector<std::string> split_by_matches(std::string_view text, const std::vector<Span>& matches,
                                          SplitBehavior behavior, bool invert);

}  // namespace h0::tokenizer
