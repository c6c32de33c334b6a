// The tokenizer against HF `tokenizers` on golden/tokenizer/corpus.json: every tiny model's
// tokenizer and every pipeline variant, encode and decode, id for id and byte for byte.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "base/sha256.h"
#include "test_util.h"
#include "tokenizer/byte_level.h"

namespace h0::tokenizer {
namespace {

using nlohmann::json;

const std::vector<std::string> kModels = {"tiny-llama", "tiny-qwen3-moe", "tiny-deepseek-v3",
                                          "tiny-llava"};
const std::vector<std::string> kVariants = {"variant-gpt2-bytelevel", "variant-digits-nfkc",
                                            "variant-split-behaviours"};

json load_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return json::parse(in);
}

std::string model_tokenizer(const std::string& name) {
  return test::source_path("configs/models/" + name + "/tokenizer.json");
}

// Reports at most this many mismatching corpus strings per test, each with its text.
constexpr int kMaxReported = 8;

class HfGolden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    corpus_ = load_json(test::golden_path("tokenizer/corpus.json"));
    golden_ = load_json(test::golden_path("tokenizer/" + GetParam() + ".json"));
    ASSERT_EQ(golden_["cases"].size(), corpus_.size());
    ASSERT_GE(corpus_.size(), 200u);
    tokenizer_path_ = test::source_path(golden_["tokenizer"].get<std::string>());
    tok_ = Tokenizer::from_file(tokenizer_path_);
  }
  std::string text(size_t i) const { return corpus_[i].get<std::string>(); }
  // "corpus[i] \"escaped text\"" (truncated), for failure messages.
  std::string label(size_t i) const {
    return "corpus[" + std::to_string(i) + "] " + corpus_[i].dump().substr(0, 120);
  }

  json corpus_, golden_;
  std::string tokenizer_path_;
  Tokenizer tok_;
};

TEST_P(HfGolden, GoldenWasMadeFromThisTokenizerJson) {
  EXPECT_EQ(base::sha256_file(tokenizer_path_), golden_["tokenizer_sha256"].get<std::string>())
      << tokenizer_path_
      << " changed since the golden was made: rerun golden/tools/gen_tokenizers.py";
}

TEST_P(HfGolden, EncodeMatchesHf) {
  int reported = 0;
  for (size_t i = 0; i < corpus_.size(); ++i) {
    const auto& c = golden_["cases"][i];
    const auto with = tok_.encode(text(i), true);
    const auto without = tok_.encode(text(i), false);
    const bool ok = with == c["ids"].get<std::vector<int32_t>>() &&
                    without == c["ids_no_special"].get<std::vector<int32_t>>();
    if (!ok && reported++ < kMaxReported) {
      ADD_FAILURE() << label(i) << "\n  ours " << json(with).dump() << "\n  hf   "
                    << c["ids"].dump();
    }
  }
  EXPECT_EQ(reported, 0) << "corpus strings encoded differently from HF";
}

TEST_P(HfGolden, DecodeMatchesHf) {
  int reported = 0;
  for (size_t i = 0; i < corpus_.size(); ++i) {
    const auto& c = golden_["cases"][i];
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    const std::string plain = tok_.decode(ids, false), skipped = tok_.decode(ids, true);
    const bool ok = plain == c["decode"].get<std::string>() &&
                    skipped == c["decode_skip_special"].get<std::string>();
    if (!ok && reported++ < kMaxReported) {
      ADD_FAILURE() << label(i) << "\n  ours " << json(plain).dump() << " / "
                    << json(skipped).dump() << "\n  hf   " << c["decode"].dump() << " / "
                    << c["decode_skip_special"].dump();
    }
  }
  EXPECT_EQ(reported, 0) << "corpus ids decoded differently from HF";
}

