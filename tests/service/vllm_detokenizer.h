// vLLM 0.32's incremental detokenizer, for the fake engine and the tests that replay goldens as
// vLLM serves them. vLLM (v1/engine/detokenizer.py, FastIncrementalDetokenizer) primes the
// `tokenizers` DecodeStream with the prompt's ids and emits, for each output id, the text past
// what was emitted once the text so far does not end in U+FFFD. So an incomplete character at the
// end of the prompt holds back the prompt's text, which comes out with the first output token,
// and an incomplete character at the end of the output is never emitted. This is DecodeStream's
// step (tokenizers 0.23), checked against it on every golden/e2e file (58 of 58 equal, by hand:
// golden/e2e/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace h0::test {

class VllmDetokenizer {
 public:
  VllmDetokenizer(const tokenizer::Tokenizer& tok, const std::vector<int64_t>& prompt)
      : tok_(&tok), ids_(prompt) {
    const std::string text = decode(ids_);
    if (!ends_incomplete(text)) prefix_ = text;  // else nothing of the prompt counts as emitted
  }

  // The text output token `id` adds ("" while the text ends in an incomplete character).
  std::string step(int64_t id) {
    ids_.push_back(id);
    const std::string text = decode(ids_);
    if (text.size() <= prefix_.size() || ends_incomplete(text)) return "";
    std::string added =
        text.compare(0, prefix_.size(), prefix_) == 0 ? text.substr(prefix_.size()) : text;
    const size_t next_index = ids_.size() - prefix_index_;
    ids_.erase(ids_.begin(), ids_.begin() + long(prefix_index_));
    prefix_ = decode(ids_);
    prefix_index_ = next_index;
    return added;
  }

 private:
  static bool ends_incomplete(const std::string& s) {
    return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
  }
  std::string decode(const std::vector<int64_t>& ids) const {
    const std::vector<int32_t> v(ids.begin(), ids.end());
    return tok_->decode(v, true);
  }

  const tokenizer::Tokenizer* tok_;
  std::vector<int64_t> ids_;
  std::string prefix_;
  size_t prefix_index_ = 0;
};

}  // namespace h0::test
