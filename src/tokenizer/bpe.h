// HF's BPE model: a vocabulary, ranked merges, and the merge loop that turns one pre-token
// (already in the model's alphabet, e.g. byte-level characters) into ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_at.h"

namespace h0::tokenizer {

// std::string keys looked up by std::string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

class Bpe {
 public:
  // Reads tokenizer.json's "model" object ({"type": "BPE", "vocab": {...}, "merges": [...]});
  // merges may be "a b" strings or ["a", "b"] pairs.
  static Bpe from_json(const JsonAt& model);

  // Appends the ids of `word`. With ignore_merges, a word that is itself in the vocab is one id;
  // otherwise its characters are merged lowest rank first, ties leftmost first (HF's
  // Word::merge_all). A character outside the vocab becomes unk_token, or is dropped if none.
  void encode(std::string_view word, std::vector<int32_t>* ids) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // nullptr when no token has this id.
  const std::string* id_to_token(int32_t id) const;
  // One more than the largest id (0 for an empty vocab).
  int32_t id_limit() const { return static_cast<int32_t>(tokens_.size()); }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  void read_vocab(const JsonAt& vocab);
  void read_merges(const JsonAt& merges);
  const Merge* find_merge(int32_t left, int32_t right) const;

  StringMap<int32_t> vocab_;
  std::vector<const std::string*> tokens_;  // by id; nullptr for unused ids
  std::unordered_map<uint64_t, Merge> merges_;
  bool ignore_merges_ = false;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
};

}  // namespace h0::tokenizer
