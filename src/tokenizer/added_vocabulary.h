// tokenizer.json's "added_tokens": special and ordinary tokens matched in the text before the
// model sees it (HF's AddedVocabulary). Tokens with normalized=false are matched in the raw text,
// those with normalized=true in the normalized text; at each position the longest token wins,
// and lstrip / rstrip / single_word apply as in HF.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_at.h"

namespace h0::tokenizer {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// A run of the input: an added token (id >= 0), or text still to tokenize (id < 0).
struct TextPiece {
  std::string text;
  int32_t id = -1;
};

class AddedVocabulary {
 public:
  using Normalize = std::function<std::string(std::string_view)>;

  // Reads "added_tokens" (absent or null: none). `normalize` is the tokenizer's normalizer; the
  // contents of normalized tokens are matched in their normalized form.
  static AddedVocabulary from_json(const std::optional<JsonAt>& added_tokens,
                                   const Normalize& normalize);

  // `text` cut at the tokens whose `normalized` flag equals `normalized`; the pieces cover it.
  std::vector<TextPiece> split(std::string_view text, bool normalized) const;

  bool has_normalized_tokens() const { return normalized_.size() > 1; }
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  // nullptr if no added token has this id / content.
  const AddedToken* find(int32_t id) const;
  const AddedToken* find(std::string_view content) const;

 private:
  // A byte trie over the token contents; node 0 is the root.
  struct TrieNode {
    std::vector<std::pair<unsigned char, int32_t>> children;
    int32_t token = -1;  // index into tokens_ of the token ending here
  };
  using Trie = std::vector<TrieNode>;
  static void insert(Trie* trie, std::string_view key, int32_t token);
  // The longest token starting at `pos`: its index and byte length, or {-1, 0}.
  static std::pair<int32_t, size_t> longest_at(const Trie& trie, std::string_view text, size_t pos);
  // Whether a match [start, stop) of `token` is kept, with the bounds its strip flags widen to.
  bool accept(const AddedToken& token, std::string_view text, size_t floor, size_t* start,
              size_t* stop) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;  // index into tokens_
  Trie raw_{1};
  Trie normalized_{1};
};

}  // namespace h0::tokenizer
