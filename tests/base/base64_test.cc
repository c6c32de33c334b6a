#include "base/base64.h"

#include <gtest/gtest.h>

#include <string>

namespace h0::base {
namespace {

// RFC 4648 section 10.
TEST(Base64, KnownAnswers) {
  const std::pair<const char*, const char*> cases[] = {{"", ""},
                                                       {"f", "Zg=="},
                                                       {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},
                                                       {"foob", "Zm9vYg=="},
                                                       {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : cases) {
    EXPECT_EQ(base64_encode(plain), coded);
    EXPECT_EQ(base64_decode(coded), std::string(plain));
  }
}

TEST(Base64, RoundTripsEveryByteAndRejectsGarbage) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n < all.size(); n += 37)
    EXPECT_EQ(base64_decode(base64_encode(all.substr(0, n))), all.substr(0, n));
  EXPECT_EQ(base64_decode("Zm9v\nYmFy"), "foobar");  // line breaks skipped
  EXPECT_EQ(base64_decode("Zm9vYmFy"), base64_decode("Zm9vYmFy=="));
  EXPECT_EQ(base64_decode("-_8="), base64_decode("+/8="));  // the URL-safe alphabet
  EXPECT_FALSE(base64_decode("Zm9*"));
  EXPECT_FALSE(base64_decode("Zg==Zg"));  // data after padding
  EXPECT_FALSE(base64_decode("Z"));       // a lone character holds no byte
}

}  // namespace
}  // namespace h0::base
