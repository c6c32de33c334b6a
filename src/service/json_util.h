// JSON helpers the service's client and server share (internal to src/service).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace h0::service {

// Text of `j` as sent or logged: invalid UTF-8 (as from a model) replaced, never thrown on.
inline std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// j[key] when `j` is an object holding it and it is not null; otherwise nullptr.
inline const nlohmann::json* member(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

// vLLM's return_tokens_as_token_ids: a token written "token_id:<id>".
inline constexpr std::string_view kTokenIdPrefix = "token_id:";

}  // namespace h0::service
