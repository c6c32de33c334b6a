// JSON Schema validation for what an engine returns under guided decoding (a response_format's
// json_schema, a tool's parameters): valijson (Debian libvalijson-dev, header-only) over
// nlohmann::json, drafts 4, 6 and 7 (valijson 1.0 has no 2019-09 / 2020-12; a schema that names
// one is read as draft 7, and that is said). Checked against the official JSON Schema Test
// Suite's required cases (Debian json-schema-test-suite; tests/compare/json_schema_test.cc).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace h0::compare {

class JsonSchema {
 public:
  // Parses `schema`. Throws InputError (`where` names it) for a schema valijson cannot read,
  // e.g. a $ref to a remote document.
  explicit JsonSchema(const nlohmann::json& schema, const std::string& where = "schema");
  ~JsonSchema();
  JsonSchema(JsonSchema&&) noexcept;
  JsonSchema& operator=(JsonSchema&&) noexcept;

  // Why `value` does not validate (the first few failures, each with its JSON pointer-like
  // path), "" when it does.
  std::string why_invalid(const nlohmann::json& value) const;
  bool valid(const nlohmann::json& value) const { return why_invalid(value).empty(); }
  // The draft the schema was read as, and a note when its $schema named another.
  const std::string& draft() const { return draft_; }
  const std::string& note() const { return note_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string draft_, note_;
};

}  // namespace h0::compare
