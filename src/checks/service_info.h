// What a case sees of a service (the runner starts it: run/service_registry.h): a JSON
// description passed to the case's worker with its request, never the API key, only the name of
// its environment variable.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "service/client.h"
#include "service/dialect.h"
#include "suite/platform.h"

namespace h0::checks {

struct ServiceInfo {
  bool ok = false;    // healthy when last started / probed
  std::string error;  // why not ok
  std::string url;    // base URL
  std::string model;  // the name to request (platform's `service.model`), empty: ask /v1/models
  std::string api_key_env;  // the variable holding the key (read by whoever sends requests)
  std::string command;      // the start command as run (empty: an external service)
  std::string log_path;     // the service's captured output
  std::string log_tail;     // its last lines when it failed to start
  double startup_s = 0;
  double request_timeout_s = 300;
  service::Dialect dialect;   // what the engine accepts (the platform's, else probed once)
  std::string variant;        // the platform's `service.variants` entry it runs; "" the base
  int64_t prefill_chunk = 0;  // tokens per prefill step, as the platform states; 0 unknown
  std::string kv_source = "metrics";  // where the engine reports its KV cache (ServiceConfig)
  suite::EngineProfiler profiler;     // how the engine profiles itself (ServiceConfig)
  nlohmann::json request = nlohmann::json::object();  // fields added to every request's body
  // The base service (a ServiceInfo as JSON) for a case that compares a variant against it
  // (checks/check.h, PreparedCase::needs_base_service); null otherwise.
  nlohmann::json base = nullptr;

  nlohmann::json to_json() const;
  static ServiceInfo from_json(const nlohmann::json& j);
  // A client for this service (API key read from the environment variable, if named).
  service::ClientOptions client_options() const;
};

}  // namespace h0::checks
