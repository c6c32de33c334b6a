#include "suite/suite.h"

#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "base/error.h"
#include "base/sha256.h"
#include "suite/platform.h"

namespace h0::suite {
namespace fs = std::filesystem;
namespace {

// yaml-cpp nodes are handles whose assignment writes through to the node assigned over, so
// nodes below are bound once (construction or reset()), never assigned over.

const std::vector<std::string> kTopFields = {"suite", "description", "include", "defaults",
                                             "checks"};

// Characters that give case ids and filters their structure; a check id may not use them.
constexpr std::string_view kIdReserved = "[],=*?: \t";

std::vector<KindSchema>& registry() {
  static std::vector<KindSchema> kinds;
  return kinds;
}

const KindSchema* find_kind(const std::string& kind) {
  for (const auto& schema : registry()) {
    if (schema.kind == kind) return &schema;
  }
  return nullptr;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  for (const auto& n : names) {
    if (n == name) return true;
  }
  return false;
}

// "(expected one of: op, layer)": the registered kinds.
std::string expected_kinds() {
  if (registry().empty()) return "(no check kinds are registered)";
  std::vector<std::string> names;
  for (const auto& schema : registry()) names.push_back(schema.kind);
  return "(expected one of: " + join_names(names) + ")";
}

// The fields a check of `schema` accepts: the common ones, then the kind's own.
std::vector<std::string> fields_of(const KindSchema& schema) {
  std::vector<std::string> fields = common_fields();
  for (const auto& f : schema.fields) {
    if (!contains(fields, f)) fields.push_back(f);
  }
  return fields;
}

// Fields that `defaults` may set: those of any kind except id and kind.
std::vector<std::string> default_fields() {
  std::vector<std::string> fields;
  for (const auto& f : common_fields()) {
    if (f != "id" && f != "kind") fields.push_back(f);
  }
  for (const auto& schema : registry()) {
    for (const auto& f : schema.fields) {
      if (!contains(fields, f)) fields.push_back(f);
    }
  }
  return fields;
}

// A plain true/false/True/... scalar: YAML's booleans, which are not reasons.
bool is_plain_bool(const YAML::Node& node) {
  if (node.Tag() != "?") return false;
  static const std::set<std::string> kBools = {"true", "True", "TRUE", "false", "False", "FALSE"};
  return kBools.count(node.Scalar()) > 0;
}

// A skip or xfail: a reason string, or {reason: "..."}.
std::string reason_of(const std::string& file, const std::string& field, const YAML::Node& node) {
  const std::string bad = "bad " + field + ": expected a reason, as " + field + ": \"why\" or " +
                          field + ": {reason: \"why\"}";
  if (node.IsScalar() && !node.Scalar().empty() && !is_plain_bool(node)) return node.Scalar();
  if (!node.IsMap()) fail_at(file, node, bad);
  std::string reason;
  for_each_entry(file, node,
                 [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& value) {
                   if (key != "reason") {
                     fail_at(file, key_node,
                             "unknown field '" + key + "' in " + field + " (expected: reason)");
                   }
                   if (!value.IsScalar() || value.Scalar().empty() || is_plain_bool(value)) {
                     fail_at(file, value, bad);
                   }
                   reason = value.Scalar();
                 });
  if (reason.empty()) fail_at(file, node, bad);
  return reason;
}

std::vector<std::string> tags_of(const std::string& file, const YAML::Node& node) {
  const std::string bad = "bad tags: expected a sequence of strings, e.g. tags: [slow, nightly]";
  if (!node.IsSequence()) fail_at(file, node, bad);
  std::vector<std::string> tags;
  for (const auto& tag : node) {
    if (!tag.IsScalar() || tag.Scalar().empty()) fail_at(file, tag, bad);
    tags.push_back(tag.Scalar());
  }
  return tags;
}

std::vector<std::pair<std::string, std::vector<YAML::Node>>> matrix_of(const std::string& file,
                                                                       const YAML::Node& node) {
  if (!node.IsMap()) {
    fail_at(file, node,
            "bad matrix: expected a mapping of parameter name to a sequence of values, "
            "e.g. matrix: {dtype: [f32, bf16]}");
  }
  std::vector<std::pair<std::string, std::vector<YAML::Node>>> matrix;
  for_each_entry(file, node,
                 [&](const std::string& param, const YAML::Node&, const YAML::Node& values) {
                   if (!values.IsSequence()) {
                     fail_at(file, values,
                             "bad matrix: parameter '" + param +
                                 "' must be a sequence of values, e.g. dtype: [f32, bf16]");
                   }
                   if (values.size() == 0) {
                     fail_at(file, values, "bad matrix: parameter '" + param + "' has no values");
                   }
                   std::vector<YAML::Node> list;
                   for (const auto& v : values) list.push_back(v);
                   matrix.emplace_back(param, std::move(list));
                 });
  return matrix;
}

// Adds to `check` (in place) the fields of `defaults` it lacks and that its kind accepts. A
// mapping-valued field present in both gets the defaults' keys it lacks (one level deep).
void merge_defaults(YAML::Node check, const YAML::Node& defaults,
                    const std::vector<std::string>& fields) {
  if (!defaults.IsDefined() || !defaults.IsMap()) return;
  const YAML::Node& const_check = check;
  for (const auto& entry : defaults) {
    const std::string key = entry.first.Scalar();
    if (!contains(fields, key)) continue;
    const YAML::Node& value = entry.second;
    const YAML::Node mine = const_check[key];
    if (!mine.IsDefined()) {
      check[key] = value;  // a new entry: binds it to the defaults' node
    } else if (mine.IsMap() && value.IsMap()) {
      YAML::Node target = mine;
      const YAML::Node& const_target = target;
      for (const auto& kv : value) {
        if (!kv.first.IsScalar()) continue;
        const std::string inner = kv.first.Scalar();
        if (!const_target[inner].IsDefined()) target[inner] = kv.second;
      }
    }
  }
}

class Loader {
 public:
  explicit Loader(Suite& suite) : suite_(suite) {}

