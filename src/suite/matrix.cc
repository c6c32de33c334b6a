#include "suite/matrix.h"

#include <map>

#include "suite/location.h"

namespace h0::suite {

std::string format_value(const YAML::Node& value) {
  std::string out;
  switch (value.Type()) {
    case YAML::NodeType::Scalar:
      return value.Scalar();
    case YAML::NodeType::Sequence: {
      bool nested = false;
      for (const auto& item : value) nested = nested || item.IsSequence() || item.IsMap();
      for (const auto& item : value) {
        if (!out.empty()) out += nested ? "_" : "x";
        out += format_value(item);
      }
      return out;
    }
    case YAML::NodeType::Map:
      for (const auto& entry : value) {
        if (!out.empty()) out += ";";
        out += format_value(entry.first) + "=" + format_value(entry.second);
      }
      return out;
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Undefined:
      break;
  }
  return out;
}

std::vector<Case> expand(const Suite& suite) {
  std::vector<Case> cases;
  std::map<std::string, Location> ids;  // case id -> where it came from
  for (const CheckSpec& check : suite.checks) {
    // Formatted values per parameter, each unique within its parameter.
    std::vector<std::vector<std::string>> text(check.matrix.size());
    size_t count = 1;
    for (size_t p = 0; p < check.matrix.size(); ++p) {
      const auto& [param, values] = check.matrix[p];
      std::map<std::string, const YAML::Node*> seen;
      for (const YAML::Node& v : values) {
        std::string s = format_value(v);
        auto [first, inserted] = seen.emplace(s, &v);
        if (!inserted) {
          fail_at(check.file, v,
                  "matrix value '" + s + "' of parameter '" + param +
                      "' gives the same case id as the value at " +
                      location_of(check.file, *first->second).str() + " (case ids must be unique)");
        }
        text[p].push_back(std::move(s));
      }
      count *= values.size();
    }

    for (size_t n = 0; n < count; ++n) {
      Case c;
      c.check = &check;
      c.id = check.id;
      // Mixed-radix digits of n, the last parameter varying fastest.
      std::vector<size_t> index(check.matrix.size());
      size_t rest = n;
      for (size_t p = check.matrix.size(); p-- > 0;) {
        index[p] = rest % check.matrix[p].second.size();
        rest /= check.matrix[p].second.size();
      }
      for (size_t p = 0; p < check.matrix.size(); ++p) {
        c.id += (p == 0 ? "[" : ",") + check.matrix[p].first + "=" + text[p][index[p]];
        c.params.emplace_back(check.matrix[p].first, check.matrix[p].second[index[p]]);
      }
      if (!check.matrix.empty()) c.id += "]";
      auto [first, inserted] = ids.emplace(c.id, check.where);
      if (!inserted) {
        fail_at(check.where, "case id '" + c.id + "' is also a case of the check at " +
                                 first->second.str() + " (case ids must be unique)");
      }
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

}  // namespace h0::suite
