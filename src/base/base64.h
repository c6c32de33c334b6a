// Base64 (RFC 4648, standard alphabet, '=' padding), for images sent as data: URLs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace h0::base {

std::string base64_encode(std::string_view bytes);
// nullopt when `text` is not base64 (whitespace is skipped; padding optional; the URL-safe
// alphabet's '-' and '_' are accepted too).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace h0::base
