#include "suite/location.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/error.h"

namespace h0::suite {

std::string Location::str() const {
  if (line <= 0) return file;
  const std::string place = std::to_string(line) + ":" + std::to_string(col);
  return file.empty() ? place : file + ":" + place;
}

namespace {

Location from_mark(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return Location{file};
  return Location{file, mark.line + 1, mark.column + 1};
}

}  // namespace

Location location_of(const std::string& file, const YAML::Node& node) {
  if (!node.IsDefined()) return Location{file};
  return from_mark(file, node.Mark());
}

void fail_at(const Location& where, const std::string& message) {
  throw InputError(where.str(), message);
}

void fail_at(const std::string& file, const YAML::Node& node, const std::string& message) {
  fail_at(location_of(file, node), message);
}

std::optional<std::string> read_text_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

YAML::Node parse_yaml(const std::string& file, const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    // e.what() repeats the position as "yaml-cpp: error at line L, column C: "; e.msg does not.
    fail_at(from_mark(file, e.mark), "YAML syntax error: " + e.msg);
  }
}

void for_each_entry(const std::string& file, const YAML::Node& map,
                    const std::function<void(const std::string& key, const YAML::Node& key_node,
                                             const YAML::Node& value)>& fn) {
  std::map<std::string, YAML::Node> seen;
  // Entries by value: yaml-cpp's iterator-> returns a proxy that dies with the expression.
  for (const auto& entry : map) {
    const YAML::Node& key_node = entry.first;
    if (!key_node.IsScalar()) fail_at(file, key_node, "expected a string key");
    const std::string& key = key_node.Scalar();
    auto [first, inserted] = seen.emplace(key, key_node);
    if (!inserted) {
      fail_at(
          file, key_node,
          "duplicate key '" + key + "' (first at " + location_of(file, first->second).str() + ")");
    }
    fn(key, key_node, entry.second);
  }
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace h0::suite