TEST_P(HfGolden, EverySingleIdDecodesAsHf) {
  ASSERT_EQ(tok_.vocab_size(), golden_["vocab_size"].get<int32_t>());
  const auto& expected = golden_["vocab_decode"];
  int reported = 0;
  for (int32_t id = 0; id < tok_.vocab_size(); ++id) {
    const std::string ours = tok_.decode(std::vector<int32_t>{id});
    if (ours != expected[id].get<std::string>() && reported++ < kMaxReported) {
      ADD_FAILURE() << "id " << id << ": ours " << json(ours).dump() << ", hf "
                    << expected[id].dump();
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}
INSTANTIATE_TEST_SUITE_P(Models, HfGolden, ::testing::ValuesIn(kModels), param_name);
INSTANTIATE_TEST_SUITE_P(Variants, HfGolden, ::testing::ValuesIn(kVariants), param_name);

// A random string of code points drawn from scripts, whitespace, emoji and combining marks.
std::string random_text(std::mt19937& rng) {
  static const std::vector<std::pair<char32_t, char32_t>> kRanges = {
      {0x20, 0x7E},       {0x09, 0x0D},       {0xA0, 0x24F},    {0x300, 0x36F},
      {0x400, 0x4FF},     {0x3040, 0x30FF},   {0x4E00, 0x9FA5}, {0xAC00, 0xD7A3},
      {0x1F300, 0x1F64F}, {0x1F3FB, 0x1F3FF}, {0x200B, 0x200D}};
  std::uniform_int_distribution<size_t> length(0, 40), range(0, kRanges.size() - 1);
  std::string out;
  for (size_t n = length(rng); n > 0; --n) {
    const auto [lo, hi] = kRanges[range(rng)];
    append_utf8(std::uniform_int_distribution<char32_t>(lo, hi)(rng), &out);
  }
  return out;
}

TEST(Tokenizer, DecodeOfEncodeGivesTheNormalizedText) {
  for (const std::string& name : kModels) {
    const Tokenizer tok = Tokenizer::from_file(model_tokenizer(name));
    const bool nfc = name == "tiny-qwen3-moe";
    std::mt19937 rng(20240607);
    for (int i = 0; i < 300; ++i) {
      const std::string s = random_text(rng);
      const std::string expected = nfc ? normalize(s, NormalForm::kNfc) : s;
      ASSERT_EQ(tok.decode(tok.encode(s, false)), expected) << name << ": " << json(s).dump();
      ASSERT_EQ(tok.decode(tok.encode(s, true), true), expected) << name << ": " << json(s).dump();
    }
  }
}

TEST(Tokenizer, SpecialTokensAndRolesOfTheTinyModels) {
  const Tokenizer llama = Tokenizer::from_file(model_tokenizer("tiny-llama"));
  EXPECT_EQ(llama.vocab_size(), 1024);
  EXPECT_EQ(llama.bos_id(), llama.token_to_id("<|begin_of_text|>"));
  EXPECT_EQ(llama.eos_id(), llama.token_to_id("<|eot_id|>"));
  EXPECT_EQ(llama.encode("hi", true).front(), *llama.bos_id());
  EXPECT_TRUE(llama.is_special(*llama.bos_id()));
  EXPECT_EQ(llama.id_to_token(*llama.eos_id()), "<|eot_id|>");

  const Tokenizer qwen = Tokenizer::from_file(model_tokenizer("tiny-qwen3-moe"));
  EXPECT_EQ(qwen.bos_id(), std::nullopt);
  EXPECT_EQ(qwen.eos_id(), qwen.token_to_id("<|im_end|>"));
  const auto think = qwen.token_to_id("<think>");
  ASSERT_TRUE(think.has_value());
  EXPECT_FALSE(qwen.is_special(*think));
  EXPECT_EQ(qwen.decode(std::vector<int32_t>{*think}, true), "<think>");  // not special: kept

  const Tokenizer deepseek = Tokenizer::from_file(model_tokenizer("tiny-deepseek-v3"));
  EXPECT_EQ(deepseek.bos_id(), 0);
  EXPECT_EQ(deepseek.eos_id(), 1);

  const Tokenizer llava = Tokenizer::from_file(test::source_path("configs/models/tiny-llava"));
  EXPECT_EQ(llava.bos_id(), llava.token_to_id("<|begin_of_text|>"));
  EXPECT_EQ(llava.vocab_size(), 1024);
  EXPECT_EQ(llava.encode("<image>", false), std::vector<int32_t>{*llava.token_to_id("<image>")});
}

TEST(Tokenizer, UnknownIdsAreDroppedAndBrokenUtf8BecomesReplacementCharacters) {
  const Tokenizer tok = Tokenizer::from_file(model_tokenizer("tiny-llama"));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{-1, 5000}), "");
  const auto ids = tok.encode("\xF0\x9F\xA6\x80", false);  // U+1F980, not in the training text
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(tok.decode(std::vector<int32_t>{ids.front()}),
            "\xEF\xBF\xBD");  // an incomplete sequence
  EXPECT_EQ(tok.decode(ids), "\xF0\x9F\xA6\x80");
}

// DecodeStream against decode() of the whole prefix after every id: random sequences of special
// tokens, single bytes that start or continue multi-byte UTF-8 sequences (random-weight output
// is full of broken UTF-8), unknown ids and any other ids, with and without skipping specials.
TEST(Tokenizer, DecodeStreamEqualsDecodeOfEveryPrefix) {
  std::vector<std::string> paths;
  for (const std::string& m : kModels) paths.push_back(model_tokenizer(m));
  for (const std::string& v : kVariants) {
    const json golden = load_json(test::golden_path("tokenizer/" + v + ".json"));
    paths.push_back(test::source_path(golden["tokenizer"].get<std::string>()));
  }
  std::mt19937 rng(1234);
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const Tokenizer tok = Tokenizer::from_file(path);
    const int32_t vocab = tok.vocab_size();
    std::vector<int32_t> special, high_bytes;
    for (int32_t id = 0; id < vocab; ++id) {
      if (tok.is_special(id)) special.push_back(id);
      const std::optional<std::string> token = tok.id_to_token(id);
      std::string raw;
      if (token && byte_level_decode(*token, &raw) && !raw.empty() &&
          (static_cast<unsigned char>(raw[0]) & 0x80) != 0)
        high_bytes.push_back(id);  // starts with a non-ASCII byte
    }
    ASSERT_FALSE(special.empty());
    ASSERT_FALSE(high_bytes.empty());
    auto pick = [&](const std::vector<int32_t>& v) {
      return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    int mismatches = 0;
    for (int seq = 0; seq < 300 && mismatches < kMaxReported; ++seq) {
      const bool skip = seq % 2 == 0;
      const int length = std::uniform_int_distribution<int>(1, 80)(rng);
      std::vector<int32_t> ids;
      std::string text;
      DecodeStream stream(tok, skip);
      for (int i = 0; i < length && mismatches < kMaxReported; ++i) {
        const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
        int32_t id = kind < 5   ? pick(high_bytes)
                     : kind < 7 ? pick(special)
                     : kind < 8 ? std::uniform_int_distribution<int32_t>(-3, vocab + 3)(rng)
                                : std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
        ids.push_back(id);
        stream.push(id, &text);
        const std::string want = tok.decode(ids, skip);
        if (text != want) {
          ++mismatches;
          ADD_FAILURE() << "sequence " << seq << " step " << i << " skip " << skip << ": "
                        << json(text).dump(-1, ' ', true, json::error_handler_t::replace)
                        << " != " << json(want).dump(-1, ' ', true, json::error_handler_t::replace);
        }
      }
    }
  }
}

}  // namespace
}  // namespace h0::tokenizer
