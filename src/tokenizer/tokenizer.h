// Byte-level BPE tokenizers from HF tokenizer.json files (Llama 3, Qwen2/3, DeepSeek-V3 and the
// like), matching the `tokenizers` package id for id:
//   added tokens  → matched in the raw text first (specials such as <|eot_id|>)
//   normalizer    → none, NFC, NFD, NFKC, NFKD, or a Sequence of them (ICU)
//   pre_tokenizer → Split / ByteLevel / Digits (see pre_tokenizer.h), PCRE2 regexes
//   model         → BPE (see bpe.h)
//   post_processor→ TemplateProcessing (e.g. Llama 3's <|begin_of_text|>), ByteLevel, Sequence
//   decoder       → ByteLevel, or none (tokens joined by spaces)
// Any other component is an InputError naming the file and the JSON path.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode_text.h"

namespace h0::tokenizer {

// Immutable once loaded: encode and decode may run on many threads at once.
class Tokenizer {
 public:
  // Reads a tokenizer.json, or <path>/tokenizer.json when `path` is a directory. If a
  // tokenizer_config.json sits next to it, its bos_token and eos_token name bos_id() and eos_id().
  static Tokenizer from_file(const std::string& path);
  // Parses tokenizer.json text; errors start with `where`.
  static Tokenizer from_json(std::string_view json_text,
                             const std::string& where = "tokenizer.json");

  // The ids of `text` (valid UTF-8, else InputError). add_special_tokens applies the
  // post-processor's template (e.g. a leading bos); special tokens written in the text are
  // always matched.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // The text of `ids`; ids of no token are dropped, invalid UTF-8 becomes U+FFFD.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token as written in tokenizer.json (byte-level alphabet for model tokens).
  std::optional<std::string> id_to_token(int32_t id) const;
  // The bytes `id` stands for in decoded text: a byte-level token's raw bytes (possibly part of a
  // character), an added token's content; "" for an id of no token.
  std::string id_to_bytes(int32_t id) const;
  // One more than the largest id of the vocab and the added tokens.
  int32_t vocab_size() const;
  bool is_special(int32_t id) const;

  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }

 private:
  friend class DecodeStream;
  // One item of a TemplateProcessing "single" template: the sequence, or fixed ids.
  struct TemplateItem {
    bool is_sequence = false;
    std::vector<int32_t> ids;
  };
  using Template = std::vector<TemplateItem>;
  enum class Decoder { kNone, kByteLevel };

  static Tokenizer from_document(const JsonAt& root);
  void read_normalizer(const JsonAt& normalizer);
  void read_post_processor(const JsonAt& post_processor);
  void read_decoder(const JsonAt& decoder);
  void read_roles(const std::string& config_path);
  std::string normalize(std::string_view text) const;
  // Ids of words already seen in one encode() call: natural text repeats most of its words.
  using WordCache = StringMap<std::vector<int32_t>>;
  void encode_text(std::string_view text, WordCache* cache, std::vector<int32_t>* ids) const;

  std::vector<NormalForm> normalizer_;
  AddedVocabulary added_;
  PreTokenizer pre_tokenizer_;
  Bpe bpe_;
  std::vector<Template> templates_;  // applied in order when add_special_tokens
  Decoder decoder_ = Decoder::kNone;
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
};

// decode() of a sequence that grows one id at a time, at a cost per id proportional to its text:
// after each push(id, &text), text equals decode(every id pushed, skip_special_tokens). `text`
// must hold what the previous push left (the stream keeps only the bytes of a trailing
// incomplete UTF-8 sequence, shown meanwhile as U+FFFD).
class DecodeStream {
 public:
  DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens)
      : tokenizer_(&tokenizer), skip_special_(skip_special_tokens) {}
  void push(int32_t id, std::string* text);

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  bool first_ = true;    // kNone: no token written yet (the next needs no ' ' before it)
  std::string pending_;  // kByteLevel: the bytes of a trailing incomplete UTF-8 sequence
};

}  // namespace h0::tokenizer
