#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/unicode_text.h"

namespace h0::tokenizer {
namespace {

constexpr char32_t kMaxChar = 0x100 + 68;  // the highest code point of the alphabet, plus one

struct Alphabet {
  std::array<std::string, 256> char_of_byte;   // UTF-8 of the character for each byte
  std::array<int16_t, kMaxChar> byte_of_char;  // -1 where the code point is not in the alphabet

  Alphabet() {
    byte_of_char.fill(-1);
    char32_t next_extra = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t c = printable ? static_cast<char32_t>(b) : next_extra++;
      append_utf8(c, &char_of_byte[b]);
      byte_of_char[c] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

std::string byte_level_encode(std::string_view bytes) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) out += a.char_of_byte[static_cast<unsigned char>(b)];
  return out;
}

bool byte_level_decode(std::string_view token, std::string* bytes) {
  const Alphabet& a = alphabet();
  const size_t start = bytes->size();
  for (size_t pos = 0; pos < token.size();) {
    size_t len = 0;
    const char32_t c = decode_utf8(token, pos, &len);
    if (c >= kMaxChar || a.byte_of_char[c] < 0) {
      bytes->resize(start);
      return false;
    }
    bytes->push_back(static_cast<char>(a.byte_of_char[c]));
    pos += len;
  }
  return true;
}

}  // namespace h0::tokenizer
