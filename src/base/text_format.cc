#include "base/text_format.h"

#include <cmath>
#include <cstdio>

namespace h0 {

std::string paint(const std::string& text, const char* code, bool color) {
  return color ? std::string("\033[") + code + "m" + text + "\033[0m" : text;
}

std::string printf_string(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; }

}  // namespace h0
