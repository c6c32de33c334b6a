// Malformed or unsupported tokenizer.json files are InputErrors that name the file and the
// JSON path of the problem.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace h0::tokenizer {
namespace {

using nlohmann::json;

// A minimal valid byte-level BPE tokenizer.json: vocab {a, b, ab}, one merge.
json minimal() {
  return json::parse(R"({
    "added_tokens": [{"id": 3, "content": "<s>", "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
    "post_processor": null,
    "decoder": {"type": "ByteLevel"}
  })");
}

// The message of the InputError that loading `doc` throws ("" if none).
std::string load_error(const json& doc) {
  try {
    Tokenizer::from_json(doc.dump(), "tokenizer.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TokenizerErrors, MinimalTokenizerLoadsAndEncodes) {
  const Tokenizer tok = Tokenizer::from_json(minimal().dump());
  EXPECT_EQ(tok.encode("ab<s>ba", false), (std::vector<int32_t>{2, 3, 1, 0}));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{2, 3, 1, 0}, true), "abba");
}

TEST(TokenizerErrors, MissingModel) {
  json doc = minimal();
  doc.erase("model");
  EXPECT_EQ(load_error(doc), "tokenizer.json: model: missing");
}

TEST(TokenizerErrors, UnknownComponentTypesNameTheirPath) {
  json doc = minimal();
  doc["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "ByteLevel"}, {"type": "Metaspace", "replacement": "_"}]})");
  EXPECT_EQ(load_error(doc),
            "tokenizer.json: pre_tokenizer.pretokenizers[1].type: unsupported 'Metaspace'");

  doc = minimal();
  doc["normalizer"] = json::parse(R"({"type": "Lowercase"})");
  EXPECT_EQ(load_error(doc), "tokenizer.json: normalizer.type: unsupported 'Lowercase'");

  doc = minimal();
  doc["model"]["type"] = "WordPiece";
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.type: unsupported 'WordPiece'");

  doc = minimal();
  doc["post_processor"] = json::parse(R"({"type": "RobertaProcessing"})");
  EXPECT_EQ(load_error(doc),
            "tokenizer.json: post_processor.type: unsupported 'RobertaProcessing'");

  doc = minimal();
  doc["decoder"] = json::parse(R"({"type": "Metaspace"})");
  EXPECT_EQ(load_error(doc), "tokenizer.json: decoder.type: unsupported 'Metaspace'");

  doc = minimal();
  doc["pre_tokenizer"] =
      json::parse(R"({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"})");
  EXPECT_EQ(load_error(doc), "tokenizer.json: pre_tokenizer.behavior: unsupported 'Sideways'");
}

TEST(TokenizerErrors, BadMerges) {
  json doc = minimal();
  doc["model"]["merges"] = json::parse(R"(["a b", "a b c"])");
  EXPECT_EQ(load_error(doc),
            R"(tokenizer.json: model.merges[1]: expected "a b" or ["a", "b"], got "a b c")");

  doc["model"]["merges"] = json::parse(R"([["a", "x"]])");
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.merges[0]: 'x' is not in the vocab");

  doc["model"]["merges"] = json::parse(R"([["b", "a"]])");
  EXPECT_EQ(load_error(doc),
            "tokenizer.json: model.merges[0]: the merged token 'ba' is not in the vocab");

  doc["model"]["merges"] = 7;
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.merges: expected an array, got number");
}

TEST(TokenizerErrors, BadVocabRegexAndAddedTokens) {
  json doc = minimal();
  doc["model"]["vocab"]["c"] = -4;
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.vocab: 'c': expected a non-negative id");

  doc = minimal();
  doc["pre_tokenizer"] =
      json::parse(R"({"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated"})");
  EXPECT_EQ(load_error(doc).rfind(
                "tokenizer.json: pre_tokenizer.pattern.Regex: bad regex at offset 2: ", 0),
            0u)
      << load_error(doc);

  doc = minimal();
  doc["added_tokens"][0].erase("content");
  EXPECT_EQ(load_error(doc), "tokenizer.json: added_tokens[0].content: missing");

  doc = minimal();
  doc["model"]["byte_fallback"] = true;
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.byte_fallback: unsupported: true");
}

TEST(TokenizerErrors, NotJsonMissingFileAndInvalidUtf8Text) {
  try {
    Tokenizer::from_json("{\"model\": ", "x/tokenizer.json");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("x/tokenizer.json: not JSON: ", 0), 0u) << e.what();
  }
  EXPECT_THROW(Tokenizer::from_file(test::source_path("no/such/tokenizer.json")), InputError);
  const Tokenizer tok = Tokenizer::from_json(minimal().dump());
  try {
    tok.encode("ab\xC3(", false);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "text to encode is not valid UTF-8 (byte 2)");
  }
}

}  // namespace
}  // namespace h0::tokenizer
