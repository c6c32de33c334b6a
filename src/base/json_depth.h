// Guards for JSON read from users' files: nlohmann's parser (and dump) recurse once per nesting
// level, so a value nested ~50k deep exhausts the stack. Scan first, in one flat pass.
#pragma once

#include <cstddef>
#include <string_view>

namespace h0::base {

// Calls `outside(i)` for each byte index i of `text` that lies outside JSON strings (a string's
// quotes count as inside); `outside` returns the index to go on from (i + 1 to take one byte,
// more to skip a token it consumed). O(n), no recursion.
template <typename F>
void for_each_outside_strings(std::string_view text, F&& outside) {
  bool quoted = false, escaped = false;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (quoted) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        quoted = false;
      }
      ++i;
    } else if (c == '"') {
      quoted = true;
      ++i;
    } else {
      i = outside(i);
    }
  }
}

// The deepest nesting of arrays and objects in `text` (brackets inside strings do not count).
// Stops counting past `limit` and returns limit + 1.
int json_depth(std::string_view text, int limit);

// The nesting real configs, headers and dumps stay far below.
inline constexpr int kMaxJsonDepth = 256;

}  // namespace h0::base
