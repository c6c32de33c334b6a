#include "base/json_depth.h"

namespace h0::base {

int json_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  for_each_outside_strings(text, [&](size_t i) {
    if (text[i] == '[' || text[i] == '{') {
      if (++depth > deepest) deepest = depth;
    } else if (text[i] == ']' || text[i] == '}') {
      --depth;
    }
    return deepest > limit ? text.size() : i + 1;  // past the limit: stop
  });
  return deepest > limit ? limit + 1 : deepest;
}

}  // namespace h0::base
