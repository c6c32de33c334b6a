#include "suite/platform.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/sha256.h"
#include "suite/location.h"
#include "tensor/dtype.h"

namespace h0::suite {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::json;

const std::vector<std::string> kFields = {"platform",  "backend",   "device_memory",
                                          "peaks",     "tolerance", "case_timeout",
                                          "isolation", "fallback",  "service"};

// `text` (digits, '.', exponent; an optional leading '-') as the nearest double; nullopt if
// beyond a double's range.
std::optional<double> to_double(std::string_view text) {
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// YAML 1.2 core-schema resolution of a plain scalar.
Json plain_scalar_to_json(const std::string& file, const YAML::Node& node) {
  static const std::regex kNull("~|null|Null|NULL");
  static const std::regex kTrue("true|True|TRUE");
  static const std::regex kFalse("false|False|FALSE");
  static const std::regex kDecimal("[-+]?[0-9]+");
  static const std::regex kOctal("0o[0-7]+");
  static const std::regex kHex("0x[0-9a-fA-F]+");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  static const std::regex kNonFinite(R"([-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))");
  const std::string& s = node.Scalar();
  if (std::regex_match(s, kNull)) return nullptr;
  if (std::regex_match(s, kTrue)) return true;
  if (std::regex_match(s, kFalse)) return false;
  if (std::regex_match(s, kDecimal)) {
    const std::string_view digits = s[0] == '+' ? std::string_view(s).substr(1) : s;
    int64_t i = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), i).ec == std::errc()) {
      return i;
    }
    uint64_t u = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), u).ec == std::errc()) {
      return u;
    }
    // Beyond 64 bits: the nearest double, as JSON readers do.
    if (const auto d = to_double(digits)) return *d;
    fail_at(file, node, "number '" + s + "' is beyond the range of a double");
  }
  if (std::regex_match(s, kOctal) || std::regex_match(s, kHex)) {
    const int base = s[1] == 'o' ? 8 : 16;
    uint64_t u = 0;
    if (std::from_chars(s.data() + 2, s.data() + s.size(), u, base).ec != std::errc()) {
      fail_at(file, node, "integer '" + s + "' does not fit in 64 bits");
    }
    if (u <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(u);
    return u;
  }
  if (std::regex_match(s, kFloat)) {
    if (const auto d = to_double(s[0] == '+' ? std::string_view(s).substr(1) : s)) return *d;
    fail_at(file, node, "number '" + s + "' is beyond the range of a double");
  }
  if (std::regex_match(s, kNonFinite)) {
    fail_at(file, node, "'" + s + "' cannot be represented in JSON (expected a finite number)");
  }
  return s;
}

// A number >= 0 (plain YAML int or float), else fails with "bad <what>: expected ...".
double non_negative(const std::string& file, const YAML::Node& node, const std::string& what) {
  Json v;
  if (node.IsScalar() && node.Tag() == "?") v = plain_scalar_to_json(file, node);
  if (!v.is_number() || v.get<double>() < 0) {
    fail_at(file, node, "bad " + what + ": expected a number >= 0");
  }
  return v.get<double>();
}

struct Unit {
  const char* name;
  double scale;
};

// "<number><unit>" with `units`; nullopt-like false if the text is not of that form.
bool parse_with_unit(const std::string& text, const std::vector<Unit>& units, double* out) {
  static const std::regex kForm(
      R"(((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?) *([A-Za-z]*))");
  std::smatch m;
  if (!std::regex_match(text, m, kForm)) return false;
  const std::optional<double> number = to_double(m[1].str());
  if (!number) return false;
  for (const auto& unit : units) {
    if (m[2].str() == unit.name) {
      *out = *number * unit.scale;
      return std::isfinite(*out);
    }
  }
  return false;
}

std::string backend_shape() {
  return "expected a built-in backend's name, e.g. backend: cpu, or "
         "backend: {lib: path/to/plugin.so, options: {...}}";
}

void read_backend(const std::string& file, const YAML::Node& node, Platform& p) {
  if (node.IsScalar() && !node.Scalar().empty()) {
    p.backend = node.Scalar();
    return;
  }
  if (!node.IsMap() || !node["lib"].IsDefined())
    fail_at(file, node, "bad backend: " + backend_shape());
  for_each_entry(
      file, node, [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& value) {
        if (key == "lib") {
          if (!value.IsScalar() || value.Scalar().empty()) {
            fail_at(file, value, "bad lib: expected the path of the plugin's shared library");
          }
          const fs::path lib(value.Scalar());
          p.lib = lib.is_absolute()
                      ? lib.string()
                      : (fs::path(file).parent_path() / lib).lexically_normal().string();
        } else if (key == "options") {
          if (!value.IsMap())
            fail_at(file, value, "bad options: expected a mapping, e.g. {threads: 4}");
          p.options = yaml_to_json(file, value);
        } else {
          fail_at(file, key_node,
                  "unknown field '" + key + "' in backend (expected one of: lib, options)");
        }
      });
}

