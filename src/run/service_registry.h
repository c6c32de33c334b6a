// The services a run talks to: started by the runner (in the harness's own process, so a
// crashing case's worker cannot take them down) from the platform file's `service:` section,
// once per model directory, the first time a case needs one, and stopped when the run ends.
// What a case sees of a service is a checks::ServiceInfo (checks/service_info.h).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "checks/service_info.h"
#include "service/launcher.h"
#include "suite/platform.h"

namespace h0::run {

class ServiceRegistry {
 public:
  // `log_dir`: where the services' logs go (created).
  ServiceRegistry(const suite::Platform& platform, std::string log_dir);
  ~ServiceRegistry();  // stops every service it started

  // The service for `model_dir` (absolute), started on first use: the platform's `service`, or
  // its variant `variant` (a serving feature turned on). Starting a variant stops the variant
  // services started before it (they start again when a later case needs them), so at most the
  // base and one variant run at once. Never throws for a service that fails to start, or a
  // variant the platform does not define: the info says why.
  checks::ServiceInfo ensure(const std::string& model_dir, const std::string& variant = "");
  // Stops every service (idempotent).
  void stop_all();

 private:
  const suite::Platform& platform_;
  std::string log_dir_;
  struct Entry {
    std::unique_ptr<service::ServiceProcess> process;
    checks::ServiceInfo info;
    std::string variant;
  };
  std::map<std::string, Entry> services_;
  int started_ = 0;  // services started, for their log files' names  // by the start command before
                     // {port} is filled in
};

// `text` with every "{name}" of `values` replaced.
std::string fill_placeholders(std::string text, const std::map<std::string, std::string>& values);

// The running harness binary's path (/proc/self/exe), "harness" when it cannot be read: what a
// platform's `{harness}` expands to, and what `harness ab` runs each round with.
std::string self_executable();

}  // namespace h0::run
