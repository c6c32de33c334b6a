// Platform files: fields, sizes and durations, the backend forms, YAML -> JSON, and every
// malformed case with its exact message.
#include "suite/platform.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/error.h"
#include "base/sha256.h"
#include "suite/suite_test_util.h"
#include "test_util.h"

namespace h0::suite {
namespace {

class PlatformTest : public SuiteFixture {
 protected:
  // The message loading a platform file holding `text` fails with, its path cut to "p.yaml".
  std::string error_in(const std::string& text) {
    write("p.yaml", text);
    try {
      load_platform(dir_.file("p.yaml"));
    } catch (const InputError& e) {
      return relative(e.what());
    }
    return "";
  }
};

// The message parsing the YAML scalar `text` with `parse` fails with ("" if it parses).
template <typename Parse>
std::string parse_error(Parse parse, const std::string& text) {
  try {
    parse("f.yaml", YAML::Load(text));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The overloads taking the file's name, as callables.
const auto kToJson = [](const std::string& f, const YAML::Node& n) { return yaml_to_json(f, n); };
const auto kSize = [](const std::string& f, const YAML::Node& n) { return parse_size(f, n); };
const auto kDuration = [](const std::string& f, const YAML::Node& n) {
  return parse_duration_s(f, n);
};

TEST_F(PlatformTest, ReadsABuiltInBackend) {
  const std::string text = R"(platform: cpu
backend: cpu
device_memory: 24GiB
peaks: {memory_gbps: 40, tflops: {f32: 1.2, bfloat16: 1.5}}
tolerance: {bf16: {rtol: 0.02}}
case_timeout: 2m
isolation: none
)";
  const std::string path = write("configs/cpu.yaml", text);
  const Platform p = load_platform(path);
  EXPECT_EQ(p.file, path);
  EXPECT_EQ(p.content, text);
  EXPECT_EQ(p.sha256, base::sha256_file(path));
  EXPECT_EQ(p.name, "cpu");
  EXPECT_EQ(p.backend, "cpu");
  EXPECT_EQ(p.lib, "");
  EXPECT_EQ(p.options, nlohmann::json::object());
  EXPECT_EQ(p.device_memory_bytes, 24.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(p.peak_gbps, 40);
  EXPECT_EQ(p.peak_tflops, (std::map<std::string, double>{{"f32", 1.2}, {"bf16", 1.5}}));
  EXPECT_EQ(p.tolerance["bf16"]["rtol"].as<double>(), 0.02);
  EXPECT_EQ(p.case_timeout_s, 120);
  EXPECT_EQ(p.isolation, "none");
}

TEST_F(PlatformTest, Defaults) {
  const Platform p = load_platform(write("p.yaml", "platform: x\nbackend: reference\n"));
  EXPECT_EQ(p.device_memory_bytes, 0);
  EXPECT_EQ(p.peak_gbps, 0);
  EXPECT_TRUE(p.peak_tflops.empty());
  EXPECT_TRUE(p.tolerance.IsNull());
  EXPECT_EQ(p.case_timeout_s, 120);
  EXPECT_EQ(p.isolation, "process");
}

TEST_F(PlatformTest, ReadsAPluginBackendRelativeToTheFile) {
  const Platform p = load_platform(write("configs/platforms/faulty.yaml", R"(platform: faulty
backend:
  lib: ../../build/lib/libh0_faulty.so
  options: {op: rmsnorm, fault: scale, magnitude: 0.01, count: 3, on: true, note: "7", x: ~}
)"));
  EXPECT_EQ(p.backend, "");
  EXPECT_EQ(p.lib, dir_.file("build/lib/libh0_faulty.so"));
  EXPECT_EQ(
      p.options.dump(),
      R"({"count":3,"fault":"scale","magnitude":0.01,"note":"7","on":true,"op":"rmsnorm","x":null})");
  const Platform q =
      load_platform(write("q.yaml", "platform: q\nbackend: {lib: /opt/v/libv.so}\n"));
  EXPECT_EQ(q.lib, "/opt/v/libv.so");
  EXPECT_EQ(q.options, nlohmann::json::object());
}

TEST(YamlToJson, KeepsTypes) {
  const nlohmann::json j = yaml_to_json("f.yaml", YAML::Load(R"(
int: 42
negative: -7
plus: +3
hex: 0x1F
octal: 0o17
big: 18446744073709551615
float: 1.5
exp: 1.0e-6
bare_exp: 2e3
dot: .5
yes_bool: true
no_bool: False
null_word: null
tilde: ~
empty:
quoted_int: "42"
single_quoted: 'true'
tagged: !!str 12
word: bf16
version: 1.2.3
on: on
list: [1, two, 3.0, [null]]
nested: {a: {b: [x]}}
)"));
  EXPECT_TRUE(j["int"].is_number_integer());
  EXPECT_EQ(j["int"], 42);
  EXPECT_EQ(j["negative"], -7);
  EXPECT_EQ(j["plus"], 3);
  EXPECT_EQ(j["hex"], 31);
  EXPECT_EQ(j["octal"], 15);
  EXPECT_TRUE(j["big"].is_number_unsigned());
  EXPECT_EQ(j["big"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_TRUE(j["float"].is_number_float());
  EXPECT_EQ(j["float"], 1.5);
  EXPECT_EQ(j["exp"], 1.0e-6);
  EXPECT_TRUE(j["bare_exp"].is_number_float());
  EXPECT_EQ(j["bare_exp"], 2000.0);
  EXPECT_EQ(j["dot"], 0.5);
  EXPECT_EQ(j["yes_bool"], true);
  EXPECT_EQ(j["no_bool"], false);
  EXPECT_TRUE(j["null_word"].is_null());
  EXPECT_TRUE(j["tilde"].is_null());
  EXPECT_TRUE(j["empty"].is_null());
  EXPECT_EQ(j["quoted_int"], "42");
  EXPECT_EQ(j["single_quoted"], "true");
  EXPECT_EQ(j["tagged"], "12");
  EXPECT_EQ(j["word"], "bf16");
  EXPECT_EQ(j["version"], "1.2.3");
  EXPECT_EQ(j["on"], "on");  // YAML 1.2: not a boolean
  EXPECT_EQ(j["list"].dump(), R"([1,"two",3.0,[null]])");
  EXPECT_EQ(j["nested"].dump(), R"({"a":{"b":["x"]}})");
}

TEST(YamlToJson, Errors) {
  EXPECT_EQ(parse_error(kToJson, "{a: .inf}"),
            "f.yaml:1:5: '.inf' cannot be represented in JSON (expected a finite number)");
  EXPECT_EQ(parse_error(kToJson, "{[a]: 1}"), "f.yaml:1:2: expected a string key");
  EXPECT_EQ(parse_error(kToJson, "{a: 1, a: 2}"),
            "f.yaml:1:8: duplicate key 'a' (first at f.yaml:1:2)");
  EXPECT_EQ(parse_error(kToJson, "0x10000000000000000"),
            "f.yaml:1:1: integer '0x10000000000000000' does not fit in 64 bits");
  EXPECT_EQ(parse_error(kToJson, "[1e999]"),
            "f.yaml:1:2: number '1e999' is beyond the range of a double");
}

TEST(ParseSize, UnitsAndPlainBytes) {
  auto size = [](const std::string& text) { return parse_size("f.yaml", YAML::Load(text)); };
  EXPECT_EQ(size("1024"), 1024);
  EXPECT_EQ(size("512B"), 512);
  EXPECT_EQ(size("2KB"), 2000);
  EXPECT_EQ(size("3MB"), 3e6);
  EXPECT_EQ(size("1.5GB"), 1.5e9);
  EXPECT_EQ(size("2TB"), 2e12);
  EXPECT_EQ(size("1KiB"), 1024);
  EXPECT_EQ(size("1.5 MiB"), 1.5 * 1024 * 1024);
  EXPECT_EQ(size("\"80GiB\""), 80.0 * (1ull << 30));
  EXPECT_EQ(size("1TiB"), static_cast<double>(1ull << 40));
  EXPECT_EQ(size("1e9"), 1e9);
}

TEST(ParseSize, Errors) {
  const std::string expected =
      "' (expected a number of bytes, or a number with a unit: B, KB, MB, GB, TB, KiB, MiB, "
      "GiB, TiB; e.g. 24GiB)";
  EXPECT_EQ(parse_error(kSize, "24Gb"), "f.yaml:1:1: bad size '24Gb" + expected);
  EXPECT_EQ(parse_error(kSize, "-1GB"), "f.yaml:1:1: bad size '-1GB" + expected);
  EXPECT_EQ(parse_error(kSize, "1e999GB"), "f.yaml:1:1: bad size '1e999GB" + expected);
  EXPECT_EQ(parse_error(kSize, "GiB"), "f.yaml:1:1: bad size 'GiB" + expected);
  EXPECT_EQ(parse_error(kSize, "[24, GiB]"), "f.yaml:1:1: bad size '..." + expected);
}

TEST(ParseDuration, Units) {
  auto seconds = [](const std::string& text) {
    return parse_duration_s("f.yaml", YAML::Load(text));
  };
  EXPECT_EQ(seconds("90"), 90);
  EXPECT_EQ(seconds("2.5"), 2.5);
  EXPECT_EQ(seconds("500ms"), 0.5);
  EXPECT_EQ(seconds("120s"), 120);
  EXPECT_EQ(seconds("2m"), 120);
  EXPECT_EQ(seconds("1.5h"), 5400);
}

TEST(ParseDuration, WithoutAFileErrorsNameLineAndColumn) {
  EXPECT_EQ(parse_duration_s(YAML::Load("{t: 5m}")["t"]), 300);
  try {
    parse_duration_s(YAML::Load("{t: 5 min}")["t"]);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "1:5: bad duration '5 min' (expected a number of seconds, or a number with a unit: "
              "ms, s, m, h; e.g. 120s)");
  }
  EXPECT_EQ(yaml_to_json(YAML::Load("[1, a]")).dump(), R"([1,"a"])");
  EXPECT_EQ(parse_size(YAML::Load("2KiB")), 2048);
}

TEST(ParseDuration, Errors) {
  EXPECT_EQ(parse_error(kDuration, "2min"),
            "f.yaml:1:1: bad duration '2min' (expected a number of seconds, or a number with a "
            "unit: ms, s, m, h; e.g. 120s)");
}

TEST_F(PlatformTest, MissingFile) {
  EXPECT_THROW(
      {
        try {
          load_platform(dir_.file("none.yaml"));
        } catch (const InputError& e) {
          EXPECT_EQ(std::string(e.what()), dir_.file("none.yaml") + ": platform file not found");
          throw;
        }
      },
      InputError);
}

TEST_F(PlatformTest, Errors) {
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\n"), "");
  EXPECT_EQ(error_in("platform: x\nbackend: [cpu\n"),
            "p.yaml:3:1: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(error_in("- x\n"),
            "p.yaml:1:1: expected a mapping with 'platform' and 'backend' at the top of the file");
  EXPECT_EQ(error_in("backend: cpu\n"),
            "p.yaml:1:1: missing required field 'platform' (the platform's name)");
  EXPECT_EQ(error_in("platform: x\n"),
            "p.yaml:1:1: missing required field 'backend' (expected a built-in backend's name, "
            "e.g. backend: cpu, or backend: {lib: path/to/plugin.so, options: {...}})");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\nmesh: {tp: 2}\n"),
            "p.yaml:3:1: unknown field 'mesh' (expected one of: platform, backend, device_memory, "
            "peaks, tolerance, case_timeout, isolation, fallback, service)");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\ndevice_memory: 24 gigs\n"),
            "p.yaml:3:16: bad size '24 gigs' (expected a number of bytes, or a number with a "
            "unit: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; e.g. 24GiB)");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\ncase_timeout: 2 days\n"),
            "p.yaml:3:15: bad duration '2 days' (expected a number of seconds, or a number with "
            "a unit: ms, s, m, h; e.g. 120s)");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\ncase_timeout: 0s\n"),
            "p.yaml:3:15: bad case_timeout: expected a duration > 0");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\nisolation: thread\n"),
            "p.yaml:3:12: bad isolation: expected one of: process, none");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\nfallback: maybe\n"),
            "p.yaml:3:11: bad fallback: expected one of: none, decompose, host");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\nfallback: host\n"), "");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\ntolerance: strict\n"),
            "p.yaml:3:12: bad tolerance: expected a mapping of tolerance overrides");
}

