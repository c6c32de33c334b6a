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
  EXPECT_EQ(html_escape(std::string("a\xff" "b")), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(html_escape(std::string("\xED\xA0\x80")), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(html_escape(std::string("\xC3")), "\xEF\xBF\xBD");                                 // cut short
}

TEST(ScriptJson, NothingCanCloseTheScriptElement) {
  const nlohmann::json v = {{"id", "</script><script>alert(1)</script><!--"}, {"amp", "a&b"},
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

TEST(FileStem, SafeAndDistinct) {
  const std::string a = file_stem("matmul[dtype=f32,shape=1x64x32]");
  EXPECT_EQ(a.substr(0, a.size() - 9), "matmul-dtype-f32-shape-1x64x32");
  EXPECT_NE(file_stem("a/b"), file_stem("a:b"));
  for (const std::string id : {"../../etc/passwd", "<script>\"x\"", "", "...."}) {
    const std::string stem = file_stem(id);
    EXPECT_EQ(stem.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"),
              std::string::npos) << stem;
    EXPECT_NE(stem[0], '.') << stem;
  }
}

}  // namespace
}  // namespace h0::report
