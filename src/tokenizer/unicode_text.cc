#include "tokenizer/unicode_text.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

#include "base/check.h"

namespace h0::tokenizer {
namespace {

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// The length of the valid prefix of the sequence at `pos` (1..4), and whether it is complete.
// Follows the Unicode "maximal subpart" rule, as Rust's Utf8Chunks does.
size_t valid_prefix(std::string_view s, size_t pos, bool* complete) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  *complete = false;
  if (b0 < 0x80) {
    *complete = true;
    return 1;
  }
  // The width of the sequence b0 starts, and the range its second byte must lie in (which
  // excludes overlong forms, surrogates and code points above U+10FFFF).
  size_t width = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    width = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    width = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    width = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 1;  // a byte that never starts a sequence
  }
  size_t n = 1;
  for (; n < width && pos + n < s.size(); ++n) {
    const auto b = static_cast<unsigned char>(s[pos + n]);
    const bool ok = n == 1 ? (b >= lo && b <= hi) : is_continuation(b);
    if (!ok) return n;
  }
  *complete = n == width;
  return n;
}

}  // namespace

std::optional<size_t> find_invalid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    bool complete = false;
    const size_t n = valid_prefix(s, pos, &complete);
    if (!complete) return pos;
    pos += n;
  }
  return std::nullopt;
}

size_t utf8_length_at(std::string_view s, size_t pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  return b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
}

char32_t decode_utf8(std::string_view s, size_t pos, size_t* len) {
  *len = utf8_length_at(s, pos);
  H0_CHECK(pos + *len <= s.size()) << "truncated UTF-8";
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (*len == 1) return b0;
  char32_t c = b0 & (0x7F >> *len);
  for (size_t i = 1; i < *len; ++i) c = (c << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  return c;
}

void append_utf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t pos = 0; pos < bytes.size();) {
    bool complete = false;
    const size_t n = valid_prefix(bytes, pos, &complete);
    if (complete)
      out.append(bytes.substr(pos, n));
    else
      out.append("\xEF\xBF\xBD");  // U+FFFD
    pos += n;
  }
  return out;
}

size_t utf8_lossy_settled(std::string_view bytes, std::string* out) {
  for (size_t pos = 0; pos < bytes.size();) {
    bool complete = false;
    const size_t n = valid_prefix(bytes, pos, &complete);
    if (complete)
      out->append(bytes.substr(pos, n));
    else if (pos + n == bytes.size())
      return pos;  // may yet be completed by the bytes that follow
    else
      out->append("\xEF\xBF\xBD");  // U+FFFD
    pos += n;
  }
  return bytes.size();
}

bool is_whitespace(char32_t c) {
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool is_word_char(char32_t c) {
  const auto u = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL))
    return true;
  const int8_t type = u_charType(u);
  return type == U_NON_SPACING_MARK || type == U_COMBINING_SPACING_MARK ||
         type == U_ENCLOSING_MARK || type == U_DECIMAL_DIGIT_NUMBER ||
         type == U_CONNECTOR_PUNCTUATION;
}

std::string normalize(std::string_view text, NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNfc:
      n = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNfd:
      n = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNfkc:
      n = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNfkd:
      n = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  H0_CHECK(U_SUCCESS(status)) << "ICU normalizer: " << u_errorName(status);
  const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  if (n->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out);
  n->normalizeUTF8(0, piece, sink, nullptr, status);
  H0_CHECK(U_SUCCESS(status)) << "ICU normalizeUTF8: " << u_errorName(status);
  return out;
}

}  // namespace h0::tokenizer
