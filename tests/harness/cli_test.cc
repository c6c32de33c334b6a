// The `harness` binary end to end: exit codes, --help/--json on each subcommand, error text,
// and `harness compare` metrics against numpy's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "harness/cli_util.h"
#include "io/safetensors_reader.h"
#include "io/safetensors_writer.h"
#include "test_util.h"

namespace h0 {
namespace {

using test::Result;
Result run(const std::string& args) { return test::run_harness(args); }

const std::string kAllDtypes = test::golden_path("foundation/st/all_dtypes.safetensors");

TEST(Cli, VersionAndHelp) {
  const Result v = run("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind("harness 0.", 0), 0u) << v.out;
  for (const char* sub : {"inspect", "compare", "day0", "run", "list", "op", "coverage"}) {
    const Result h = run(std::string(sub) + " --help");
    EXPECT_EQ(h.code, 0) << sub;
    EXPECT_NE(h.out.find("--json"), std::string::npos) << sub << ": " << h.out;
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run("").code, 2);
  EXPECT_EQ(run("frobnicate").code, 2);
  // A misspelled subcommand is named, with the nearest one.
  const Result typo = run("dya0 --model configs/models/tiny-llama");
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.err.find("unknown subcommand 'dya0' (did you mean day0?)"), std::string::npos)
      << typo.err;
  EXPECT_NE(run("frobnicate").err.find("unknown subcommand 'frobnicate' (harness --help"),
            std::string::npos);
  EXPECT_EQ(run("inspect").code, 2);
  EXPECT_EQ(run("inspect " + kAllDtypes + " --bogus").code, 2);
  const Result bad_preset = run("compare " + kAllDtypes + " " + kAllDtypes + " --preset fp99");
  EXPECT_EQ(bad_preset.code, 2);
  EXPECT_NE(bad_preset.err.find("unknown preset 'fp99'"), std::string::npos) << bad_preset.err;
  const Result bad_threshold =
      run("compare " + kAllDtypes + " " + kAllDtypes + " --threshold cosine=1");
  EXPECT_EQ(bad_threshold.code, 2);
  EXPECT_NE(bad_threshold.err.find("unknown key"), std::string::npos) << bad_threshold.err;
}

TEST(Cli, InputErrorsNameTheFileAndExitTwo) {
  test::TempDir dir;
  std::ofstream(dir.file("bad.safetensors")) << "\x05\0\0\0\0\0\0\0{oops" << std::flush;
  const Result r = run("inspect " + dir.file("bad.safetensors"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("harness: error: " + dir.file("bad.safetensors") + ": ", 0), 0u) << r.err;
  const Result missing = run("inspect " + dir.file("absent.safetensors"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("absent.safetensors: cannot open"), std::string::npos) << missing.err;
}

// shared/reproducers: a golden name longer than a file name can be, and invalid UTF-8 in a
// platform's backend name, ended in "filesystem error: ... File name too long" (exit 3) and in
// every case crashing. Both are the input's fault: its place named, exit 2.
TEST(Cli, NamesNoFileSystemHoldsAndBadUtf8AreInputErrors) {
  test::TempDir dir;
  std::ofstream(dir.file("long.yaml"))
      << "suite: s\nchecks:\n  - id: add\n    kind: op\n    op: add\n    golden: golden/ops/"
      << std::string(300, 'e') << ".safetensors\n    shape: [7, 16]\n";
  const Result l = run("run " + dir.file("long.yaml") + " --no-db -q");
  EXPECT_EQ(l.code, 2) << l.err;
  EXPECT_NE(l.err.find(dir.file("long.yaml") + ":3:5: case add: path 'golden/ops/eee"),
            std::string::npos)
      << l.err;
  EXPECT_NE(l.err.find("has a name of 312 bytes (a file name holds at most 255)"),
            std::string::npos)
      << l.err;
  std::ofstream(dir.file("p.yaml")) << "platform: p\nbackend: \"cpu\xff\"\n";
  const Result p =
      run("run suites/ops.yaml --filter 'add*' --no-db -q --platform " + dir.file("p.yaml"));
  EXPECT_EQ(p.code, 2) << p.err;
  EXPECT_NE(
      p.err.find(dir.file("p.yaml") + ":2:10: invalid UTF-8 (byte 0xFF at offset 3 of the value)"),
      std::string::npos)
      << p.err;
}

// A filter that matches no case used to run nothing and report "0 cases: PASS" (exit 0): a silent
// pass. Now it is an input error naming the filter.
// db merge reads its sources: a missing one is an input error that creates nothing (it created
// the missing sources as empty stores, and the output, and said "0 runs copied", exit 0).
TEST(Cli, DbMergeOfAMissingSourceCreatesNothing) {
  test::TempDir dir;
  const auto r = test::run_harness("db merge " + dir.file("all.db") + " " + dir.file("node1.db") +
                                   " " + dir.file("node2.db"));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(dir.file("node1.db") + ": no results store here"), std::string::npos)
      << r.err;
  for (const char* name : {"all.db", "node1.db", "node2.db"})
    EXPECT_FALSE(std::filesystem::exists(dir.file(name))) << name;
  // A real source merges.
  ASSERT_EQ(
      test::run_harness("profile import tests/data/traces/vllm_cpu_tiny_llama_run1.json.gz --db " +
                        dir.file("node1.db"))
          .code,
      0);
  const auto ok = test::run_harness("db merge " + dir.file("all.db") + " " + dir.file("node1.db"));
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("1 runs copied"), std::string::npos) << ok.out;
}

// With --json, an error is JSON on stdout too (inspect --json printed plain text), still exit 2
// with the plain line on stderr; `run --json FILE` names a file, so its errors stay text.
TEST(Cli, ErrorsInJsonModeAreJson) {
  const Result r = run("inspect --json no/such/file.safetensors");
  EXPECT_EQ(r.code, 2);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["error"]["where"], "no/such/file.safetensors") << r.out;
  EXPECT_EQ(j["error"]["exit_code"], 2);
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
  EXPECT_NE(r.err.find("harness: error: no/such/file.safetensors"), std::string::npos) << r.err;
  const Result profile = run("profile import --json no/such/trace.json --db /nonexistent/x.db");
  EXPECT_EQ(profile.code, 2);
  EXPECT_EQ(nlohmann::json::parse(profile.out)["error"]["where"], "no/such/trace.json");
  const Result plain = run("inspect no/such/file.safetensors");
  EXPECT_EQ(plain.code, 2);
  EXPECT_EQ(plain.out, "");
}

// compare of files with no tensor name in common is an input error naming both sides (it was a
// numerical mismatch, exit 1: "0 compared, ... FAIL").
TEST(Cli, CompareOfDisjointNamesIsAnInputError) {
  const Result r =
      run("compare " + kAllDtypes + " tests/data/models/tiny-mistral/model.safetensors");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no tensor name in common with tests/data/models/tiny-mistral/"
                       "model.safetensors (13 here, e.g. 'bf16'; 21 there, e.g. "),
            std::string::npos)
      << r.err;
}

