// Every malformed suite the loader rejects, each with its exact message and position.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"
#include "suite/suite.h"
#include "suite/suite_test_util.h"
#include "test_util.h"

namespace h0::suite {
namespace {

class SuiteErrors : public SuiteFixture {
 protected:
  // The message loading `name` fails with ("" if it loads).
  std::string error_of(const std::string& name) {
    try {
      load_suite(dir_.file(name));
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  // The message loading a single file with `text` fails with, with the file's path cut to
  // "s.yaml".
  std::string error_in(const std::string& text) {
    write("s.yaml", text);
    return relative(error_of("s.yaml"));
  }
};

constexpr const char* kOpFields =
    "id, kind, matrix, tolerance, tags, skip, xfail, op, attrs, inputs, golden, reference";

TEST_F(SuiteErrors, AValidSuiteLoads) {
  EXPECT_EQ(error_in("suite: s\nchecks: [{id: a, kind: op}]\n"), "");
}

TEST_F(SuiteErrors, MissingFile) {
  EXPECT_EQ(error_of("none.yaml"), dir_.file("none.yaml") + ": suite file not found");
}

TEST_F(SuiteErrors, YamlSyntax) {
  EXPECT_EQ(error_in("suite: s\nchecks: [{id: a, kind: op}\n"),
            "s.yaml:3:1: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op: x\n"),
            "s.yaml:4:13: YAML syntax error: illegal map value");
}

// shared/reproducers: 10 levels of 10 aliases in a matrix axis (846 bytes, 10^10 nodes) took 35 s
// and 1.6 GB, then bad_alloc; now the loader stops counting at a million nodes.
TEST_F(SuiteErrors, AnAliasBombIsRefusedAtItsNode) {
  std::string text = "suite: s\nl0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string n = std::to_string(i), prev = "*a" + std::to_string(i - 1);
    text.append("l").append(n).append(": &a").append(n).append(" [").append(prev);
    for (int j = 1; j < 10; ++j) text.append(", ").append(prev);
    text.append("]\n");
  }
  text += "checks: [{id: a, kind: op, matrix: {dtype: *a9}}]\n";
  const std::string e = error_in(text);
  EXPECT_NE(e.find("the document expands to more than 1000000 nodes"), std::string::npos) << e;
  EXPECT_EQ(e.rfind("s.yaml:", 0), 0u) << e;
}

// Invalid UTF-8 in any value (a case id, a matrix value) used to reach the JSON writer and end
// as an internal error (type_error 316); now it is named where it is.
TEST_F(SuiteErrors, InvalidUtf8IsRefusedWhereItIs) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: \"ab\xff\"\n    kind: op\n"),
            "s.yaml:3:9: invalid UTF-8 (byte 0xFF at offset 2 of the value)");
  EXPECT_EQ(
      error_in("suite: s\nchecks: [{id: a, kind: op, matrix: {dtype: [f32, \"\xc0\xaf\"]}}]\n"),
      "s.yaml:2:50: invalid UTF-8 (byte 0xC0 at offset 0 of the value)");  // an overlong '/'
  EXPECT_EQ(error_in("suite: s\nchecks: [{id: \"\xed\xa0\x80\", kind: op}]\n"),
            "s.yaml:2:15: invalid UTF-8 (byte 0xED at offset 0 of the value)");  // a surrogate
  EXPECT_EQ(error_in("suite: s\nchecks: [{id: \"caf\xc3\xa9\xe4\xb8\xad\", kind: op}]\n"),
            "");  // valid
}

// `preset: null` or a mapping passed `list` and ended `run` in a JSON type error (exit 3).
TEST_F(SuiteErrors, ATolerancePresetMustBeAName) {
  EXPECT_EQ(error_in("suite: s\nchecks: [{id: a, kind: op, tolerance: {preset: null}}]\n"),
            "s.yaml:2:48: bad tolerance preset: expected a preset name (f32, bf16, f16, exact, "
            "...), got null");
  EXPECT_EQ(error_in("suite: s\nchecks: [{id: a, kind: op, tolerance: {preset: {a: 1}}}]\n"),
            "s.yaml:2:48: bad tolerance preset: expected a preset name (f32, bf16, f16, exact, "
            "...), got a mapping");
}

TEST_F(SuiteErrors, EmptyFile) {
  EXPECT_EQ(error_in("# nothing\n"), "s.yaml: empty suite file (expected 'suite' and 'checks')");
}

TEST_F(SuiteErrors, TopIsNotAMapping) {
  EXPECT_EQ(error_in("- a\n- b\n"),
            "s.yaml:1:1: expected a mapping with 'suite' and 'checks' at the top of the file");
}

