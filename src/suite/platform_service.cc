// The platform file's `service:` section: how the platform serves a model over the
// OpenAI-compatible API (a start command, or the URL of a service already running).
#include <string>

#include "service/dialect.h"
#include "suite/location.h"
#include "suite/platform.h"

namespace h0::suite {
namespace {

const char* const kServiceFields =
    "start, url, health, startup_timeout, stop_grace, request_timeout, env, api_key_env, model, "
    "dialect";

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

}  // namespace

ServiceConfig read_service_config(const std::string& file, const YAML::Node& node) {
  if (!node.IsMap()) {
    fail_at(file, node,
            "bad service: expected a mapping, e.g. {start: \"vllm serve {model} --port {port}\", "
            "url: \"http://127.0.0.1:{port}\"}");
  }
  ServiceConfig s;
  s.present = true;
  bool has_url = false;
  for_each_entry(
      file, node, [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& value) {
        if (key == "start") {
          s.start = string_value(file, value, "start");
        } else if (key == "url") {
          s.url = string_value(file, value, "url");
          has_url = true;
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
        } else {
          fail_at(
              file, key_node,
              "unknown field '" + key + "' in service (expected one of: " + kServiceFields + ")");
        }
      });
  if (s.start.empty() && !has_url) {
    fail_at(file, node,
            "service needs `start` (a command that serves the model) or `url` (a running service)");
  }
  if (s.start.empty() && s.url.find("{port}") != std::string::npos) {
    fail_at(
        file, node,
        "service has no `start`, so its `url` cannot use {port}: name the running service's port");
  }
  return s;
}

}  // namespace h0::suite