// Another converter's names ("transformer.h.0..." for "model.layers.0...", no "model." prefix)
// pair through --rename or a --map file; the pairs are then compared for real (a perturbed one
// fails).
TEST(Cli, CompareMapsNamesBetweenConverters) {
  test::TempDir dir;
  const std::string golden = "tests/data/models/tiny-mistral/model.safetensors";
  const io::SafetensorsFile src = io::SafetensorsFile::open(golden);
  std::vector<io::NamedTensor> renamed;
  for (const auto& e : src.entries()) {
    std::string name = e.name;
    if (name.rfind("model.layers.", 0) == 0) {
      name = "transformer.h." + name.substr(13);
    } else if (name.rfind("model.", 0) == 0) {
      name = name.substr(6);
    }
    tensor::Tensor t = src.get(e.name).clone();
    if (name == "transformer.h.1.mlp.up_proj.weight") t.mutable_data_as<uint16_t>()[3] ^= 0x4000;
    renamed.push_back({name, t});
  }
  io::write_safetensors(dir.file("renamed.safetensors"), renamed);
  const std::string cmp = "compare " + dir.file("renamed.safetensors") + " " + golden;
  EXPECT_EQ(run(cmp).code, 1);  // lm_head alone pairs: the other 20 are missing from actual
  const Result r = run(cmp + " --rename model.layers.=transformer.h. --rename model.= --json");
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["compared"], src.entries().size());
  EXPECT_EQ(j["failed"], 1);
  EXPECT_TRUE(j["only_in_actual"].empty() && j["only_in_expected"].empty()) << j.dump();
  for (const auto& t : j["tensors"]) {
    if (t["status"] == "fail") {
      EXPECT_EQ(t["name"], "model.layers.1.mlp.up_proj.weight");
      EXPECT_EQ(t["actual_name"], "transformer.h.1.mlp.up_proj.weight");
    }
  }
  std::ofstream(dir.file("map.yaml"))
      << "names: {model.layers.1.mlp.up_proj.weight: transformer.h.1.mlp.up_proj.weight}\n"
         "prefixes: {model.layers.: transformer.h., model.: ''}\n";
  const Result one =
      run(cmp + " --map " + dir.file("map.yaml") + " --tensor model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(one.code, 0) << one.out << one.err;
  EXPECT_NE(one.out.find("1 compared, 0 failed"), std::string::npos) << one.out;
  const Result bad = run(cmp + " --rename model.layers.");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--rename model.layers.: expected EXPECTED_PREFIX=ACTUAL_PREFIX"),
            std::string::npos)
      << bad.err;
}

