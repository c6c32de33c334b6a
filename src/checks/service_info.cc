#include "checks/service_info.h"

#include <cstdlib>

namespace h0::checks {

nlohmann::json ServiceInfo::to_json() const {
  return {{"ok", ok},
          {"error", error},
          {"url", url},
          {"model", model},
          {"api_key_env", api_key_env},
          {"command", command},
          {"log_path", log_path},
          {"log_tail", log_tail},
          {"startup_s", startup_s},
          {"request_timeout_s", request_timeout_s},
          {"dialect", dialect.to_json()},
          {"variant", variant},
          {"prefill_chunk", prefill_chunk},
          {"kv_source", kv_source},
          {"profiler", profiler.to_json()},
          {"request", request},
          {"base", base}};
}

ServiceInfo ServiceInfo::from_json(const nlohmann::json& j) {
  ServiceInfo s;
  s.ok = j.value("ok", false);
  s.error = j.value("error", "");
  s.url = j.value("url", "");
  s.model = j.value("model", "");
  s.api_key_env = j.value("api_key_env", "");
  s.command = j.value("command", "");
  s.log_path = j.value("log_path", "");
  s.log_tail = j.value("log_tail", "");
  s.startup_s = j.value("startup_s", 0.0);
  s.request_timeout_s = j.value("request_timeout_s", 300.0);
  if (j.contains("dialect")) s.dialect = service::Dialect::from_json(j["dialect"]);
  s.variant = j.value("variant", "");
  s.prefill_chunk = j.value("prefill_chunk", int64_t(0));
  s.kv_source = j.value("kv_source", "metrics");
  if (j.contains("profiler")) s.profiler = suite::EngineProfiler::from_json(j["profiler"]);
  if (j.contains("request") && j["request"].is_object()) s.request = j["request"];
  if (j.contains("base")) s.base = j["base"];
  return s;
}

service::ClientOptions ServiceInfo::client_options() const {
  service::ClientOptions o;
  o.base_url = url;
  o.request_timeout_s = request_timeout_s;
  o.idle_timeout_s = request_timeout_s;
  if (!api_key_env.empty()) {
    if (const char* key = std::getenv(api_key_env.c_str())) o.api_key = key;
  }
  return o;
}

}  // namespace h0::checks
