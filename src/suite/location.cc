#include "suite/location.h"

#include <yaml-cpp/depthguard.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "base/input_file.h"
#include "base/utf8.h"

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
  try {
    return base::read_regular_file(path);  // a FIFO is refused, never waited on
  } catch (const InputError&) {
    return std::nullopt;
  }
}

namespace {

// The offset of the first byte of `s` that is not valid UTF-8, or npos.
size_t invalid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string::npos;
}

// A document's nodes as the harness reads them, aliases expanded: at most this many.
constexpr size_t kMaxNodes = 1'000'000;

// And nested at most this deep (real suites and platforms nest under ten levels); every reader of
// a document recurses once per level.
constexpr int kMaxDepth = 256;

// Every scalar valid UTF-8, and the expanded document within kMaxNodes (YAML aliases let a few
// hundred bytes stand for billions of nodes) and kMaxDepth (an alias inside its own anchor,
// `&x [*x]`, is a node that contains itself).
void check_document(const std::string& file, const YAML::Node& node, size_t* visited,
                    int depth = 0) {
  if (++*visited > kMaxNodes) {
    fail_at(file, node,
            "the document expands to more than " + std::to_string(kMaxNodes) +
                " nodes (YAML aliases repeated inside each other?)");
  }
  if (depth > kMaxDepth) {
    fail_at(file, node,
            "nested deeper than " + std::to_string(kMaxDepth) +
                " levels (an alias inside its own anchor?)");
  }
  if (node.IsScalar()) {
    const size_t bad = invalid_utf8(node.Scalar());
    if (bad != std::string::npos) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X",
                    static_cast<unsigned>(static_cast<unsigned char>(node.Scalar()[bad])));
      fail_at(file, node,
              std::string("invalid UTF-8 (byte ") + byte + " at offset " + std::to_string(bad) +
                  " of the value)");
    }
  } else if (node.IsSequence()) {
    for (const YAML::Node& item : node) check_document(file, item, visited, depth + 1);
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      check_document(file, entry.first, visited, depth + 1);
      check_document(file, entry.second, visited, depth + 1);
    }
  }
}

}  // namespace

YAML::Node parse_yaml(const std::string& file, const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    fail_at(from_mark(file, e.mark),
            "YAML nested deeper than " + std::to_string(e.depth() - 1) + " levels");
  } catch (const YAML::ParserException& e) {
    // e.what() repeats the position as "yaml-cpp: error at line L, column C: "; e.msg does not.
    fail_at(from_mark(file, e.mark), "YAML syntax error: " + e.msg);
  }
  size_t visited = 0;
  check_document(file, root, &visited);
  return root;
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