TEST_F(PlatformTest, BackendErrors) {
  const std::string shape =
      "bad backend: expected a built-in backend's name, e.g. backend: cpu, or backend: "
      "{lib: path/to/plugin.so, options: {...}}";
  EXPECT_EQ(error_in("platform: x\nbackend: [cpu]\n"), "p.yaml:2:10: " + shape);
  EXPECT_EQ(error_in("platform: x\nbackend: {options: {a: 1}}\n"), "p.yaml:2:10: " + shape);
  EXPECT_EQ(error_in("platform: x\nbackend: {lib: a.so, opts: {}}\n"),
            "p.yaml:2:22: unknown field 'opts' in backend (expected one of: lib, options)");
  EXPECT_EQ(error_in("platform: x\nbackend: {lib: a.so, options: [1]}\n"),
            "p.yaml:2:31: bad options: expected a mapping, e.g. {threads: 4}");
  EXPECT_EQ(error_in("platform: x\nbackend: {lib: [a.so]}\n"),
            "p.yaml:2:16: bad lib: expected the path of the plugin's shared library");
}

TEST_F(PlatformTest, PeaksErrors) {
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\npeaks: {memory_gbps: fast}\n"),
            "p.yaml:3:22: bad memory_gbps: expected a number >= 0");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\npeaks: {tflops: {f31: 1}}\n"),
            "p.yaml:3:18: unknown dtype 'f31' (expected one of: f64, f32, f16, bf16, f8_e4m3, "
            "f8_e5m2, i64, i32, i8, u8, bool)");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\npeaks: {tflops: {f32: -1}}\n"),
            "p.yaml:3:23: bad tflops: expected a number >= 0");
  EXPECT_EQ(error_in("platform: x\nbackend: cpu\npeaks: {flops: 1}\n"),
            "p.yaml:3:9: unknown field 'flops' in peaks (expected one of: memory_gbps, tflops)");
}

