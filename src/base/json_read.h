// JSON from users' files and from servers, parsed with its nesting bounded: nlohmann's parser
// and dump recurse once per level, so a value nested ~50k deep would exhaust the stack. Every
// parse of bytes the harness did not write goes through here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace h0::base {

// `text` as JSON. Throws InputError(where, ...) when it is not JSON or is nested deeper than
// kMaxJsonDepth (json_depth.h), the limit named.
nlohmann::json parse_json(std::string_view text, const std::string& where);
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& where);

// `text` as JSON, or a discarded value (is_discarded()) when it is not JSON or is nested too
// deep. Never throws.
nlohmann::json parse_json_or_discarded(std::string_view text);

// The regular file `path` (input_file.h) parsed as JSON; errors name the path.
nlohmann::json read_json_file(const std::string& path);

}  // namespace h0::base
