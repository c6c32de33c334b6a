// JUnit XML: validated with xmllint against the Jenkins xunit plugin's schema
// (tests/data/junit/junit-10.xsd), and matched as text.
#include "report/junit_writer.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "report/terminal.h"
#include "test_util.h"

namespace h0::report {
namespace {

store::ResultData result(const std::string& check, const std::string& case_id,
                         const std::string& status, const std::string& message = "") {
  store::ResultData r;
  r.check_id = check;
  r.case_id = case_id;
  r.kind = "op";
  r.status = status;
  r.message = message;
  r.duration_s = 0.0125;
  return r;
}

store::RunData every_status_run() {
  store::RunData run;
  run.id = 7;
  run.uuid = "0b5e0c1e-1d4f-4c1a-9d7e-3f1b2a4c5d6e";
  run.suite = "ops";
  run.platform = "cpu";
  run.host = "node-1";
  run.started_at = "2024-05-01T12:00:00Z";
  run.finished_at = "2024-05-01T12:00:13Z";
  run.status = "fail";
  run.stack.fingerprint = "ab12cd";
  run.stack.backend = "cpu";
  run.stack.versions_json =
      R"({"backend":{"device":"host","op_library":"OpenBLAS 0.3.21"},"harness":{"version":"0.1.0"},)"
      R"("labels":{"ci":"nightly"}})";
  run.labels = {{"ci", "nightly"}};
  run.results.push_back(result("rmsnorm", "rmsnorm[dtype=f32,shape=7x4096]", "pass"));
  store::ResultData fail =
      result("rope", "rope[dtype=bf16]", "fail", "max_abs_err 0.5 > atol 1e-05");
  fail.metrics = {{"max_abs_err", 0.5}, {"cosine", 0.99912}};
  fail.details_json =
      R"({"outputs":[{"name":"y","atol":1e-05,"failures":["max_abs_err 0.5 > atol 1e-05"]}]})";
  run.results.push_back(fail);
  run.results.push_back(result("softmax", "softmax[dtype=f32]", "error", "golden file missing"));
  run.results.push_back(result("matmul", "matmul[dtype=f16]", "skip", "unsupported dtype f16"));
  run.results.push_back(
      result("attention", "attention[causal=1]", "crash", "worker died: SIGSEGV"));
  run.results.push_back(result("moe_experts", "moe_experts[E=8]", "timeout", "no result in 30 s"));
  run.results.push_back(
      result("sample", "sample[top_k=5]", "xfail", "expected failure (issue 12): x"));
  run.results.push_back(result("argmax", "argmax[dtype=f32]", "xpass"));
  return run;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// xmllint's verdict on `xml` against the Jenkins schema: "" if valid, else its output.
std::string schema_errors(const std::string& xml) {
  if (std::system("command -v xmllint >/dev/null 2>&1") != 0) {
    return "xmllint not found: install libxml2-utils (harness/setup does)";
  }
  test::TempDir dir;
  const std::string file = dir.file("report.xml");
  std::ofstream(file, std::ios::binary) << xml;
  const std::string cmd = "xmllint --noout --schema '" +
                          test::source_path("tests/data/junit/junit-10.xsd") + "' '" + file +
                          "' 2>&1";
  std::FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "cannot run " + cmd;
  std::string output;
  std::array<char, 4096> buf;
  while (size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) output.append(buf.data(), n);
  return ::pclose(pipe) == 0 ? "" : output + "\n--- document ---\n" + xml;
}

TEST(JunitWriterTest, EveryStatusValidatesAgainstTheJenkinsSchema) {
  const std::string xml = junit_xml(every_status_run());
  EXPECT_EQ(schema_errors(xml), "");
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"ops\"", 0),
            0u)
      << xml;
  EXPECT_NE(
      xml.find("<testsuite name=\"ops\" tests=\"8\" failures=\"1\" errors=\"3\" skipped=\"2\" "
               "time=\"0.100\" timestamp=\"2024-05-01T12:00:00Z\" hostname=\"node-1\">"),
      std::string::npos)
      << xml;
}

TEST(JunitWriterTest, EachStatusMapsToItsElement) {
  const std::string xml = junit_xml(every_status_run());
  EXPECT_NE(xml.find("<testcase classname=\"rmsnorm\" name=\"rmsnorm[dtype=f32,shape=7x4096]\" "
                     "time=\"0.013\"/>"),
            std::string::npos)
      << xml;
  EXPECT_TRUE(std::regex_search(
      xml,
      std::regex(R"(<failure type="fail" message="max_abs_err 0.5 &gt; atol 1e-05">max_abs_err)"
                 R"( 0.5 &gt; atol 1e-05\nmetrics:\n  max_abs_err = 0.5\n  cosine = 0.99912\n)"
                 R"(details:\n\{\n  &quot;outputs&quot;: \[)")))
      << xml;
  // xpass is not failing (base/status.h): a passed testcase whose output says so.
  EXPECT_NE(xml.find("<system-out>xpass: passed unexpectedly</system-out>"), std::string::npos)
      << xml;
  EXPECT_EQ(xml.find("type=\"xpass\""), std::string::npos);
  EXPECT_NE(xml.find("<error type=\"error\" message=\"golden file missing\">"), std::string::npos);
  EXPECT_NE(xml.find("<error type=\"crash\" message=\"worker died: SIGSEGV\">"), std::string::npos);
  EXPECT_NE(xml.find("<error type=\"timeout\" message=\"no result in 30 s\">"), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"unsupported dtype f16\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"expected failure (issue 12): x\"/>"), std::string::npos);
}