TEST_F(PlatformTest, ReadsTheServiceSection) {
  write("p.yaml",
        "platform: x\nbackend: cpu\nservice:\n  start: \"vllm serve {model} --port {port}\"\n"
        "  url: http://127.0.0.1:{port}/\n  health: /health\n  startup_timeout: 10m\n  stop_grace: "
        "5s\n"
        "  env: {CUDA_VISIBLE_DEVICES: \"0\"}\n  api_key_env: MY_KEY\n  model: served\n");
  const Platform p = load_platform(dir_.file("p.yaml"));
  EXPECT_TRUE(p.service.present);
  EXPECT_EQ(p.service.start, "vllm serve {model} --port {port}");
  EXPECT_EQ(p.service.url, "http://127.0.0.1:{port}");  // the trailing slash dropped
  EXPECT_EQ(p.service.health, "/health");
  EXPECT_DOUBLE_EQ(p.service.startup_timeout_s, 600);
  EXPECT_DOUBLE_EQ(p.service.stop_grace_s, 5);
  EXPECT_EQ(p.service.env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(p.service.api_key_env, "MY_KEY");
  EXPECT_EQ(p.service.model, "served");
  EXPECT_FALSE(
      load_platform(H0_SOURCE_DIR "/configs/platforms/reference.yaml").service.start.empty());
}

TEST_F(PlatformTest, ServiceErrorsNameThePlace) {
  const std::string head = "platform: x\nbackend: cpu\n";
  EXPECT_EQ(error_in(head + "service: vllm\n"),
            "p.yaml:3:10: bad service: expected a mapping, e.g. {start: \"vllm serve {model} "
            "--port {port}\", url: "
            "\"http://127.0.0.1:{port}\"}");
  EXPECT_EQ(error_in(head + "service: {health: /h}\n"),
            "p.yaml:3:10: service needs `start` (a command that serves the model) or `url` (a "
            "running service)");
  EXPECT_EQ(error_in(head + "service: {url: \"http://h:{port}\"}\n"),
            "p.yaml:3:10: service has no `start`, so its `url` cannot use {port}: name the running "
            "service's port");
  EXPECT_EQ(error_in(head + "service: {url: ftp://h}\n"),
            "p.yaml:3:16: bad url: expected http://host:port or https://...");
  EXPECT_EQ(error_in(head + "service: {start: s, startup_timeout: 0s}\n"),
            "p.yaml:3:38: bad startup_timeout: expected a duration > 0, e.g. 600s");
  EXPECT_EQ(error_in(head + "service: {start: s, port: 1}\n"),
            "p.yaml:3:21: unknown field 'port' in service (expected one of: start, url, health, "
            "startup_timeout, stop_grace, request_timeout, env, api_key_env, model, dialect, "
            "prefill_chunk, request, kv_source, profiler, variants)");
  EXPECT_EQ(error_in(head + "service: {start: s, prefill_chunk: 0}\n"),
            "p.yaml:3:36: bad prefill_chunk: expected a number of tokens >= 1, e.g. 64");
  EXPECT_EQ(error_in(head + "service: {start: s, variants: {big: {start: t, port: 1}}}\n"),
            "p.yaml:3:48: unknown field 'port' in a service variant (expected one of: start, url, "
            "health, startup_timeout, stop_grace, request_timeout, env, api_key_env, model, "
            "dialect, prefill_chunk, request, kv_source, profiler)");
  EXPECT_EQ(error_in(head + "service: {start: s, variants: {big: {start: t, variants: {}}}}\n"),
            "p.yaml:3:48: unknown field 'variants' in a service variant (expected one of: start, "
            "url, health, startup_timeout, stop_grace, request_timeout, env, api_key_env, model, "
            "dialect, prefill_chunk, request, kv_source, profiler)");
}

// The engine's own profiler (service.profiler): its endpoints, its trace directory, the wait.
TEST_F(PlatformTest, ReadsTheEnginesProfiler) {
  const std::string head = "platform: x\nbackend: cpu\nservice:\n  url: http://h:8000\n";
  write("p.yaml", head + "  profiler: {dir: /tmp/vllm_profile, wait: 30s}\n");
  const EngineProfiler p = load_platform(dir_.file("p.yaml")).service.profiler;
  EXPECT_TRUE(p.present);
  EXPECT_EQ(p.dir, "/tmp/vllm_profile");
  EXPECT_EQ(p.start, "/start_profile");
  EXPECT_EQ(p.stop, "/stop_profile");
  EXPECT_DOUBLE_EQ(p.wait_s, 30);
  EXPECT_EQ(EngineProfiler::from_json(p.to_json()).to_json(), p.to_json());
  EXPECT_FALSE(load_platform(H0_SOURCE_DIR "/configs/platforms/cpu.yaml").service.profiler.present);
  EXPECT_EQ(error_in(head + "  profiler: {wait: 30s}\n"),
            "p.yaml:5:13: profiler needs `dir`: where the engine writes its traces");
  EXPECT_EQ(error_in(head + "  profiler: {dir: d, start: start_profile}\n"),
            "p.yaml:5:29: bad profiler.start: expected a path such as /start_profile");
  EXPECT_EQ(error_in(head + "  profiler: {dir: d, every: 1}\n"),
            "p.yaml:5:22: unknown field 'every' in profiler (expected one of: dir, start, stop, "
            "wait, step_pattern)");
}

// A variant is its base service with the fields it writes changed: the serving checks start it
// to turn one feature on (checks/serving_check.cc).
TEST_F(PlatformTest, ServiceVariantsInheritTheBase) {
  std::ostringstream text;
  text << "platform: x\nbackend: cpu\nservice:\n"
       << "  start: \"vllm serve {model} --port {port}\"\n"
       << "  request_timeout: 30s\n  env: {A: '1'}\n  request: {priority: 1}\n"
       << "  variants:\n"
       << "    chunked_prefill:\n"
       << "      start: \"vllm serve {model} --port {port} --max-num-batched-tokens 64\"\n"
       << "      prefill_chunk: 64\n"
       << "      env: {B: '2'}\n"
       << "    tagged: {request: {user: me}}\n";
  write("p.yaml", text.str());
  const Platform p = load_platform(dir_.file("p.yaml"));
  EXPECT_EQ(p.service.prefill_chunk, 0);
  ASSERT_EQ(p.service_variants.size(), 2u);
  const ServiceConfig& c = p.service_variants.at("chunked_prefill");
  EXPECT_EQ(c.start, "vllm serve {model} --port {port} --max-num-batched-tokens 64");
  EXPECT_EQ(c.prefill_chunk, 64);
  EXPECT_DOUBLE_EQ(c.request_timeout_s, 30);  // inherited
  EXPECT_EQ(c.env.at("A"), "1");
  EXPECT_EQ(c.env.at("B"), "2");
  const ServiceConfig& t = p.service_variants.at("tagged");
  EXPECT_EQ(t.start, p.service.start);
  EXPECT_EQ(t.request, (nlohmann::json{{"priority", 1}, {"user", "me"}}));
}

}  // namespace
}  // namespace h0::suite
