// Typed reads of one JSON object of a config.json, with errors that name the field's path:
// "config.json: text_config.hidden_size: missing (an integer is required)".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace h0::model {

class ConfigFields {
 public:
  // `where`: the file, then the object's path, e.g. "config.json: text_config".
  ConfigFields(const nlohmann::json& object, std::string where)
      : j_(&object), where_(std::move(where)) {}

  // "config.json: text_config.hidden_size" (or "config.json: hidden_size" at the top level).
  std::string where(const std::string& key) const;

  int64_t req_int(const std::string& key) const;
  // The first of `keys` present: one field under the names different transformers majors write
  // (Qwen3-MoE: num_experts in 4.x, num_local_experts in 5.x). Missing: an error naming them all.
  int64_t req_int_any(const std::vector<std::string>& keys) const;
  double req_double(const std::string& key) const;
  ConfigFields req_object(const std::string& key) const;

  // The default when absent or null; a present value of the wrong type is an error.
  int64_t opt_int(const std::string& key, int64_t def) const;
  double opt_double(const std::string& key, double def) const;
  bool opt_bool(const std::string& key, bool def) const;
  std::string opt_string(const std::string& key, const std::string& def) const;
  std::vector<int64_t> opt_int_list(const std::string& key) const;
  std::optional<ConfigFields> opt_object(const std::string& key) const;
  const nlohmann::json& json() const { return *j_; }
  const nlohmann::json* find(const std::string& key) const;  // nullptr when absent or null

 private:
  const nlohmann::json* j_;
  std::string where_;
};

}  // namespace h0::model
