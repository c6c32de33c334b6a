// A guard for JSON read from users' files: nlohmann's parser (and dump) recurse once per nesting
// level, so a value nested ~50k deep exhausts the stack. Scan first, in one flat pass.
#pragma once

#include <string_view>

namespace h0::base {

// The deepest nesting of arrays and objects in `text` (brackets inside strings do not count).
// Stops counting past `limit` and returns limit + 1.
int json_depth(std::string_view text, int limit);

// The nesting real configs, headers and dumps stay far below.
inline constexpr int kMaxJsonDepth = 256;

}  // namespace h0::base
