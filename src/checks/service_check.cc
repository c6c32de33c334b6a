// kind: service — the platform's service for a model starts (or answers, when already running),
// becomes healthy, and lists a model; its startup time is the metric.
#include <algorithm>
#include <filesystem>
#include <optional>

#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "checks/service_info.h"

namespace h0::checks {
namespace {

class ServiceCase final : public PreparedCase {
 public:
  explicit ServiceCase(std::string model_dir) : model_dir_(std::move(model_dir)) {}

  std::string service_model() const override { return model_dir_; }

  CheckResult run(RunContext& ctx) override {
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    const ServiceInfo& info = h.info;
    // connect_service listed the models when the service names none; else list them now.
    std::vector<std::string> ids;
    std::optional<service::Result> listed;
    if (h.model_ids) {
      ids = *h.model_ids;
    } else {
      listed = h.client->models(&ids);
    }
    CheckResult out = result_for(h);
    out.details["models"] = ids;
    out.metrics.push_back({"startup_s", info.startup_s});
    if (listed && !listed->ok()) {
      out.status = Status::kFail;
      out.message = "GET /v1/models: " + failure_message(*listed);
      return out;
    }
    if (std::find(ids.begin(), ids.end(), h.model) == ids.end()) {
      out.status = Status::kFail;
      out.message = "the service does not list the model " + h.model;
      return out;
    }
    out.status = Status::kPass;
    out.message =
        info.command.empty()
            ? "running at " + info.url + ", serves " + h.model
            : "started in " + std::to_string(info.startup_s).substr(0, 5) + " s, serves " + h.model;
    return out;
  }

  nlohmann::json describe() const override { return {{"kind", "service"}, {"model", model_dir_}}; }

 private:
  std::string model_dir_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  const YAML::Node model = case_field(c, "model");
  if (!model.IsScalar()) fail(c, model, "kind service needs `model`: the model directory to serve");
  return std::make_unique<ServiceCase>(
      std::filesystem::absolute(resolve_case_path(c, model.Scalar())).lexically_normal().string());
}

}  // namespace

CheckKind service_check_kind() { return {"service", {"model"}, &prepare}; }

}  // namespace h0::checks
