// UTF-8 validation, shared by the report writers (HTML, JUnit) and the suite loader.
#pragma once

#include <cstddef>
#include <string_view>

namespace h0 {

// The length of the UTF-8 sequence at s[i] (i < s.size()), with its code point in *cp when cp is
// given; 0 if the bytes there are not valid UTF-8 (truncated, overlong, a surrogate, above
// U+10FFFF). The one validator of html_escape, the JUnit writer (xml_escape) and the suite
// loader (parse_yaml).
size_t utf8_sequence(std::string_view s, size_t i, char32_t* cp = nullptr);

}  // namespace h0