  // Loads `path` and, first, what it includes. `included_at` is the include entry that named
  // it (nullptr for the top file).
  void load(const std::string& path, const Location* included_at) {
    const std::string key = identity(path);
    std::optional<std::string> text = read_text_file(path);
    if (!text) {
      if (included_at) {
        fail_at(*included_at, "included file '" + path +
                                  "' not found (include paths are relative to the including file)");
      }
      std::error_code ec;
      throw InputError(
          path, fs::exists(path, ec) ? "cannot read the suite file" : "suite file not found");
    }
    loaded_.insert(key);
    stack_.emplace_back(key, path);
    suite_.files.push_back(path);
    if (!included_at) suite_.sha256 = base::sha256_hex(text->data(), text->size());

    const YAML::Node root = parse_yaml(path, *text);
    if (root.IsNull()) fail_at(Location{path}, "empty suite file (expected 'suite' and 'checks')");
    if (!root.IsMap()) {
      fail_at(path, root, "expected a mapping with 'suite' and 'checks' at the top of the file");
    }

    for_each_entry(path, root,
                   [&](const std::string& field, const YAML::Node& key_node, const YAML::Node&) {
                     if (!contains(kTopFields, field)) {
                       fail_at(path, key_node,
                               "unknown top-level field '" + field +
                                   "' (expected one of: " + join_names(kTopFields) + ")");
                     }
                   });
    // Lookups on a const node: an absent key gives an undefined node, without adding it.
    const YAML::Node name = root["suite"];
    const YAML::Node description = root["description"];
    const YAML::Node include = root["include"];
    const YAML::Node defaults = root["defaults"];
    const YAML::Node checks = root["checks"];

    if (!name.IsDefined()) fail_at(path, root, "missing required field 'suite' (the suite's name)");
    if (!name.IsScalar() || name.Scalar().empty()) {
      fail_at(path, name, "bad suite: expected the suite's name as a string");
    }
    if (description.IsDefined() && !description.IsScalar() && !description.IsNull()) {
      fail_at(path, description, "bad description: expected a string");
    }
    if (!included_at) {
      suite_.name = name.Scalar();
      if (description.IsDefined() && description.IsScalar())
        suite_.description = description.Scalar();
    }
    if (include.IsDefined() && !include.IsSequence()) {
      fail_at(path, include,
              "bad include: expected a sequence of suite files, relative to this file");
    }
    if (defaults.IsDefined()) check_defaults(path, defaults);
    if (checks.IsDefined() && !checks.IsSequence() && !checks.IsNull()) {
      fail_at(path, checks, "bad checks: expected a sequence of checks");
    }
    const bool has_includes = include.IsDefined() && include.size() > 0;
    const bool has_checks = checks.IsDefined() && checks.IsSequence() && checks.size() > 0;
    if (!has_checks && !has_includes) {
      fail_at(path, checks.IsDefined() ? checks : root,
              "suite has no checks (expected a non-empty 'checks' sequence, or an 'include')");
    }

    if (include.IsDefined()) {
      for (const auto& entry : include) load_include(path, entry);
    }
    if (has_checks) {
      for (const auto& check : checks) add_check(path, check, defaults);
    }
    stack_.pop_back();
  }

