// The contract every check kind implements (one file per kind, src/checks/<kind>_check.cc),
// and the result every check returns. A kind is a row of a table: its name, the YAML fields it
// accepts, and `prepare`, which turns one expanded suite case into a PreparedCase that runs.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "store/run_data.h"
#include "suite/matrix.h"
#include "suite/platform.h"
#include "tensor/tensor.h"

namespace h0::backend {
class Backend;
}
namespace h0::mesh {
class Communicator;
}

namespace h0::checks {

// The status vocabulary and its rules are base/status.h's (one table for the whole harness).
using h0::is_failing;
using h0::parse_status;
using h0::Status;
using h0::status_name;

// Timings of one measured phase (e.g. the "steady" repetitions of a kernel), exactly as the
// store keeps them: count, total/min/median/p99/mean/stddev ns, bytes, flops, raw samples.
using ProfileRow = store::ProfileData;
// Summary statistics of raw samples (nearest-rank p99).
ProfileRow summarize(std::string phase, std::string name, std::vector<double> samples_ns);

struct CheckResult {
  Status status = Status::kError;
  std::string message;  // why it failed / was skipped, human-readable
  std::vector<std::pair<std::string, double>> metrics;
  std::vector<ProfileRow> profile;
  nlohmann::json details =
      nlohmann::json::object();        // kind-specific evidence (routes, worst element, ...)
  std::vector<std::string> artifacts;  // files written
  double duration_s = 0;

  nlohmann::json to_json() const;
  static CheckResult from_json(const nlohmann::json& j);
};

// What a prepared case sees when it runs: the platform and its backend (opened on first use,
// in the process that runs the case).
class RunContext {
 public:
  explicit RunContext(const suite::Platform& platform);
  ~RunContext();
  const suite::Platform& platform() const { return platform_; }
  // Opens the platform's backend on first use. Throws InputError / BackendError.
  backend::Backend& backend();
  // The mesh this run spans: the communicator `harness run` was given (multi-rank runs under
  // mpirun), else a process-wide single-rank one.
  mesh::Communicator& world();
  void set_world(mesh::Communicator* c) { world_ = c; }
  // The service this case talks to (a ServiceInfo as JSON, checks/service_info.h), set by
  // the runner for cases whose service_model() is not empty; null otherwise.
  const nlohmann::json& service() const { return service_; }
  void set_service(nlohmann::json s) { service_ = std::move(s); }
  // The results store of the run (`harness run --db`), read by checks whose reference is an
  // earlier run in it (an eval check's `reference: label:stack=gpu-ref`); "" when there is none.
  const std::string& store_path() const { return store_path_; }
  void set_store_path(std::string path) { store_path_ = std::move(path); }

 private:
  const suite::Platform& platform_;
  std::unique_ptr<backend::Backend> backend_;
  mesh::Communicator* world_ = nullptr;
  nlohmann::json service_;
  std::string store_path_;
};

class PreparedCase {
 public:
  virtual ~PreparedCase() = default;
  // Runs the case. Errors of the platform become results; a bug of ours may throw.
  virtual CheckResult run(RunContext& ctx) = 0;
  // For `--dump-cases`: the case as JSON plus the tensors it would feed the platform.
  virtual nlohmann::json describe() const = 0;
  virtual std::vector<std::pair<std::string, tensor::Tensor>> dump_inputs() const { return {}; }
  // The model directory (absolute) whose service the case talks to; empty: it needs none.
  // The runner starts that service (platform `service:`) before the case runs.
  virtual std::string service_model() const { return {}; }
  // The platform's service variant (`service.variants`) the case needs; "" the base service.
  virtual std::string service_variant() const { return {}; }
  // Whether the case also compares against the base service (ServiceInfo::base).
  virtual bool needs_base_service() const { return false; }
  double timeout_s = 0;  // 0: the platform's case_timeout
};

struct CheckKind {
  const char* name;
  std::vector<std::string> fields;  // accepted YAML fields besides the common ones
  // Validates the case's fields (errors at file:line:col) and prepares it.
  std::unique_ptr<PreparedCase> (*prepare)(const suite::Case& c, const suite::Platform& platform);
};

// The table of check kinds; registers their schemas with the suite parser on first use.
const std::vector<CheckKind>& check_kinds();
const CheckKind* find_kind(const std::string& name);
void register_kinds_with_suite_parser();

// The value of field `name` for a case: its matrix parameter if it has one, else the check's
// (defaults already merged). An undefined node if neither has it.
YAML::Node case_field(const suite::Case& c, const std::string& name);

// Throws the user error `message` at `node`'s place in the suite file, or at the check when
// the node is absent: "suites/x.yaml:12:5: message".
[[noreturn]] void fail(const suite::Case& c, const YAML::Node& node, const std::string& message);

// A case's YAML values, read at the node and failing there (the node's file:line:col):
// "<what> must be an integer, got 'x'", "<what> must be >= <min>", ...
// The value of a scalar node when it reads as that type; nullopt otherwise.
std::optional<int64_t> int_of(const YAML::Node& node);
std::optional<double> double_of(const YAML::Node& node);
int64_t as_int(const suite::Case& c, const YAML::Node& node, const std::string& what,
               int64_t min = std::numeric_limits<int64_t>::min());
// Any YAML number (.inf and .nan included). `unit`, when given, is named in the message:
// "ttft_ms must be a number of milliseconds".
double as_double(const suite::Case& c, const YAML::Node& node, const std::string& what,
                 const std::string& unit = "");
bool as_bool(const suite::Case& c, const YAML::Node& node, const std::string& what);
std::string as_string(const suite::Case& c, const YAML::Node& node, const std::string& what);

// The same for the case's field `name` (case_field), `fallback` when the case does not have it.
// field_double takes finite numbers only.
int64_t field_int(const suite::Case& c, const std::string& name, int64_t fallback,
                  int64_t min = std::numeric_limits<int64_t>::min());
double field_double(const suite::Case& c, const std::string& name, double fallback);
bool field_bool(const suite::Case& c, const std::string& name, bool fallback);
std::string field_string(const suite::Case& c, const std::string& name,
                         const std::string& fallback);

// A path a case names (golden, model, dump directory): as written when it exists (relative to
// the working directory), else relative to the repository holding the suite (suites/x.yaml).
std::string resolve_case_path(const suite::Case& c, const std::string& path);

}  // namespace h0::checks
