// A platform file (configs/platforms/*.yaml): the backend under test, its device memory and
// peak rates (for rooflines), tolerance overrides, and how cases are run.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace h0::suite {

// How the platform serves models over the OpenAI-compatible API (`service:`). Placeholders in
// `start` and `url`: {harness} (this harness binary), {model} (the model directory a check
// names, absolute), {port} (a free port picked at start), {platform} (this file's path).
// How the engine profiles itself (`service: {profiler: {...}}`): the endpoints that start and stop
// its profiler (POSTed: vLLM's and SGLang's /start_profile and /stop_profile, vLLM started with
// --profiler-config '{"profiler": "torch", "torch_profiler_dir": DIR}'), the directory its traces
// appear in, and how long one may take to appear after the stop. The served load (kind
// e2e_load) brackets its workload with them and stores the engine's kernels
// (io/trace_profile.h) with its result.
struct EngineProfiler {
  bool present = false;
  std::string start = "/start_profile", stop = "/stop_profile";
  std::string dir;           // required
  double wait_s = 60;        // for the trace file after the stop
  std::string step_pattern;  // the annotations that mark a step; empty: the reader's default

  nlohmann::json to_json() const;  // null when not present
  static EngineProfiler from_json(const nlohmann::json& j);
};

struct ServiceConfig {
  bool present = false;
  std::string start;  // shell command; empty: a service already running at `url`
  std::string url = "http://127.0.0.1:{port}";
  std::string health = "/v1/models";
  double startup_timeout_s = 600;
  double stop_grace_s = 10;
  double request_timeout_s = 300;
  std::map<std::string, std::string> env;
  std::string api_key_env;  // the environment variable holding the API key (never stored)
  std::string model;        // the model name to request; empty: the first of /v1/models
  std::string dialect;      // "vllm", "sglang", "openai"; empty: probed once per service
  // Tokens per prefill step the engine is started with (vLLM --max-num-batched-tokens): a
  // longer prompt is prefilled in chunks. 0: not stated.
  int64_t prefill_chunk = 0;
  nlohmann::json request = nlohmann::json::object();  // fields added to every request's body
  // Where the engine reports the KV cache it allocated (kind kv_capacity): "metrics" (vLLM's
  // vllm:cache_config_info in /metrics; the default), "log:REGEX" (the service's output, REGEX
  // with one group capturing the token count, e.g. "KV cache size: ([0-9,]+) tokens"), "none".
  std::string kv_source = "metrics";
  EngineProfiler profiler;
};

struct Platform {
  std::string file;     // the path given to load_platform
  std::string sha256;   // of the file's contents
  std::string content;  // the file's text, as read
  std::string name;     // `platform:`
  std::string backend;  // a built-in backend's name, e.g. "cpu"; empty when `lib` is set
  std::string lib;  // a plugin's path, resolved against the platform file's directory if relative
  nlohmann::json options = nlohmann::json::object();  // the plugin's `options`, for init()
  double device_memory_bytes = 0;                     // 0 = not stated
  double peak_gbps = 0;                               // memory bandwidth, GB/s; 0 = not stated
  std::map<std::string, double> peak_tflops;          // dtype name ("bf16") -> TFLOP/s
  // Tolerance overrides as written (a Null node if none). A yaml-cpp node: copy-construct a
  // Platform rather than assigning over one (a node's assignment writes through).
  YAML::Node tolerance;
  double case_timeout_s = 120;
  std::string isolation = "process";  // "process" (each case in a child) or "none"
  // How op checks run an op the backend does not support, unless a check says otherwise:
  // "none", "decompose" or "host"; empty = the check kind's default (decompose).
  std::string fallback;
  ServiceConfig service;
  // `service: {variants: {NAME: {...}}}`: the same service with a serving feature turned on
  // (chunked prefill, a small KV pool, speculative decoding), each field it does not write
  // inherited from `service`; the serving checks name them (checks/serving_check.cc).
  std::map<std::string, ServiceConfig> service_variants;
};

// Reads and validates a platform file:
//   platform: cpu                  # name (required)
//   backend: cpu                   # a built-in name, or {lib: path/to/plugin.so, options: {...}}
//   device_memory: 24GiB
//   peaks: {memory_gbps: 40, tflops: {f32: 1.2, bf16: 1.2}}
//   tolerance: {...}
//   case_timeout: 120s
//   isolation: process             # or none
//   fallback: host                 # none | decompose | host: op checks' default for unsupported
//   ops service: {start: "vllm serve {model} --port {port}", url: "http://127.0.0.1:{port}",
//             health: /v1/models, startup_timeout: 600s, stop_grace: 10s, request_timeout: 300s,
//             env: {VAR: value}, api_key_env: MY_KEY, model: served-name, prefill_chunk: 2048,
//             request: {field: value}, variants: {NAME: {start: ..., prefill_chunk: 64}},
//             profiler: {dir: /tmp/vllm_profile, start: /start_profile, stop: /stop_profile,
//                        wait: 60s, step_pattern: REGEX}}
// Throws InputError naming file:line:col on any mistake.
Platform load_platform(const std::string& path);

// A YAML node as JSON, scalars resolved by YAML 1.2's core schema: plain null/~ -> null,
// true/false -> booleans, integers (decimal, 0x, 0o) -> integers, decimals and exponents ->
// floats, anything else -> strings. Quoted or tagged scalars stay strings. Fails (naming
// file:line:col) at .inf/.nan, which JSON cannot hold, and at non-string or repeated keys.
nlohmann::json yaml_to_json(const std::string& file, const YAML::Node& node);

// The `service:` section (platform_service.cc), its `variants` into `variants` (when given).
// Fails at the node.
ServiceConfig read_service_config(const std::string& file, const YAML::Node& node,
                                  std::map<std::string, ServiceConfig>* variants = nullptr);

// A size in bytes: a plain number of bytes, or a number with a unit: B, KB, MB, GB, TB (powers
// of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. 24GiB or "1.5 GB". Fails at the node.
double parse_size(const std::string& file, const YAML::Node& node);

// A duration in seconds: a plain number of seconds, or a number with a unit: ms, s, m, h,
// e.g. 120s, 1.5h, 500ms. Fails at the node.
double parse_duration_s(const std::string& file, const YAML::Node& node);

// The same without the file's name: errors name only "line:col". Prefer the forms above
// where the file is known.
nlohmann::json yaml_to_json(const YAML::Node& node);
double parse_size(const YAML::Node& node);
double parse_duration_s(const YAML::Node& node);

}  // namespace h0::suite