  // A check a program built (a mapping as a suite file's `checks:` entry), validated as one read
  // from a file; `origin` stands for the file in messages.
  void add_built_check(const std::string& origin, const YAML::Node& node) {
    add_check(origin, node, YAML::Node());
  }

 private:
  // The identity of a file for include cycles and repeats.
  static std::string identity(const std::string& path) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(path, ec);
    return ec ? fs::path(path).lexically_normal().string() : canonical.string();
  }

  void load_include(const std::string& from, const YAML::Node& entry) {
    if (!entry.IsScalar() || entry.Scalar().empty()) {
      fail_at(from, entry, "bad include entry: expected the path of a suite file");
    }
    const std::string path =
        (fs::path(from).parent_path() / entry.Scalar()).lexically_normal().string();
    const Location at = location_of(from, entry);
    const std::string key = identity(path);
    for (size_t i = 0; i < stack_.size(); ++i) {
      if (stack_[i].first != key) continue;
      std::string chain;
      for (size_t j = i; j < stack_.size(); ++j) chain += stack_[j].second + " -> ";
      fail_at(at, "include cycle: " + chain + path);
    }
    if (loaded_.count(key)) return;
    load(path, &at);
  }

  void check_defaults(const std::string& file, const YAML::Node& defaults) {
    if (defaults.IsNull()) return;
    if (!defaults.IsMap())
      fail_at(file, defaults, "bad defaults: expected a mapping of check fields");
    const std::vector<std::string> allowed = default_fields();
    for_each_entry(file, defaults,
                   [&](const std::string& field, const YAML::Node& key_node, const YAML::Node&) {
                     if (field == "id" || field == "kind") {
                       fail_at(file, key_node,
                               "'" + field + "' cannot have a default (each check sets its own)");
                     }
                     if (!contains(allowed, field)) {
                       fail_at(file, key_node,
                               "unknown field '" + field +
                                   "' in defaults (expected one of: " + join_names(allowed) + ")");
                     }
                   });
  }

  void add_check(const std::string& file, const YAML::Node& node, const YAML::Node& defaults) {
    if (!node.IsMap()) fail_at(file, node, "bad check: expected a mapping with 'id' and 'kind'");
    CheckSpec spec;
    spec.file = file;
    spec.where = location_of(file, node);
    for_each_entry(file, node, [](const std::string&, const YAML::Node&, const YAML::Node&) {});

    const YAML::Node id = node["id"];
    const YAML::Node kind = node["kind"];
    if (!id.IsDefined()) fail_at(spec.where, "check has no 'id' (every check needs a unique id)");
    if (!id.IsScalar() || id.Scalar().empty()) {
      fail_at(file, id, "bad id: expected a non-empty string");
    }
    spec.id = id.Scalar();
    if (spec.id.find_first_of(kIdReserved) != std::string::npos) {
      fail_at(file, id,
              "bad id '" + spec.id + "': an id may not contain spaces or any of [ ] , = * ? :");
    }
    const Location id_at = location_of(file, id);
    auto [first, inserted] = ids_.emplace(spec.id, id_at);
    if (!inserted) {
      fail_at(id_at, "duplicate check id '" + spec.id + "' (first defined at " +
                         first->second.str() + ")");
    }

    if (!kind.IsDefined()) {
      fail_at(spec.where, "check '" + spec.id + "' has no 'kind' " + expected_kinds());
    }
    if (!kind.IsScalar()) fail_at(file, kind, "bad kind: expected a string " + expected_kinds());
    spec.kind = kind.Scalar();
    const KindSchema* schema = find_kind(spec.kind);
    if (!schema) fail_at(file, kind, "unknown kind '" + spec.kind + "' " + expected_kinds());

    const std::vector<std::string> fields = fields_of(*schema);
    for (const auto& entry : node) {
      const std::string field = entry.first.Scalar();
      if (!contains(fields, field)) {
        fail_at(file, entry.first,
                "unknown field '" + field + "' for kind '" + spec.kind +
                    "' (expected one of: " + join_names(fields) + ")");
      }
    }

    merge_defaults(node, defaults, fields);
    spec.node.reset(node);

    const YAML::Node& merged = node;
    if (merged["matrix"].IsDefined()) spec.matrix = matrix_of(file, merged["matrix"]);
    if (merged["tolerance"].IsDefined() && !merged["tolerance"].IsMap()) {
      fail_at(file, merged["tolerance"],
              "bad tolerance: expected a mapping, e.g. tolerance: {preset: bf16, cosine_min: "
              "0.9999}");
    }
    if (merged["tolerance"].IsDefined()) {
      for_each_entry(file, merged["tolerance"],
                     [&](const std::string& key, const YAML::Node&, const YAML::Node& value) {
                       if (key == "preset" && !value.IsScalar()) {
                         fail_at(file, value,
                                 "bad tolerance preset: expected a preset name (f32, bf16, f16, "
                                 "exact, ...), got " +
                                     std::string(value.IsNull()  ? "null"
                                                 : value.IsMap() ? "a mapping"
                                                                 : "a sequence"));
                       }
                     });
    }
    if (merged["tags"].IsDefined()) spec.tags = tags_of(file, merged["tags"]);
    if (merged["skip"].IsDefined()) spec.skip_reason = reason_of(file, "skip", merged["skip"]);
    if (merged["xfail"].IsDefined()) spec.xfail_reason = reason_of(file, "xfail", merged["xfail"]);
    suite_.checks.push_back(std::move(spec));
  }

