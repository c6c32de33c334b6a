#include "base/json_read.h"

#include "base/error.h"
#include "base/input_file.h"
#include "base/json_depth.h"

namespace h0::base {
namespace {

template <typename Json>
Json parse_bounded(std::string_view text, const std::string& where) {
  if (json_depth(text, kMaxJsonDepth) > kMaxJsonDepth) {
    throw InputError(where, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where, std::string("not JSON: ") + e.what());
  }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& where) {
  return parse_bounded<nlohmann::json>(text, where);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& where) {
  return parse_bounded<nlohmann::ordered_json>(text, where);
}

nlohmann::json parse_json_or_discarded(std::string_view text) {
  if (json_depth(text, kMaxJsonDepth) > kMaxJsonDepth) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

nlohmann::json read_json_file(const std::string& path) {
  return parse_json(read_regular_file(path), path);
}

}  // namespace h0::base
