// Text helpers of the HTML dashboard: escaping for HTML text and attributes, JSON that is safe
// inside a <script> element, compact numbers and file names derived from case ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/utf8.h"

namespace h0::report {

using h0::utf8_sequence;  // base/utf8.h

// `text` with & < > " ' replaced by entities: safe as element text and as a quoted attribute
// value. Invalid UTF-8 becomes U+FFFD.
std::string html_escape(std::string_view text);

// `value` as JSON that can stand inside <script> (a data block or a .js file): < > & and
// U+2028/U+2029 are written as \uXXXX escapes (they only occur inside strings), so no text
// from the store can close the element or start a comment. Invalid UTF-8 becomes U+FFFD.
std::string script_json(const nlohmann::json& value);

// `v` rounded to `digits` significant digits, as a JSON number: an integer when integral
// (1235000, not 1235000.0); null when not finite.
nlohmann::json rounded(double v, int digits = 4);

// A file name stem for `id`: its letters, digits, '.', '_' and '-' (others become '-', runs
// collapsed, at most 48), then '-' and the first 8 hex digits of sha256(id). Distinct ids get
// distinct stems; the result never needs escaping in a URL or a file system.
std::string file_stem(const std::string& id);

// "12.3 KiB"-style size for page footers.
std::string size_text(uint64_t bytes);

}  // namespace h0::report