TEST(JunitWriterTest, PropertiesCarryTheStackAndLabels) {
  const std::string xml = junit_xml(every_status_run());
  for (const char* property :
       {R"(<property name="fingerprint" value="ab12cd"/>)",
        R"(<property name="backend" value="cpu"/>)",
        R"(<property name="stack.backend.op_library" value="OpenBLAS 0.3.21"/>)",
        R"(<property name="stack.harness.version" value="0.1.0"/>)",
        R"(<property name="stack.labels.ci" value="nightly"/>)",
        R"(<property name="label.ci" value="nightly"/>)",
        R"(<property name="run.uuid" value="0b5e0c1e-1d4f-4c1a-9d7e-3f1b2a4c5d6e"/>)"}) {
    EXPECT_NE(xml.find(property), std::string::npos) << property << "\n" << xml;
  }
}

TEST(JunitWriterTest, HostileStringsAreEscapedAndStillValid) {
  store::RunData run = every_status_run();
  run.suite = "ops & <more>";
  run.labels["owner"] = "\"O'Brien\" <ob@example.com>";
  store::ResultData r =
      result("chk&\"'", "<script>alert(\"x\")</script>", "fail",
             "a & b < c > d \"q\" 'a' \x01\x1b[31mred\x7f\r\nline2\ttab \xff\xfe end "
             "\xc2\xb5 \xf0\x9f\x98\x80 \xed\xa0\x80 \xef\xbf\xbf");
  r.metrics = {{"max_abs_err</failure><script>", 1.5}};
  r.details_json = R"({"why":"<script>alert('x')</script> & \u0001"})";
  run.results.push_back(r);
  run.results.push_back(result("c", "crash]]>", "crash", "]]> <!-- -->"));
  const std::string xml = junit_xml(run);
  EXPECT_EQ(schema_errors(xml), "");

  EXPECT_EQ(xml.find("<script>"), std::string::npos) << xml;
  EXPECT_EQ(xml.find("]]>"), std::string::npos) << xml;
  EXPECT_NE(
      xml.find(
          R"(classname="chk&amp;&quot;&apos;" name="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;")"),
      std::string::npos)
      << xml;
  // In the attribute, \r \n \t are character references; controls become visible text.
  EXPECT_NE(
      xml.find("message=\"a &amp; b &lt; c &gt; d &quot;q&quot; &apos;a&apos; \\x01\\x1b[31mred"
               "\\x7f&#13;&#10;line2&#9;tab \xef\xbf\xbd\xef\xbf\xbd end \xc2\xb5 "
               "\xf0\x9f\x98\x80 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\""),
      std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<property name=\"label.owner\" value=\"&quot;O&apos;Brien&quot; "
                     "&lt;ob@example.com&gt;\"/>"),
            std::string::npos);
  for (char c : xml) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || c == '\n' || c == '\t') << "raw control byte " << int{u};
  }
}

TEST(JunitWriterTest, EmptyRunIsValid) {
  store::RunData run;
  run.suite = "empty";
  const std::string xml = junit_xml(run);
  EXPECT_EQ(schema_errors(xml), "");
  EXPECT_NE(xml.find("tests=\"0\" failures=\"0\" errors=\"0\" skipped=\"0\" time=\"0.000\" "
                     "timestamp=\"\" hostname=\"localhost\">"),
            std::string::npos)
      << xml;
}

TEST(JunitWriterTest, XmlEscapeTextAndAttribute) {
  EXPECT_EQ(xml_escape("a<b>&\"'\t\n\r\x02z", false), "a&lt;b&gt;&amp;&quot;&apos;\t\n&#13;\\x02z");
  EXPECT_EQ(xml_escape("a<b>&\"'\t\n\r\x02z", true),
            "a&lt;b&gt;&amp;&quot;&apos;&#9;&#10;&#13;\\x02z");
  EXPECT_EQ(xml_escape("\xc3(\xe2\x82", false), "\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(xml_escape("\xc0\xaf", false), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong '/'
  EXPECT_EQ(xml_escape("caf\xc3\xa9", true), "caf\xc3\xa9");
}

TEST(JunitWriterTest, WriteJunitReplacesTheFile) {
  test::TempDir dir;
  const std::string path = dir.file("reports/ci/junit.xml");
  write_junit(path, every_status_run());
  store::RunData run;
  run.suite = "second";
  write_junit(path, run);
  EXPECT_EQ(read_file(path), junit_xml(run));
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("reports/ci")))
    ++entries, (void)e;
  EXPECT_EQ(entries, 1) << "a temporary file was left behind";
}

TEST(JunitWriterTest, UnwritablePathIsAnInputError) {
  test::TempDir dir;
  std::ofstream(dir.file("plain")) << "x";
  try {
    write_junit(dir.file("plain/junit.xml"), every_status_run());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), dir.file("plain/junit.xml"));
    EXPECT_NE(e.message().find("cannot write"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace h0::report

namespace h0::report {
namespace {

// JUnit and the terminal read one rule for xpass (base/status.h): a run whose only surprise is
// an unexpected pass passes in both, and both name it.
TEST(JunitWriterTest, JunitAndTheTerminalAgreeOnXpass) {
  store::RunData run = every_status_run();
  std::erase_if(run.results, [](const store::ResultData& r) {
    return r.status != "pass" && r.status != "xpass";
  });
  ASSERT_EQ(run.results.size(), 2u);
  run.status = "pass";
  const std::string xml = junit_xml(run);
  EXPECT_NE(xml.find("failures=\"0\" errors=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("xpass: passed unexpectedly"), std::string::npos);
  const std::string line = summary_line(run, false);
  EXPECT_NE(line.find("1 xpass"), std::string::npos) << line;
  EXPECT_NE(line.find("PASS"), std::string::npos) << line;
  EXPECT_EQ(line.find("FAIL"), std::string::npos) << line;
}

}  // namespace
}  // namespace h0::report
