// Small text helpers the reports share (terminal lines, harness diff / history text and JSON).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace h0 {

// `text` wrapped in the ANSI SGR `code` ("31" red, "32" green, "33" yellow, "1" bold) when
// `color`, else as it is.
std::string paint(const std::string& text, const char* code, bool color);

// One number through a printf format: printf_string("%+.1f%%", 12.34) is "+12.3%".
std::string printf_string(const char* format, double v);

// `v` as a JSON number, or null when it is not finite (JSON has no NaN or infinity).
nlohmann::json number_or_null(double v);

// 1234567 -> "1,234,567".
std::string with_commas(int64_t v);

// 1536 -> "1.5 KiB".
std::string human_bytes(uint64_t bytes);

}  // namespace h0
