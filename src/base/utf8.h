// UTF-8 validation, shared by the report writers (HTML, JUnit) and the suite loader; character
// counts for the OpenAI API's text offsets.
#pragma once

#include <cstddef>
#include <string_view>

namespace h0 {

// U+FFFD REPLACEMENT CHARACTER in UTF-8: what a lossy decode writes for bytes that are no
// character (and what an incremental detokenizer shows for one still incomplete).
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// The length of the UTF-8 sequence at s[i] (i < s.size()), with its code point in *cp when cp is
// given; 0 if the bytes there are not valid UTF-8 (truncated, overlong, a surrogate, above
// U+10FFFF). The one validator of html_escape, the JUnit writer (xml_escape) and the suite
// loader (parse_yaml).
size_t utf8_sequence(std::string_view s, size_t i, char32_t* cp = nullptr);

// The characters of `s` as OpenAI's `text_offset` counts them: its bytes that do not continue a
// sequence (a code point each for valid UTF-8). The embedded server's echo offsets and the eval
// check's reading of them both count with this.
inline size_t utf8_characters(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

}  // namespace h0
