// The services a run talks to: started by the runner (in the harness's own process, so a
// crashing case's worker cannot take them down) from the platform file's `service:` section,
// once per model directory, the first time a case needs one, and stopped when the run ends.
// What a case sees of a service is a JSON description (ServiceInfo), passed to the case's
// worker with its request: never the API key, only the name of its environment variable.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "service/client.h"
#include "service/launcher.h"
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
  service::Dialect dialect;  // what the engine accepts (the platform's, else probed once)

  nlohmann::json to_json() const;
  static ServiceInfo from_json(const nlohmann::json& j);
  // A client for this service (API key read from the environment variable, if named).
  service::ClientOptions client_options() const;
};

class ServiceRegistry {
 public:
  // `log_dir`: where the services' logs go (created).
  ServiceRegistry(const suite::Platform& platform, std::string log_dir);
  ~ServiceRegistry();  // stops every service it started

  // The service for `model_dir` (absolute), started on first use. Never throws for a service
  // that fails to start: the info says why.
  ServiceInfo ensure(const std::string& model_dir);
  // Stops every service (idempotent).
  void stop_all();

 private:
  const suite::Platform& platform_;
  std::string log_dir_;
  struct Entry {
    std::unique_ptr<service::ServiceProcess> process;
    ServiceInfo info;
  };
  std::map<std::string, Entry> services_;  // by the start command before {port} is filled in
};

// `text` with every "{name}" of `values` replaced.
std::string fill_placeholders(std::string text, const std::map<std::string, std::string>& values);

// The running harness binary's path (/proc/self/exe), "harness" when it cannot be read: what a
// platform's `{harness}` expands to, and what `harness ab` runs each round with.
std::string self_executable();

}  // namespace h0::checks