TEST_F(SuiteErrors, MissingSuite) {
  EXPECT_EQ(error_in("description: x\nchecks: [{id: a, kind: op}]\n"),
            "s.yaml:1:1: missing required field 'suite' (the suite's name)");
}

TEST_F(SuiteErrors, BadSuiteName) {
  EXPECT_EQ(error_in("suite: [a]\nchecks: [{id: a, kind: op}]\n"),
            "s.yaml:1:8: bad suite: expected the suite's name as a string");
}

TEST_F(SuiteErrors, UnknownTopLevelField) {
  EXPECT_EQ(error_in("suite: s\nchecks: [{id: a, kind: op}]\nchekcs: []\n"),
            "s.yaml:3:1: unknown top-level field 'chekcs' (expected one of: suite, description, "
            "include, defaults, checks)");
}

TEST_F(SuiteErrors, DuplicateTopLevelField) {
  EXPECT_EQ(error_in("suite: s\nchecks: [{id: a, kind: op}]\nsuite: t\n"),
            "s.yaml:3:1: duplicate key 'suite' (first at s.yaml:1:1)");
}

TEST_F(SuiteErrors, NoChecks) {
  EXPECT_EQ(error_in("suite: s\n"),
            "s.yaml:1:1: suite has no checks (expected a non-empty 'checks' sequence, or an "
            "'include')");
  EXPECT_EQ(error_in("suite: s\nchecks: []\n"),
            "s.yaml:2:9: suite has no checks (expected a non-empty 'checks' sequence, or an "
            "'include')");
}

TEST_F(SuiteErrors, ChecksNotASequence) {
  EXPECT_EQ(error_in("suite: s\nchecks: {id: a, kind: op}\n"),
            "s.yaml:2:9: bad checks: expected a sequence of checks");
}

TEST_F(SuiteErrors, CheckNotAMapping) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - rmsnorm\n"),
            "s.yaml:3:5: bad check: expected a mapping with 'id' and 'kind'");
}

TEST_F(SuiteErrors, CheckWithoutId) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - kind: op\n    op: rmsnorm\n"),
            "s.yaml:3:5: check has no 'id' (every check needs a unique id)");
}

TEST_F(SuiteErrors, BadId) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: [a]\n    kind: op\n"),
            "s.yaml:3:9: bad id: expected a non-empty string");
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a[0]\n    kind: op\n"),
            "s.yaml:3:9: bad id 'a[0]': an id may not contain spaces or any of [ ] , = * ? :");
}

TEST_F(SuiteErrors, DuplicateIdInOneFile) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n  - id: a\n    kind: layer\n"),
            "s.yaml:5:9: duplicate check id 'a' (first defined at s.yaml:3:9)");
}

TEST_F(SuiteErrors, DuplicateIdAcrossAnInclude) {
  write("inc.yaml", "suite: inc\nchecks:\n  - {id: rmsnorm, kind: op}\n");
  EXPECT_EQ(error_in("suite: s\ninclude: [inc.yaml]\nchecks:\n  - {id: rmsnorm, kind: op}\n"),
            "s.yaml:4:10: duplicate check id 'rmsnorm' (first defined at inc.yaml:3:10)");
}

TEST_F(SuiteErrors, MissingKind) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n"),
            "s.yaml:3:5: check 'a' has no 'kind' (expected one of: op, layer)");
}

TEST_F(SuiteErrors, UnknownKind) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: opp\n"),
            "s.yaml:4:11: unknown kind 'opp' (expected one of: op, layer)");
}

TEST_F(SuiteErrors, UnknownFieldForAKind) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    model: x\n"),
            std::string("s.yaml:5:5: unknown field 'model' for kind 'op' (expected one of: ") +
                kOpFields + ")");
}

TEST_F(SuiteErrors, DuplicateFieldInACheck) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - {id: a, kind: op, op: x, op: y}\n"),
            "s.yaml:3:30: duplicate key 'op' (first at s.yaml:3:23)");
}

TEST_F(SuiteErrors, MatrixNotAMapping) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    matrix: [f32, bf16]\n"),
            "s.yaml:5:13: bad matrix: expected a mapping of parameter name to a sequence of "
            "values, e.g. matrix: {dtype: [f32, bf16]}");
}

TEST_F(SuiteErrors, MatrixParamNotASequence) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    matrix: {dtype: f32}\n"),
            "s.yaml:5:21: bad matrix: parameter 'dtype' must be a sequence of values, e.g. "
            "dtype: [f32, bf16]");
}

