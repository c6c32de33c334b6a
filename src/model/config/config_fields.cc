#include "model/config/config_fields.h"

#include "base/error.h"

namespace h0::model {

std::string ConfigFields::where(const std::string& key) const {
  const bool top = where_.find(": ") == std::string::npos;
  return where_ + (top ? ": " : ".") + key;
}

const nlohmann::json* ConfigFields::find(const std::string& key) const {
  auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t ConfigFields::req_int(const std::string& key) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) throw InputError(where(key), "missing (an integer is required)");
  if (!v->is_number_integer()) throw InputError(where(key), "must be an integer, got " + v->dump());
  return v->get<int64_t>();
}

int64_t ConfigFields::req_int_any(const std::vector<std::string>& keys) const {
  for (const std::string& k : keys) {
    if (find(k) != nullptr) return req_int(k);
  }
  std::string names;
  for (const std::string& k : keys) names += (names.empty() ? "" : " or ") + k;
  throw InputError(where(keys.front()),
                   "missing (an integer is required; also read as " + names + ")");
}

double ConfigFields::req_double(const std::string& key) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) throw InputError(where(key), "missing (a number is required)");
  if (!v->is_number()) throw InputError(where(key), "must be a number, got " + v->dump());
  return v->get<double>();
}

ConfigFields ConfigFields::req_object(const std::string& key) const {
  std::optional<ConfigFields> o = opt_object(key);
  if (!o) throw InputError(where(key), "missing (an object is required)");
  return *o;
}

int64_t ConfigFields::opt_int(const std::string& key, int64_t def) const {
  return find(key) ? req_int(key) : def;
}

double ConfigFields::opt_double(const std::string& key, double def) const {
  return find(key) ? req_double(key) : def;
}

bool ConfigFields::opt_bool(const std::string& key, bool def) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return def;
  if (!v->is_boolean()) throw InputError(where(key), "must be true or false, got " + v->dump());
  return v->get<bool>();
}

std::string ConfigFields::opt_string(const std::string& key, const std::string& def) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return def;
  if (!v->is_string()) throw InputError(where(key), "must be a string, got " + v->dump());
  return v->get<std::string>();
}

std::vector<int64_t> ConfigFields::opt_int_list(const std::string& key) const {
  const nlohmann::json* v = find(key);
  std::vector<int64_t> out;
  if (v == nullptr) return out;
  if (!v->is_array()) throw InputError(where(key), "must be a list of integers, got " + v->dump());
  for (const auto& e : *v) {
    if (!e.is_number_integer())
      throw InputError(where(key), "must be a list of integers, got " + v->dump());
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::optional<ConfigFields> ConfigFields::opt_object(const std::string& key) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) throw InputError(where(key), "must be an object, got " + v->dump());
  const bool top = where_.find(": ") == std::string::npos;
  return ConfigFields(*v, where_ + (top ? ": " : ".") + key);
}

}  // namespace h0::model
