// The platform file's `service:` section: how the platform serves a model over the
// OpenAI-compatible API (a start command, or the URL of a service already running).
#include <map>
#include <string>

#include "service/dialect.h"
#include "suite/location.h"
#include "suite/platform.h"

namespace h0::suite {
namespace {

const char* const kVariantFields =
    "start, url, health, startup_timeout, stop_grace, request_timeout, env, api_key_env, model, "
    "dialect, prefill_chunk, request, kv_source, profiler";
const std::string kServiceFields = std::string(kVariantFields) + ", variants";

std::string string_value(const std::string& file, const YAML::Node& value,
                         const std::string& what) {
  if (!value.IsScalar()) fail_at(file, value, "bad " + what + ": expected a string");
  return value.Scalar();
}

double positive_duration(const std::string& file, const YAML::Node& value,
                         const std::string& what) {
  const double s = parse_duration_s(file, value);
  if (!(s > 0)) fail_at(file, value, "bad " + what + ": expected a duration > 0, e.g. 600s");
  return s;
}

// `profiler: {dir: ..., start: ..., stop: ..., wait: ..., step_pattern: ...}`.
EngineProfiler read_profiler(const std::string& file, const YAML::Node& node) {
  if (!node.IsMap())
    fail_at(file, node, "bad profiler: expected a mapping, e.g. {dir: /tmp/vllm_profile}");
  EngineProfiler p;
  p.present = true;
  for_each_entry(
      file, node, [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& v) {
        if (key == "dir") {
          p.dir = string_value(file, v, "profiler.dir");
        } else if (key == "start" || key == "stop") {
          std::string& path = key == "start" ? p.start : p.stop;
          path = string_value(file, v, "profiler." + key);
          if (path.empty() || path[0] != '/')
            fail_at(file, v,
                    "bad profiler." + key + ": expected a path such as /" + key + "_profile");
        } else if (key == "wait") {
          p.wait_s = positive_duration(file, v, "profiler.wait");
        } else if (key == "step_pattern") {
          p.step_pattern = string_value(file, v, "profiler.step_pattern");
        } else {
          fail_at(file, key_node,
                  "unknown field '" + key +
                      "' in profiler (expected one of: dir, start, stop, wait, "
                      "step_pattern)");
        }
      });
  if (p.dir.empty())
    fail_at(file, node, "profiler needs `dir`: where the engine writes its traces");
  return p;
}

// Reads the fields of `node` over `s` (a variant starts from its base's). `variants`: where the
// `variants` field goes; null inside a variant, where it is not allowed.
void read_fields(const std::string& file, const YAML::Node& node, ServiceConfig& s,
                 std::map<std::string, YAML::Node>* variants, bool* has_url) {
  for_each_entry(
      file, node, [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& value) {
        if (key == "start") {
          s.start = string_value(file, value, "start");
        } else if (key == "url") {
          s.url = string_value(file, value, "url");
          *has_url = true;
          if (s.url.rfind("http://", 0) != 0 && s.url.rfind("https://", 0) != 0) {
            fail_at(file, value, "bad url: expected http://host:port or https://...");
          }
          while (!s.url.empty() && s.url.back() == '/') s.url.pop_back();
        } else if (key == "health") {
          s.health = string_value(file, value, "health");
          if (s.health.empty() || s.health[0] != '/')
            fail_at(file, value, "bad health: expected a path such as /v1/models");
        } else if (key == "startup_timeout") {
          s.startup_timeout_s = positive_duration(file, value, "startup_timeout");
        } else if (key == "stop_grace") {
          s.stop_grace_s = positive_duration(file, value, "stop_grace");
        } else if (key == "request_timeout") {
          s.request_timeout_s = positive_duration(file, value, "request_timeout");
        } else if (key == "env") {
          if (!value.IsMap())
            fail_at(file, value, "bad env: expected a mapping of variable to value");
          for_each_entry(file, value,
                         [&](const std::string& var, const YAML::Node&, const YAML::Node& v) {
                           s.env[var] = string_value(file, v, "env." + var);
                         });
        } else if (key == "api_key_env") {
          s.api_key_env = string_value(file, value, "api_key_env");
        } else if (key == "model") {
          s.model = string_value(file, value, "model");
        } else if (key == "dialect") {
          s.dialect = string_value(file, value, "dialect");
          if (!service::dialect_named(s.dialect)) {
            fail_at(file, value,
                    "bad dialect '" + s.dialect + "': expected one of " + service::dialect_names() +
                        " (or leave it out: probed)");
          }
        } else if (key == "prefill_chunk") {
          const nlohmann::json n = yaml_to_json(file, value);
          if (!n.is_number_integer() || n.get<int64_t>() < 1)
            fail_at(file, value, "bad prefill_chunk: expected a number of tokens >= 1, e.g. 64");
          s.prefill_chunk = n.get<int64_t>();
        } else if (key == "kv_source") {
          s.kv_source = string_value(file, value, "kv_source");
          if (s.kv_source != "metrics" && s.kv_source != "none" &&
              (s.kv_source.rfind("log:", 0) != 0 || s.kv_source.size() == 4)) {
            fail_at(file, value,
                    "bad kv_source '" + s.kv_source +
                        "': expected metrics, none, or log:REGEX (one group capturing the "
                        "token count, e.g. \"log:KV cache size: ([0-9,]+) tokens\")");
          }
        } else if (key == "profiler") {
          s.profiler = read_profiler(file, value);
        } else if (key == "request") {
          const nlohmann::json extra = yaml_to_json(file, value);
          if (!extra.is_object())
            fail_at(file, value, "bad request: expected a mapping of request field to value");
          for (const auto& [field, v] : extra.items()) s.request[field] = v;
        } else if (key == "variants" && variants != nullptr) {
          if (!value.IsMap() || value.size() == 0) {
            fail_at(file, value,
                    "bad variants: expected a mapping of name to service fields, e.g. "
                    "{chunked_prefill: {start: \"vllm serve {model} --port {port} "
                    "--max-num-batched-tokens 64\", prefill_chunk: 64}}");
          }
          for_each_entry(file, value,
                         [&](const std::string& name, const YAML::Node&, const YAML::Node& v) {
                           if (!v.IsMap())
                             fail_at(file, v, "bad variant " + name + ": expected a mapping");
                           variants->emplace(name, YAML::Node(v));
                         });
        } else {
          fail_at(file, key_node,
                  "unknown field '" + key + "' in " + (variants ? "service" : "a service variant") +
                      " (expected one of: " + (variants ? kServiceFields : kVariantFields) + ")");
        }
      });
}

void validate(const std::string& file, const YAML::Node& node, const ServiceConfig& s,
              bool has_url) {
  if (s.start.empty() && !has_url) {
    fail_at(file, node,
            "service needs `start` (a command that serves the model) or `url` (a running service)");
  }
  if (s.start.empty() && s.url.find("{port}") != std::string::npos) {
    fail_at(
        file, node,
        "service has no `start`, so its `url` cannot use {port}: name the running service's port");
  }
}

}  // namespace

nlohmann::json EngineProfiler::to_json() const {
  if (!present) return nullptr;
  return {{"start", start},
          {"stop", stop},
          {"dir", dir},
          {"wait_s", wait_s},
          {"step_pattern", step_pattern}};
}

EngineProfiler EngineProfiler::from_json(const nlohmann::json& j) {
  EngineProfiler p;
  if (!j.is_object()) return p;
  p.present = true;
  p.start = j.value("start", p.start);
  p.stop = j.value("stop", p.stop);
  p.dir = j.value("dir", "");
  p.wait_s = j.value("wait_s", p.wait_s);
  p.step_pattern = j.value("step_pattern", "");
  return p;
}

ServiceConfig read_service_config(const std::string& file, const YAML::Node& node,
                                  std::map<std::string, ServiceConfig>* variants) {
  if (!node.IsMap()) {
    fail_at(file, node,
            "bad service: expected a mapping, e.g. {start: \"vllm serve {model} --port {port}\", "
            "url: \"http://127.0.0.1:{port}\"}");
  }
  ServiceConfig s;
  s.present = true;
  bool has_url = false;
  std::map<std::string, YAML::Node> variant_nodes;
  read_fields(file, node, s, variants ? &variant_nodes : nullptr, &has_url);
  validate(file, node, s, has_url);
  for (const auto& [name, v] : variant_nodes) {
    ServiceConfig variant = s;
    bool variant_url = has_url;
    read_fields(file, v, variant, nullptr, &variant_url);
    validate(file, v, variant, variant_url);
    variants->emplace(name, std::move(variant));
  }
  return s;
}

}  // namespace h0::suite
