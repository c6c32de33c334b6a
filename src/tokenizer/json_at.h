// A JSON value together with its path inside a file, so that every error about a tokenizer.json
// names the file and the place: "tokenizer.json: model.merges[3]: token 'ab' not in the vocab".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace h0::tokenizer {

class JsonAt {
 public:
  // `file` is the name errors start with; `path` the dotted path of `value` ("" for the root).
  JsonAt(const nlohmann::json& value, std::string file, std::string path = "")
      : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

  // The member `key`; throws "path.key: missing" when absent.
  JsonAt at(const std::string& key) const;
  // The member `key`, or nullopt when absent or null.
  std::optional<JsonAt> find(const std::string& key) const;
  // Element i of an array.
  JsonAt at(size_t i) const;
  // The number of elements of an array (throws unless an array).
  size_t size() const;

  std::string str() const;
  bool boolean() const;
  int64_t integer() const;
  // The member `key` as a bool, or `fallback` when absent or null.
  bool flag(const std::string& key, bool fallback) const;

  // Throws InputError(file, "path: what").
  [[noreturn]] void fail(const std::string& what) const;
  // Throws "path.type: unsupported 'Name'" for this object's "type".
  [[noreturn]] void unsupported_type() const;

 private:
  JsonAt child(const nlohmann::json& value, std::string path) const {
    return {value, file_, std::move(path)};
  }
  void expect(bool ok, const char* what) const;

  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

}  // namespace h0::tokenizer