// Colour only on the user's terminal unless --color says otherwise, before or after the
// subcommand; a redirected run (every test's) gets none.
TEST(Cli, ColorFollowsTheColorFlag) {
  const std::string cmp = "compare " + kAllDtypes + " " + kAllDtypes;
  const std::string esc = "\x1b[";
  EXPECT_EQ(run(cmp).out.find(esc), std::string::npos);
  EXPECT_NE(run(cmp + " --color always").out.find(esc + "32mPASS"), std::string::npos);
  EXPECT_NE(run("--color always " + cmp).out.find(esc), std::string::npos);
  EXPECT_EQ(run(cmp + " --color never").out.find(esc), std::string::npos);
  const Result bad = run(cmp + " --color sometimes");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--color"), std::string::npos) << bad.err;
}

TEST(Cli, AFilterThatMatchesNothingIsAnInputError) {
  const Result r = run("run suites/ops.yaml --filter 'no_such_op*' --no-db -q");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--filter no_such_op*: matches none of the cases of suites/ops.yaml"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("PASS"), std::string::npos) << r.out;
}

// `harness serve --api-key-env VAR` with VAR unset or empty used to start with no authentication
// and no warning: now it is an input error (exit 2) before anything is loaded, never an open
// server.
TEST(Cli, ServeRefusesAnApiKeyVariableThatIsUnsetOrEmpty) {
  for (const char* env : {"env -u H0_TEST_NO_SUCH_KEY ", "env H0_TEST_NO_SUCH_KEY= "}) {
    const Result r = test::run_shell(
        std::string(env) + H0_HARNESS_BIN +
        " serve --model configs/models/tiny-llama --port 0 --api-key-env H0_TEST_NO_SUCH_KEY");
    EXPECT_EQ(r.code, 2) << env << r.err;
    EXPECT_NE(r.err.find("--api-key-env: environment variable H0_TEST_NO_SUCH_KEY is "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(std::string(env).find('=') != std::string::npos ? "is empty" : "is unset"),
              std::string::npos)
        << r.err;
  }
}

TEST(Cli, InspectJsonListsEveryTensorWithItsHash) {
  const Result r = run("inspect --json " + kAllDtypes);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tensors"].size(), 13u);
  EXPECT_EQ(j["metadata"]["format"], "pt");
  const auto& first = j["tensors"][0];
  EXPECT_EQ(first["name"], "bf16");
  EXPECT_EQ(first["dtype"], "bf16");
  EXPECT_EQ(first["shape"], (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(first["bytes"], 48);
  EXPECT_EQ(first["sha256"], "07c8db49d5499d5b36e191aaf2c1eaefb3b4b579aaa185b95e214fcc30bedd5d");
  const Result plain = run("inspect " + kAllDtypes);
  EXPECT_NE(plain.out.find("f8_e4m3  f8_e4m3  2x3x4"), std::string::npos) << plain.out;
}

// Writes case `name` of the compare goldens as actual.safetensors / expected.safetensors.
void write_case(const test::TempDir& dir, const std::string& name) {
  const auto pairs =
      io::SafetensorsFile::open(test::golden_path("foundation/compare_pairs.safetensors"));
  io::write_safetensors(dir.file("actual.safetensors"), {{"t", pairs.get(name + ".actual")}});
  io::write_safetensors(dir.file("expected.safetensors"), {{"t", pairs.get(name + ".expected")}});
}

TEST(Cli, CompareMetricsEqualNumpys) {
  std::ifstream in(test::golden_path("foundation/compare_metrics.json"));
  const auto golden = nlohmann::json::parse(in);
  for (const char* name : {"f64_small", "bf16_vs_f32", "f32_nan_inf", "f32_zeros"}) {
    SCOPED_TRACE(name);
    test::TempDir dir;
    write_case(dir, name);
    const auto& want = golden[name];
    const Result r =
        run("compare --json " + dir.file("actual.safetensors") + " " +
            dir.file("expected.safetensors") + " --preset " + want["preset"].get<std::string>());
    const auto j = nlohmann::json::parse(r.out);
    const auto& t = j["tensors"][0];
    for (const char* metric :
         {"max_abs_err", "max_rel_err", "mean_abs_err", "rmse", "cosine", "ratio_rel_lt_1e-3",
          "ratio_rel_lt_5e-3", "nan_mismatch", "inf_mismatch", "mismatch_count"}) {
      const double got = t["metrics"][metric], expected = want[metric];
      EXPECT_NEAR(got, expected, 1e-9 * std::fabs(expected)) << metric;
    }
    EXPECT_EQ(t["metrics"]["max_ulp"], want["max_ulp"]);
    const bool pass = want["mismatch_count"] == 0;
    EXPECT_EQ(r.code, pass ? 0 : 1);
    EXPECT_EQ(t["status"], pass ? "pass" : "fail");
  }
}

TEST(Cli, CompareReportsMissingAndExtraTensors) {
  test::TempDir dir;
  const tensor::Tensor t = tensor::Tensor::zeros(tensor::DType::kF32, {4});
  io::write_safetensors(dir.file("a.safetensors"), {{"x", t}, {"extra", t}});
  io::write_safetensors(dir.file("e.safetensors"), {{"x", t}, {"needed", t}});
  const Result r =
      run("compare --json " + dir.file("a.safetensors") + " " + dir.file("e.safetensors"));
  EXPECT_EQ(r.code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["only_in_expected"], std::vector<std::string>{"needed"});
  EXPECT_EQ(j["only_in_actual"], std::vector<std::string>{"extra"});
  EXPECT_EQ(j["tensors"][0]["status"], "pass");
  const Result only_x =
      run("compare " + dir.file("a.safetensors") + " " + dir.file("e.safetensors") + " --tensor x");
  EXPECT_EQ(only_x.code, 0) << only_x.out;
  const Result absent = run("compare " + dir.file("a.safetensors") + " " +
                            dir.file("e.safetensors") + " --tensor nope");
  EXPECT_EQ(absent.code, 2);
}

TEST(Cli, CompareThresholdsTurnAPassIntoAFailure) {
  test::TempDir dir;
  write_case(dir, "bf16_vs_f32");
  const std::string files = dir.file("actual.safetensors") + " " + dir.file("expected.safetensors");
  EXPECT_EQ(run("compare " + files).code, 0);
  const Result strict = run("compare " + files + " --threshold max_abs_max=1e-9");
  EXPECT_EQ(strict.code, 1);
  EXPECT_NE(strict.out.find("> max_abs_max 1e-09"), std::string::npos) << strict.out;
  EXPECT_EQ(run("compare " + files + " --preset f32").code, 1);  // bf16 rounding exceeds f32 bounds
}

}  // namespace
}  // namespace h0
