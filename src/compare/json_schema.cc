#include "compare/json_schema.h"

// valijson reports a schema it cannot read by throwing only when asked to; else it aborts.
#define VALIJSON_USE_EXCEPTIONS 1
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "base/error.h"

namespace h0::compare {

struct JsonSchema::Impl {
  valijson::Schema schema;
};

JsonSchema::JsonSchema(const nlohmann::json& schema, const std::string& where)
    : impl_(std::make_unique<Impl>()) {
  using valijson::SchemaParser;
  SchemaParser::Version version = SchemaParser::kDraft7;
  draft_ = "draft 7";
  const std::string named =
      schema.is_object() && schema.contains("$schema") && schema["$schema"].is_string()
          ? schema["$schema"].get<std::string>()
          : "";
  if (named.find("draft-04") != std::string::npos) {
    version = SchemaParser::kDraft4;
    draft_ = "draft 4";
  } else if (named.find("draft-03") != std::string::npos) {
    version = SchemaParser::kDraft3;
    draft_ = "draft 3";
  } else if (!named.empty() && named.find("draft-07") == std::string::npos &&
             named.find("draft-06") == std::string::npos) {
    note_ = "$schema " + named + " read as draft 7 (the validator's newest)";
  }
  try {
    SchemaParser parser(version);
    valijson::adapters::NlohmannJsonAdapter adapter(schema);
    parser.populateSchema(adapter, impl_->schema);
  } catch (const std::exception& e) {
    throw InputError(where, std::string("not a schema the validator can read: ") + e.what());
  }
}

JsonSchema::~JsonSchema() = default;
JsonSchema::JsonSchema(JsonSchema&&) noexcept = default;
JsonSchema& JsonSchema::operator=(JsonSchema&&) noexcept = default;

std::string JsonSchema::why_invalid(const nlohmann::json& value) const {
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(value);
  if (validator.validate(impl_->schema, adapter, &results)) return "";
  std::string out;
  valijson::ValidationResults::Error error;
  for (int shown = 0; shown < 3 && results.popError(error); ++shown) {
    std::string path;
    for (const std::string& part : error.context) path += part == "<root>" ? "" : part;
    out += (out.empty() ? "" : "; ") + (path.empty() ? std::string("/") : path) + ": " +
           error.description;
  }
  return out.empty() ? "does not validate" : out;
}

}  // namespace h0::compare
