// The dashboard's escaping: HTML text and attributes, JSON inside <script>, file stems.
#include "report/html_text.h"

#include <gtest/gtest.h>

namespace h0::report {
namespace {

TEST(HtmlEscape, EscapesMarkupAndQuotes) {
  EXPECT_EQ(html_escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(html_escape("\"onmouseover='x' & y"), "&quot;onmouseover=&#39;x&#39; &amp; y");
  EXPECT_EQ(html_escape("µs · ok"), "µs · ok");
}

TEST(HtmlEscape, ReplacesInvalidUtf8) {
  EXPECT_EQ(html_escape(std::string("a\xff"
                                    "b")),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(html_escape(std::string("\xED\xA0\x80")),
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");            // a surrogate
  EXPECT_EQ(html_escape(std::string("\xC3")), "\xEF\xBF\xBD");  // cut short
}

TEST(ScriptJson, NothingCanCloseTheScriptElement) {
  const nlohmann::json v = {{"id", "</script><script>alert(1)</script><!--"},
                            {"amp", "a&b"},
                            {"ls", "x\xE2\x80\xA8y\xE2\x80\xA9z"}};
  const std::string s = script_json(v);
  EXPECT_EQ(s.find('<'), std::string::npos) << s;
  EXPECT_EQ(s.find('>'), std::string::npos) << s;
  EXPECT_EQ(s.find('&'), std::string::npos) << s;
  EXPECT_EQ(s.find("\xE2\x80\xA8"), std::string::npos) << s;
  EXPECT_EQ(nlohmann::json::parse(s), v);  // the same value once parsed
}

TEST(Rounded, FourSignificantDigitsIntegersWithoutFraction) {
  EXPECT_EQ(rounded(0.000123456).dump(), "0.0001235");
  EXPECT_EQ(rounded(1234567.0).dump(), "1235000");
  EXPECT_TRUE(rounded(std::numeric_limits<double>::quiet_NaN()).is_null());
}

TEST(Utf8Sequence, LengthsCodePointsAndRejects) {
  char32_t cp = 0;
  EXPECT_EQ(utf8_sequence("a", 0, &cp), 1u);
  EXPECT_EQ(cp, U'a');
  EXPECT_EQ(utf8_sequence("\xC3\xA9", 0, &cp), 2u);
  EXPECT_EQ(cp, U'\u00E9');
  EXPECT_EQ(utf8_sequence("\xE2\x82\xAC", 0, &cp), 3u);
  EXPECT_EQ(cp, U'\u20AC');
  EXPECT_EQ(utf8_sequence("\xF0\x9F\x98\x80", 0, &cp), 4u);
  EXPECT_EQ(cp, U'\U0001F600');
  EXPECT_EQ(utf8_sequence("x\xC3\xA9", 1), 2u);
  for (const std::string bad :
       {"\x80", "\xC0\xAF", "\xC1\xBF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF0\x80\x80\xAF",
        "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF", "\xE2\x82",
        "\xC3"
        "A"}) {
    EXPECT_EQ(utf8_sequence(bad, 0), 0u) << bad.size();
  }
}

TEST(FileStem, SafeAndDistinct) {
  const std::string a = file_stem("matmul[dtype=f32,shape=1x64x32]");
  EXPECT_EQ(a.substr(0, a.size() - 9), "matmul-dtype-f32-shape-1x64x32");
  EXPECT_NE(file_stem("a/b"), file_stem("a:b"));
  for (const std::string id : {"../../etc/passwd", "<script>\"x\"", "", "...."}) {
    const std::string stem = file_stem(id);
    EXPECT_EQ(
        stem.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"),
        std::string::npos)
        << stem;
    EXPECT_NE(stem[0], '.') << stem;
  }
}

}  // namespace
}  // namespace h0::report
