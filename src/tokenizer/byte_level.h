// GPT-2's byte-level alphabet (bytes_to_unicode): every byte maps to one printable code point,
// so any byte string becomes a string of "characters" BPE can merge. Printable Latin-1 bytes
// map to themselves; the other 68 to U+0100..U+0143 (space is 'Ġ' U+0120).
#pragma once

#include <string>
#include <string_view>

namespace h0::tokenizer {

// `bytes` written in the byte-level alphabet (UTF-8), one character per byte.
std::string byte_level_encode(std::string_view bytes);

// If every character of `token` (UTF-8) is in the byte-level alphabet, appends the bytes they
// stand for to `*bytes` and returns true; otherwise appends nothing and returns false.
bool byte_level_decode(std::string_view token, std::string* bytes);

}  // namespace h0::tokenizer
