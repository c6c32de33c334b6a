#include "tokenizer/added_vocabulary.h"

#include <algorithm>

#include "tokenizer/unicode_text.h"

namespace h0::tokenizer {
namespace {

// The code point that ends just before byte `pos` (pos > 0, valid UTF-8).
char32_t char_before(std::string_view text, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  size_t len = 0;
  return decode_utf8(text, start, &len);
}

size_t start_of_trailing_space(std::string_view text, size_t end) {
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t len = 0;
    if (!is_whitespace(decode_utf8(text, start, &len))) break;
    end = start;
  }
  return end;
}

size_t end_of_leading_space(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    size_t len = 0;
    if (!is_whitespace(decode_utf8(text, pos, &len))) break;
    pos += len;
  }
  return pos;
}

}  // namespace

AddedVocabulary AddedVocabulary::from_json(const std::optional<JsonAt>& added_tokens,
                                           const Normalize& normalize) {
  AddedVocabulary v;
  if (!added_tokens) return v;
  for (size_t i = 0; i < added_tokens->size(); ++i) {
    const JsonAt t = added_tokens->at(i);
    AddedToken token;
    const int64_t id = t.at("id").integer();
    if (id < 0 || id > INT32_MAX) t.at("id").fail("expected a non-negative id");
    token.id = static_cast<int32_t>(id);
    token.content = t.at("content").str();
    if (token.content.empty()) t.at("content").fail("empty");
    token.special = t.flag("special", false);
    token.single_word = t.flag("single_word", false);
    token.lstrip = t.flag("lstrip", false);
    token.rstrip = t.flag("rstrip", false);
    token.normalized = t.flag("normalized", !token.special);
    const auto index = static_cast<int32_t>(v.tokens_.size());
    if (token.normalized)
      insert(&v.normalized_, normalize(token.content), index);
    else
      insert(&v.raw_, token.content, index);
    v.by_id_.emplace(token.id, v.tokens_.size());
    v.tokens_.push_back(std::move(token));
  }
  return v;
}

void AddedVocabulary::insert(Trie* trie, std::string_view key, int32_t token) {
  int32_t node = 0;
  for (char ch : key) {
    const auto byte = static_cast<unsigned char>(ch);
    auto& children = (*trie)[node].children;
    auto it = std::find_if(children.begin(), children.end(),
                           [&](const auto& c) { return c.first == byte; });
    if (it != children.end()) {
      node = it->second;
      continue;
    }
    const auto next = static_cast<int32_t>(trie->size());
    children.emplace_back(byte, next);  // `children` dangles once the trie grows: not used after
    trie->emplace_back();
    node = next;
  }
  if (node != 0 && (*trie)[node].token < 0) (*trie)[node].token = token;
}

std::pair<int32_t, size_t> AddedVocabulary::longest_at(const Trie& trie, std::string_view text,
                                                       size_t pos) {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const auto& children = trie[node].children;
    auto it = std::find_if(children.begin(), children.end(),
                           [&](const auto& c) { return c.first == byte; });
    if (it == children.end()) break;
    node = it->second;
    if (trie[node].token >= 0) best = {trie[node].token, i + 1 - pos};
  }
  return best;
}

bool AddedVocabulary::accept(const AddedToken& token, std::string_view text, size_t floor,
                             size_t* start, size_t* stop) const {
  if (token.single_word) {
    const bool word_before = *start > 0 && is_word_char(char_before(text, *start));
    size_t len = 0;
    const bool word_after = *stop < text.size() && is_word_char(decode_utf8(text, *stop, &len));
    if (word_before || word_after) return false;
  }
  if (token.lstrip) *start = std::max(start_of_trailing_space(text, *start), floor);
  if (token.rstrip) *stop = end_of_leading_space(text, *stop);
  return true;
}

std::vector<TextPiece> AddedVocabulary::split(std::string_view text, bool normalized) const {
  const Trie& trie = normalized ? normalized_ : raw_;
  std::vector<TextPiece> pieces;
  size_t done = 0;  // text before this offset is in `pieces`
  for (size_t pos = 0; pos < text.size() && trie[0].children.size() > 0;) {
    const auto [index, len] = longest_at(trie, text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + len;
    pos = stop;  // the next match starts after this one, kept or not (HF's find_iter)
    const AddedToken& token = tokens_[index];
    if (!accept(token, text, done, &start, &stop)) continue;
    if (done < start) pieces.push_back({std::string(text.substr(done, start - done)), -1});
    pieces.push_back({std::string(text.substr(start, stop - start)), token.id});
    done = stop;
  }
  if (done < text.size()) pieces.push_back({std::string(text.substr(done)), -1});
  return pieces;
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::find(std::string_view content) const {
  for (const AddedToken& t : tokens_) {
    if (t.content == content) return &t;
  }
  return nullptr;
}

}  // namespace h0::tokenizer
