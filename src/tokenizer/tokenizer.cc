#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/input_file.h"
#include "base/json_read.h"
#include "tokenizer/byte_level.h"

namespace h0::tokenizer {
namespace fs = std::filesystem;
namespace {

nlohmann::json parse_json(std::string_view text, const std::string& where) {
  return base::parse_json(text, where);
}

std::string read_file(const std::string& path) { return base::read_regular_file(path); }

std::optional<NormalForm> normal_form(const std::string& type) {
  if (type == "NFC") return NormalForm::kNfc;
  if (type == "NFD") return NormalForm::kNfd;
  if (type == "NFKC") return NormalForm::kNfkc;
  if (type == "NFKD") return NormalForm::kNfkd;
  return std::nullopt;
}

}  // namespace

Tokenizer Tokenizer::from_file(const std::string& file_or_dir) {
  const std::string path = fs::is_directory(file_or_dir)
                               ? (fs::path(file_or_dir) / "tokenizer.json").string()
                               : file_or_dir;
  const nlohmann::json doc = parse_json(read_file(path), path);
  Tokenizer t = from_document(JsonAt(doc, path));
  const fs::path config = fs::path(path).parent_path() / "tokenizer_config.json";
  if (fs::exists(config)) t.read_roles(config.string());
  return t;
}

Tokenizer Tokenizer::from_json(std::string_view json_text, const std::string& where) {
  const nlohmann::json doc = parse_json(json_text, where);
  return from_document(JsonAt(doc, where));
}

Tokenizer Tokenizer::from_document(const JsonAt& root) {
  Tokenizer t;
  if (!root.json().is_object()) root.fail("expected a tokenizer.json object");
  if (const auto truncation = root.find("truncation"))
    truncation->fail("unsupported (expected null)");
  if (const auto normalizer = root.find("normalizer")) t.read_normalizer(*normalizer);
  t.added_ = AddedVocabulary::from_json(root.find("added_tokens"),
                                        [&t](std::string_view s) { return t.normalize(s); });
  t.pre_tokenizer_ = PreTokenizer::from_json(root.find("pre_tokenizer"));
  t.bpe_ = Bpe::from_json(root.at("model"));
  if (const auto post = root.find("post_processor")) t.read_post_processor(*post);
  if (const auto decoder = root.find("decoder")) t.read_decoder(*decoder);
  return t;
}

void Tokenizer::read_normalizer(const JsonAt& normalizer) {
  const std::string type = normalizer.at("type").str();
  if (type == "Sequence") {
    const JsonAt list = normalizer.at("normalizers");
    for (size_t i = 0; i < list.size(); ++i) read_normalizer(list.at(i));
  } else if (const auto form = normal_form(type)) {
    normalizer_.push_back(*form);
  } else {
    normalizer.unsupported_type();
  }
}

void Tokenizer::read_post_processor(const JsonAt& post) {
  const std::string type = post.at("type").str();
  if (type == "Sequence") {
    const JsonAt list = post.at("processors");
    for (size_t i = 0; i < list.size(); ++i) read_post_processor(list.at(i));
    return;
  }
  if (type == "ByteLevel") return;  // only trims offsets; ids are unchanged
  if (type != "TemplateProcessing") post.unsupported_type();
  const JsonAt specials = post.at("special_tokens");
  const JsonAt single = post.at("single");
  Template tmpl;
  for (size_t i = 0; i < single.size(); ++i) {
    const JsonAt item = single.at(i);
    TemplateItem out;
    if (const auto seq = item.find("Sequence")) {
      if (seq->at("id").str() != "A")
        seq->at("id").fail("a single-sequence template has only sequence A");
      out.is_sequence = true;
    } else if (const auto special = item.find("SpecialToken")) {
      const std::string name = special->at("id").str();
      const auto entry = specials.find(name);
      if (!entry) special->at("id").fail("'" + name + "' is not in special_tokens");
      const JsonAt ids = entry->at("ids");
      for (size_t k = 0; k < ids.size(); ++k)
        out.ids.push_back(static_cast<int32_t>(ids.at(k).integer()));
    } else {
      item.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
    tmpl.push_back(std::move(out));
  }
  templates_.push_back(std::move(tmpl));
}

void Tokenizer::read_decoder(const JsonAt& decoder) {
  const std::string type = decoder.at("type").str();
  if (type == "ByteLevel") {
    decoder_ = Decoder::kByteLevel;
  } else if (type == "Sequence" && decoder.at("decoders").size() == 1) {
    read_decoder(decoder.at("decoders").at(0));
  } else {
    decoder.unsupported_type();
  }
}

void Tokenizer::read_roles(const std::string& config_path) {
  const nlohmann::json doc = parse_json(read_file(config_path), config_path);
  const JsonAt config(doc, config_path);
  if (!doc.is_object()) config.fail("expected an object");
  for (const char* key : {"bos_token", "eos_token"}) {
    const auto value = config.find(key);
    if (!value) continue;
    const JsonAt content = value->json().is_object() ? value->at("content") : *value;
    const auto id = token_to_id(content.str());
    if (!id) content.fail("'" + content.str() + "' is not a token of the tokenizer");
    (std::string(key) == "bos_token" ? bos_id_ : eos_id_) = id;
  }
}

std::string Tokenizer::normalize(std::string_view text) const {
  std::string out(text);
  for (NormalForm form : normalizer_) out = tokenizer::normalize(out, form);
  return out;
}

void Tokenizer::encode_text(std::string_view text, WordCache* cache,
                            std::vector<int32_t>* ids) const {
  constexpr size_t kMaxCachedWords = 1 << 16;
  for (std::string& word : pre_tokenizer_.split(text)) {
    if (auto it = cache->find(word); it != cache->end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      continue;
    }
    const size_t first = ids->size();
    bpe_.encode(word, ids);
    if (cache->size() < kMaxCachedWords)
      cache->emplace(std::move(word), std::vector<int32_t>(ids->begin() + first, ids->end()));
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (const auto bad = find_invalid_utf8(text)) {
    throw InputError("", "text to encode is not valid UTF-8 (byte " + std::to_string(*bad) + ")");
  }
  std::vector<int32_t> ids;
  WordCache cache;
  for (const TextPiece& raw : added_.split(text, false)) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    const std::string normalized = normalize(raw.text);
    if (!added_.has_normalized_tokens()) {
      encode_text(normalized, &cache, &ids);
      continue;
    }
    for (const TextPiece& piece : added_.split(normalized, true)) {
      if (piece.id >= 0)
        ids.push_back(piece.id);
      else
        encode_text(piece.text, &cache, &ids);
    }
  }
  if (!add_special_tokens) return ids;
  for (const Template& tmpl : templates_) {
    std::vector<int32_t> out;
    for (const TemplateItem& item : tmpl) {
      const auto& part = item.is_sequence ? ids : item.ids;
      out.insert(out.end(), part.begin(), part.end());
    }
    ids = std::move(out);
  }
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;  // kByteLevel: the bytes the tokens stand for; kNone: tokens joined by ' '
  bool first = true;
  for (int32_t id : ids) {
    const AddedToken* added = added_.find(id);
    if (added != nullptr && added->special && skip_special_tokens) continue;
    const std::string* token = added != nullptr ? &added->content : bpe_.id_to_token(id);
    if (token == nullptr) continue;
    if (decoder_ == Decoder::kNone) {
      if (!first) bytes += ' ';
      bytes += *token;
    } else if (!byte_level_decode(*token, &bytes)) {
      bytes += *token;  // not in the byte-level alphabet (e.g. DeepSeek's <｜User｜>): as written
    }
    first = false;
  }
  return decoder_ == Decoder::kByteLevel ? utf8_lossy(bytes) : bytes;
}

void DecodeStream::push(int32_t id, std::string* text) {
  const Tokenizer& t = *tokenizer_;
  const AddedToken* added = t.added_.find(id);
  if (added != nullptr && added->special && skip_special_) return;
  const std::string* token = added != nullptr ? &added->content : t.bpe_.id_to_token(id);
  if (token == nullptr) return;
  if (t.decoder_ == Tokenizer::Decoder::kNone) {
    if (!first_) *text += ' ';
    *text += *token;
    first_ = false;
    return;
  }
  // As decode(): the bytes of all tokens, then utf8_lossy. Bytes before pending_ are settled.
  if (!pending_.empty()) text->resize(text->size() - 3);  // its U+FFFD
  if (!byte_level_decode(*token, &pending_)) pending_ += *token;
  pending_.erase(0, utf8_lossy_settled(pending_, text));
  if (!pending_.empty()) text->append("\xEF\xBF\xBD");
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* added = added_.find(token)) return added->id;
  return bpe_.token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* added = added_.find(id)) return added->content;
  if (const std::string* token = bpe_.id_to_token(id)) return *token;
  return std::nullopt;
}

std::string Tokenizer::id_to_bytes(int32_t id) const {
  const AddedToken* added = added_.find(id);
  const std::string* token = added != nullptr ? &added->content : bpe_.id_to_token(id);
  if (token == nullptr) return "";
  std::string bytes;
  if (decoder_ != Decoder::kByteLevel || !byte_level_decode(*token, &bytes)) bytes = *token;
  return bytes;
}

int32_t Tokenizer::vocab_size() const {
  int32_t size = bpe_.id_limit();
  for (const AddedToken& t : added_.tokens()) size = std::max(size, t.id + 1);
  return size;
}

bool Tokenizer::is_special(int32_t id) const {
  const AddedToken* added = added_.find(id);
  return added != nullptr && added->special;
}

}  // namespace h0::tokenizer
