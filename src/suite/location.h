// Places in YAML files, and the user errors that name them. Every error of the suite module
// reads "file:line:col: what is wrong (what was expected)", thrown as h0::InputError.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace h0::suite {

// A position in a file, 1-based. line 0 means the file as a whole.
struct Location {
  std::string file;
  int line = 0, col = 0;
  // "file:line:col"; "file" if line is 0; "line:col" if file is empty (a node whose file the
  // caller did not say).
  std::string str() const;
};

// Where `node` starts in `file` (yaml-cpp marks are 0-based). A node without a position (an
// absent key, an empty document) gives line 0.
Location location_of(const std::string& file, const YAML::Node& node);

// Throws h0::InputError(where.str(), message).
[[noreturn]] void fail_at(const Location& where, const std::string& message);
[[noreturn]] void fail_at(const std::string& file, const YAML::Node& node,
                          const std::string& message);

// The whole contents of `path`; nullopt if it is not a readable regular file.
std::optional<std::string> read_text_file(const std::string& path);

// Parses the first YAML document of `text`, the contents of `file`. A syntax error becomes
// "file:line:col: YAML syntax error: <yaml-cpp's message>". An empty document is a Null node.
YAML::Node parse_yaml(const std::string& file, const std::string& text);

// Calls fn(key, key_node, value) for each entry of the mapping `map`, in the order written.
// Fails at a key that is not a string, or that repeats an earlier key of the mapping.
void for_each_entry(const std::string& file, const YAML::Node& map,
                    const std::function<void(const std::string& key, const YAML::Node& key_node,
                                             const YAML::Node& value)>& fn);

// "a, b, c", for the "(expected one of: ...)" part of messages.
std::string join_names(const std::vector<std::string>& names);

}  // namespace h0::suite