TEST_F(SuiteErrors, MatrixParamWithNoValues) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    matrix:\n      dtype: []\n"),
            "s.yaml:6:14: bad matrix: parameter 'dtype' has no values");
}

TEST_F(SuiteErrors, BadTolerance) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    tolerance: 0.01\n"),
            "s.yaml:5:16: bad tolerance: expected a mapping, e.g. tolerance: {preset: bf16, "
            "cosine_min: 0.9999}");
}

TEST_F(SuiteErrors, BadTags) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    tags: slow\n"),
            "s.yaml:5:11: bad tags: expected a sequence of strings, e.g. tags: [slow, nightly]");
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    tags: [slow, {a: 1}]\n"),
            "s.yaml:5:18: bad tags: expected a sequence of strings, e.g. tags: [slow, nightly]");
}

TEST_F(SuiteErrors, BadSkip) {
  const std::string bad =
      "bad skip: expected a reason, as skip: \"why\" or skip: {reason: \"why\"}";
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    skip: true\n"),
            "s.yaml:5:11: " + bad);
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    skip: [x]\n"),
            "s.yaml:5:11: " + bad);
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    skip: {}\n"),
            "s.yaml:5:11: " + bad);
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    skip: {why: x}\n"),
            "s.yaml:5:12: unknown field 'why' in skip (expected: reason)");
}

TEST_F(SuiteErrors, BadXfail) {
  EXPECT_EQ(error_in("suite: s\nchecks:\n  - id: a\n    kind: op\n    xfail: {reason: [x]}\n"),
            "s.yaml:5:21: bad xfail: expected a reason, as xfail: \"why\" or xfail: "
            "{reason: \"why\"}");
}

TEST_F(SuiteErrors, BadDefaults) {
  EXPECT_EQ(error_in("suite: s\ndefaults: [a]\nchecks: [{id: a, kind: op}]\n"),
            "s.yaml:2:11: bad defaults: expected a mapping of check fields");
  EXPECT_EQ(error_in("suite: s\ndefaults: {goldn: x}\nchecks: [{id: a, kind: op}]\n"),
            "s.yaml:2:12: unknown field 'goldn' in defaults (expected one of: matrix, "
            "tolerance, tags, skip, xfail, op, attrs, inputs, golden, reference, model, layer)");
  EXPECT_EQ(error_in("suite: s\ndefaults: {kind: op}\nchecks: [{id: a, kind: op}]\n"),
            "s.yaml:2:12: 'kind' cannot have a default (each check sets its own)");
}

TEST_F(SuiteErrors, BadValueFromDefaultsIsReportedWhereItIsWritten) {
  EXPECT_EQ(error_in("suite: s\ndefaults: {tags: slow}\nchecks: [{id: a, kind: op}]\n"),
            "s.yaml:2:18: bad tags: expected a sequence of strings, e.g. tags: [slow, nightly]");
}

TEST_F(SuiteErrors, BadInclude) {
  EXPECT_EQ(error_in("suite: s\ninclude: a.yaml\n"),
            "s.yaml:2:10: bad include: expected a sequence of suite files, relative to this file");
  EXPECT_EQ(error_in("suite: s\ninclude: [[a.yaml]]\n"),
            "s.yaml:2:11: bad include entry: expected the path of a suite file");
}

TEST_F(SuiteErrors, IncludeOfAMissingFile) {
  EXPECT_EQ(error_in("suite: s\ninclude:\n  - sub/missing.yaml\n"),
            "s.yaml:3:5: included file 'sub/missing.yaml' not found (include paths are "
            "relative to the including file)");
}

TEST_F(SuiteErrors, ErrorInAnIncludedFileNamesThatFile) {
  write("inc.yaml", "suite: inc\nchecks:\n  - {id: a, kind: opp}\n");
  EXPECT_EQ(error_in("suite: s\ninclude: [inc.yaml]\n"),
            "inc.yaml:3:19: unknown kind 'opp' (expected one of: op, layer)");
}

TEST_F(SuiteErrors, IncludeCycle) {
  write("b.yaml", "suite: b\ninclude: [sub/c.yaml]\n");
  write("sub/c.yaml", "suite: c\ninclude:\n  - ../s.yaml\n");
  EXPECT_EQ(error_in("suite: s\ninclude: [b.yaml]\n"),
            "sub/c.yaml:3:5: include cycle: s.yaml -> b.yaml -> sub/c.yaml -> s.yaml");
  EXPECT_EQ(error_in("suite: s\ninclude: [s.yaml]\n"),
            "s.yaml:2:11: include cycle: s.yaml -> s.yaml");
}

}  // namespace
}  // namespace h0::suite