void read_peaks(const std::string& file, const YAML::Node& node, Platform& p) {
  if (!node.IsMap()) {
    fail_at(file, node,
            "bad peaks: expected a mapping, e.g. {memory_gbps: 40, tflops: {bf16: 1.2}}");
  }
  for_each_entry(
      file, node, [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& value) {
        if (key == "memory_gbps") {
          p.peak_gbps = non_negative(file, value, "memory_gbps");
        } else if (key == "tflops") {
          if (!value.IsMap()) {
            fail_at(file, value,
                    "bad tflops: expected a mapping of dtype to TFLOP/s, e.g. {bf16: 1.2}");
          }
          for_each_entry(
              file, value,
              [&](const std::string& dtype, const YAML::Node& dtype_node, const YAML::Node& rate) {
                const auto parsed = tensor::parse_dtype(dtype);
                if (!parsed) {
                  fail_at(file, dtype_node,
                          "unknown dtype '" + dtype +
                              "' (expected one of: " + tensor::dtype_names() + ")");
                }
                p.peak_tflops[tensor::dtype_name(*parsed)] = non_negative(file, rate, "tflops");
              });
        } else {
          fail_at(file, key_node,
                  "unknown field '" + key + "' in peaks (expected one of: memory_gbps, tflops)");
        }
      });
}

}  // namespace

Json yaml_to_json(const std::string& file, const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      if (node.Tag() != "?") return node.Scalar();  // quoted or tagged: a string
      return plain_scalar_to_json(file, node);
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(file, item));
      return out;
    }
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for_each_entry(file, node,
                     [&](const std::string& key, const YAML::Node&, const YAML::Node& value) {
                       out[key] = yaml_to_json(file, value);
                     });
      return out;
    }
  }
  return nullptr;
}

double parse_size(const std::string& file, const YAML::Node& node) {
  static const std::vector<Unit> kUnits = {
      {"", 1},      {"B", 1},        {"KB", 1e3},     {"MB", 1e6},     {"GB", 1e9},
      {"TB", 1e12}, {"KiB", 0x1p10}, {"MiB", 0x1p20}, {"GiB", 0x1p30}, {"TiB", 0x1p40},
  };
  double bytes = 0;
  if (!node.IsScalar() || !parse_with_unit(node.Scalar(), kUnits, &bytes)) {
    fail_at(file, node,
            "bad size '" + (node.IsScalar() ? node.Scalar() : std::string("...")) +
                "' (expected a number of bytes, or a number with a unit: B, KB, MB, GB, TB, "
                "KiB, MiB, GiB, TiB; e.g. 24GiB)");
  }
  return bytes;
}

double parse_duration_s(const std::string& file, const YAML::Node& node) {
  static const std::vector<Unit> kUnits = {{"", 1}, {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
  double seconds = 0;
  if (!node.IsScalar() || !parse_with_unit(node.Scalar(), kUnits, &seconds)) {
    fail_at(file, node,
            "bad duration '" + (node.IsScalar() ? node.Scalar() : std::string("...")) +
                "' (expected a number of seconds, or a number with a unit: ms, s, m, h; "
                "e.g. 120s)");
  }
  return seconds;
}

Json yaml_to_json(const YAML::Node& node) { return yaml_to_json("", node); }
double parse_size(const YAML::Node& node) { return parse_size("", node); }
double parse_duration_s(const YAML::Node& node) { return parse_duration_s("", node); }

Platform load_platform(const std::string& path) {
  Platform p;
  p.file = path;
  std::optional<std::string> text = read_text_file(path);
  if (!text) {
    std::error_code ec;
    throw InputError(
        path, fs::exists(path, ec) ? "cannot read the platform file" : "platform file not found");
  }
  p.content = std::move(*text);
  p.sha256 = base::sha256_hex(p.content.data(), p.content.size());

  const YAML::Node root = parse_yaml(path, p.content);
  if (!root.IsMap()) {
    fail_at(path, root, "expected a mapping with 'platform' and 'backend' at the top of the file");
  }
  for_each_entry(
      path, root,
      [&](const std::string& field, const YAML::Node& key_node, const YAML::Node& value) {
        if (field == "platform") {
          if (!value.IsScalar() || value.Scalar().empty()) {
            fail_at(path, value, "bad platform: expected the platform's name as a string");
          }
          p.name = value.Scalar();
        } else if (field == "backend") {
          read_backend(path, value, p);
        } else if (field == "device_memory") {
          p.device_memory_bytes = parse_size(path, value);
        } else if (field == "peaks") {
          read_peaks(path, value, p);
        } else if (field == "tolerance") {
          if (!value.IsMap()) {
            fail_at(path, value, "bad tolerance: expected a mapping of tolerance overrides");
          }
          p.tolerance.reset(value);
        } else if (field == "case_timeout") {
          p.case_timeout_s = parse_duration_s(path, value);
          if (p.case_timeout_s <= 0)
            fail_at(path, value, "bad case_timeout: expected a duration > 0");
        } else if (field == "isolation") {
          if (!value.IsScalar() || (value.Scalar() != "process" && value.Scalar() != "none")) {
            fail_at(path, value, "bad isolation: expected one of: process, none");
          }
          p.isolation = value.Scalar();
        } else if (field == "fallback") {
          if (!value.IsScalar() || (value.Scalar() != "none" && value.Scalar() != "decompose" &&
                                    value.Scalar() != "host")) {
            fail_at(path, value, "bad fallback: expected one of: none, decompose, host");
          }
          p.fallback = value.Scalar();
        } else if (field == "service") {
          p.service = read_service_config(path, value, &p.service_variants);
        } else {
          fail_at(path, key_node,
                  "unknown field '" + field + "' (expected one of: " + join_names(kFields) + ")");
        }
      });
  if (p.name.empty())
    fail_at(path, root, "missing required field 'platform' (the platform's name)");
  if (p.backend.empty() && p.lib.empty()) {
    fail_at(path, root, "missing required field 'backend' (" + backend_shape() + ")");
  }
  return p;
}

}  // namespace h0::suite
