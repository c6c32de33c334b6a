#include "tokenizer/json_at.h"

#include "base/error.h"

namespace h0::tokenizer {

JsonAt JsonAt::at(const std::string& key) const {
  expect(value_->is_object(), "an object");
  const std::string path = path_.empty() ? key : path_ + "." + key;
  auto it = value_->find(key);
  if (it == value_->end()) throw InputError(file_, path + ": missing");
  return child(*it, path);
}

std::optional<JsonAt> JsonAt::find(const std::string& key) const {
  expect(value_->is_object(), "an object");
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return child(*it, path_.empty() ? key : path_ + "." + key);
}

JsonAt JsonAt::at(size_t i) const {
  expect(value_->is_array(), "an array");
  return child(value_->at(i), path_ + "[" + std::to_string(i) + "]");
}

size_t JsonAt::size() const {
  expect(value_->is_array(), "an array");
  return value_->size();
}

std::string JsonAt::str() const {
  expect(value_->is_string(), "a string");
  return value_->get<std::string>();
}

bool JsonAt::boolean() const {
  expect(value_->is_boolean(), "true or false");
  return value_->get<bool>();
}

int64_t JsonAt::integer() const {
  expect(value_->is_number_integer(), "an integer");
  return value_->get<int64_t>();
}

bool JsonAt::flag(const std::string& key, bool fallback) const {
  const auto member = find(key);
  return member ? member->boolean() : fallback;
}

void JsonAt::fail(const std::string& what) const {
  throw InputError(file_, (path_.empty() ? std::string("(root)") : path_) + ": " + what);
}

void JsonAt::unsupported_type() const { at("type").fail("unsupported '" + at("type").str() + "'"); }

void JsonAt::expect(bool ok, const char* what) const {
  if (!ok) fail(std::string("expected ") + what + ", got " + value_->type_name());
}

}  // namespace h0::tokenizer
