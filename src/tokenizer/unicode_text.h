// UTF-8 helpers for the tokenizer: code-point stepping, Rust's from_utf8_lossy, character
// classes as Rust's char methods define them, and Unicode normalization (ICU).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace h0::tokenizer {

// The byte offset of the first invalid UTF-8 sequence in `s`, or nullopt if `s` is valid.
std::optional<size_t> find_invalid_utf8(std::string_view s);

// The code point starting at byte `pos` of valid UTF-8 `s`; `*len` receives its byte length.
char32_t decode_utf8(std::string_view s, size_t pos, size_t* len);
// The byte length of the code point starting at `pos` (valid UTF-8).
size_t utf8_length_at(std::string_view s, size_t pos);
void append_utf8(char32_t c, std::string* out);

// `bytes` as UTF-8, each maximal invalid subsequence replaced by U+FFFD (Rust's
// String::from_utf8_lossy, which HF's decoders use).
std::string utf8_lossy(std::string_view bytes);
// Appends utf8_lossy(bytes) to *out except for a trailing incomplete (but so far valid)
// sequence, whose bytes it leaves: returns how many bytes it took. What it appends does not
// change whatever bytes follow, so utf8_lossy(bytes + more) equals the appended text followed
// by utf8_lossy(bytes.substr(taken) + more).
size_t utf8_lossy_settled(std::string_view bytes, std::string* out);

// White_Space: Rust's char::is_whitespace and its regex crate's \s.
bool is_whitespace(char32_t c);
// The regex crate's \w: Alphabetic, marks, decimal digits, connector punctuation, Join_Control.
bool is_word_char(char32_t c);

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };
// `text` (valid UTF-8) in the given Unicode normalization form.
std::string normalize(std::string_view text, NormalForm form);

}  // namespace h0::tokenizer