  Suite& suite_;
  std::vector<std::pair<std::string, std::string>> stack_;  // (identity, path) being loaded
  std::set<std::string> loaded_;                            // identities read so far
  std::map<std::string, Location> ids_;                     // check id -> where its id is
};

}  // namespace

void register_kind(KindSchema schema) {
  for (auto& existing : registry()) {
    if (existing.kind == schema.kind) {
      existing = std::move(schema);
      return;
    }
  }
  registry().push_back(std::move(schema));
}

const std::vector<KindSchema>& kinds() { return registry(); }

const std::vector<std::string>& common_fields() {
  static const std::vector<std::string> kFields = {"id",   "kind", "matrix", "tolerance",
                                                   "tags", "skip", "xfail"};
  return kFields;
}

Suite suite_of_checks(const std::string& name, const std::string& origin,
                      const std::vector<YAML::Node>& checks) {
  Suite suite;
  suite.name = name;
  suite.file = origin;
  Loader loader(suite);
  std::string text;  // the checks as YAML, for the suite's fingerprint
  for (const YAML::Node& check : checks) {
    loader.add_built_check(origin, check);
    text += YAML::Dump(check) + "\n";
  }
  suite.sha256 = base::sha256_hex(text.data(), text.size());
  return suite;
}

YAML::Node yaml_of(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: {
      YAML::Node map(YAML::NodeType::Map);
      for (const auto& [key, v] : value.items()) map[key] = yaml_of(v);
      return map;
    }
    case nlohmann::json::value_t::array: {
      YAML::Node seq(YAML::NodeType::Sequence);
      for (const auto& v : value) seq.push_back(yaml_of(v));
      return seq;
    }
    case nlohmann::json::value_t::null:
      return YAML::Node(YAML::NodeType::Null);
    case nlohmann::json::value_t::string: {
      // Plain, as a file would write it, unless plain it would read as another type ("true",
      // "1.5", "null"): then quoted.
      YAML::Node scalar(value.get<std::string>());
      scalar.SetTag("?");
      bool is_text = false;
      try {
        is_text = yaml_to_json("", scalar).is_string();
      } catch (const InputError&) {  // ".nan": no JSON number either way
      }
      scalar.SetTag(is_text ? "?" : "!");
      return scalar;
    }
    default: {  // a number or a boolean, as JSON writes it (the shortest exact form)
      YAML::Node scalar(value.dump());
      scalar.SetTag("?");
      return scalar;
    }
  }
}

Suite load_suite(const std::string& path) {
  Suite suite;
  suite.file = path;
  Loader(suite).load(path, nullptr);
  return suite;
}

}  // namespace h0::suite
