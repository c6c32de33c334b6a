#include "tokenizer/bpe.h"

#include <queue>

#include "tokenizer/unicode_text.h"

namespace h0::tokenizer {
namespace {

// One symbol of a word being merged: a doubly linked list over the initial characters.
struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool alive;
};

// A candidate merge of the symbol at `pos` with its right neighbour; lowest rank first, then
// leftmost, as HF's BinaryHeap<Merge> pops them.
struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

// Splits "a b" into its two tokens; false unless there is exactly one space.
bool split_merge_string(const std::string& s, std::string* a, std::string* b) {
  const size_t space = s.find(' ');
  if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) return false;
  *a = s.substr(0, space);
  *b = s.substr(space + 1);
  return true;
}

}  // namespace

Bpe Bpe::from_json(const JsonAt& model) {
  Bpe bpe;
  if (const auto type = model.find("type"); type && type->str() != "BPE") model.unsupported_type();
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (const auto v = model.find(key); v && !v->str().empty())
      v->fail("unsupported (byte-level BPE has none)");
  }
  if (const auto v = model.find("dropout"); v)
    v->fail("unsupported (dropout makes encoding random)");
  if (model.flag("byte_fallback", false)) model.at("byte_fallback").fail("unsupported: true");
  bpe.read_vocab(model.at("vocab"));
  bpe.read_merges(model.at("merges"));
  bpe.ignore_merges_ = model.flag("ignore_merges", false);
  bpe.fuse_unk_ = model.flag("fuse_unk", false);
  if (const auto unk = model.find("unk_token")) {
    bpe.unk_id_ = bpe.token_to_id(unk->str());
    if (!bpe.unk_id_) unk->fail("'" + unk->str() + "' is not in the vocab");
  }
  return bpe;
}

void Bpe::read_vocab(const JsonAt& vocab) {
  if (!vocab.json().is_object()) vocab.fail("expected an object {token: id}");
  for (const auto& [token, id] : vocab.json().items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      vocab.fail("'" + token + "': expected a non-negative id");
    }
    vocab_.emplace(token, id.get<int32_t>());
  }
  int32_t limit = 0;
  for (const auto& [token, id] : vocab_) limit = std::max(limit, id + 1);
  tokens_.assign(limit, nullptr);
  for (const auto& [token, id] : vocab_) tokens_[id] = &token;
}

void Bpe::read_merges(const JsonAt& merges) {
  for (size_t i = 0; i < merges.size(); ++i) {
    const JsonAt m = merges.at(i);
    std::string a, b;
    const bool is_pair = m.json().is_array() && m.json().size() == 2 && m.json()[0].is_string() &&
                         m.json()[1].is_string();
    if (is_pair) {
      a = m.json()[0].get<std::string>();
      b = m.json()[1].get<std::string>();
    } else if (!m.json().is_string() || !split_merge_string(m.json().get<std::string>(), &a, &b)) {
      m.fail("expected \"a b\" or [\"a\", \"b\"], got " + m.json().dump());
    }
    const auto left = token_to_id(a), right = token_to_id(b), merged = token_to_id(a + b);
    if (!left) m.fail("'" + a + "' is not in the vocab");
    if (!right) m.fail("'" + b + "' is not in the vocab");
    if (!merged) m.fail("the merged token '" + a + b + "' is not in the vocab");
    merges_.insert_or_assign(pair_key(*left, *right), Merge{static_cast<int32_t>(i), *merged});
  }
}

const Bpe::Merge* Bpe::find_merge(int32_t left, int32_t right) const {
  auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

std::optional<int32_t> Bpe::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* Bpe::id_to_token(int32_t id) const {
  return id >= 0 && id < id_limit() ? tokens_[id] : nullptr;
}

void Bpe::encode(std::string_view word, std::vector<int32_t>* ids) const {
  if (ignore_merges_) {
    if (const auto id = token_to_id(word)) {
      ids->push_back(*id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  bool last_was_unk = false;
  for (size_t pos = 0; pos < word.size();) {
    const size_t len = utf8_length_at(word, pos);
    const auto id = token_to_id(word.substr(pos, len));
    pos += len;
    if (!id && !unk_id_) continue;
    if (!id && fuse_unk_ && last_was_unk) continue;
    last_was_unk = !id;
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back({id ? *id : *unk_id_, n - 1, -1, true});
    if (n > 0) symbols[n - 1].next = n;
  }

  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const Merge* m = find_merge(symbols[i].id, symbols[i + 1].id)) {
      queue.push({m->rank, static_cast<int32_t>(i), m->new_id});
    }
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const Merge* m = find_merge(left.id, right.id);
    if (m == nullptr || m->new_id != top.new_id) continue;  // stale: a neighbour changed
    left.id = m->new_id;
    left.next = right.next;
    right.alive = false;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const Merge* p = find_merge(symbols[left.prev].id, left.id))
        queue.push({p->rank, left.prev, p->new_id});
    }
    if (left.next >= 0) {
      if (const Merge* n = find_merge(left.id, symbols[left.next].id))
        queue.push({n->rank, top.pos, n->new_id});
    }
  }
  for (const Symbol& s : symbols) {
    if (s.alive) ids->push_back(s.id);
  }
}

}  // namespace h0::tokenizer
