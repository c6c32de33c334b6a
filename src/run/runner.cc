#include "run/runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "backend/backend.h"
#include "base/error.h"
#include "io/safetensors_writer.h"
#include "mesh/communicator.h"
#include "run/isolation.h"
#include "run/service_registry.h"
#include "suite/filter.h"
#include "suite/matrix.h"

namespace h0::run {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Prepared {
  suite::Case c;
  std::unique_ptr<checks::PreparedCase> prepared;
};

// The suite's cases that pass the filter, in order.
std::vector<suite::Case> filtered_cases(const suite::Suite& suite, const std::string& filter) {
  checks::register_kinds_with_suite_parser();
  const suite::Filter f(filter);
  std::vector<suite::Case> out;
  for (suite::Case& c : suite::expand(suite)) {
    if (f.matches(c.id)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<Prepared> prepare_all(const suite::Suite& suite, const suite::Platform& platform,
                                  const std::string& filter) {
  std::vector<Prepared> out;
  for (const suite::Case& c : filtered_cases(suite, filter)) {
    const checks::CheckKind* kind = checks::find_kind(c.check->kind);
    if (kind == nullptr) suite::fail_at(c.check->where, "unknown kind '" + c.check->kind + "'");
    std::unique_ptr<checks::PreparedCase> prepared = kind->prepare(c, platform);
    // `timeout`, for the kinds that take one: read here, once, after the kind's own fields.
    if (std::find(kind->fields.begin(), kind->fields.end(), "timeout") != kind->fields.end()) {
      if (const YAML::Node t = checks::case_field(c, "timeout"); t.IsDefined())
        prepared->timeout_s = suite::parse_duration_s(c.check->file, t);
    }
    out.push_back({c, std::move(prepared)});
  }
  return out;
}

// Runs one case in this process; every failure becomes the result.
checks::CheckResult run_here(checks::PreparedCase& p, checks::RunContext& ctx) {
  const auto t0 = Clock::now();
  checks::CheckResult r;
  try {
    r = p.run(ctx);
  } catch (const backend::BackendError& e) {
    r.status = checks::Status::kError;
    r.message = e.what();
  } catch (const InputError& e) {
    r.status = checks::Status::kError;
    r.message = e.what();
  } catch (const mesh::MeshError&) {
    throw;  // the mesh is broken (a peer died or hangs): no later case can run; the run stays
            // incomplete
  } catch (const std::exception& e) {
    r.status = checks::Status::kError;
    r.message = std::string("internal error: ") + e.what();
  }
  r.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

void dump(const std::vector<Prepared>& cases, const suite::Suite& suite, const std::string& dir) {
  fs::create_directories(fs::path(dir) / "inputs");
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    nlohmann::json d = cases[i].prepared->describe();
    char name[64];
    std::snprintf(name, sizeof name, "inputs/%06zu.safetensors", i);
    std::vector<io::NamedTensor> tensors;
    for (auto& [n, t] : cases[i].prepared->dump_inputs()) tensors.push_back({n, t});
    if (!tensors.empty()) {
      io::write_safetensors((fs::path(dir) / name).string(), tensors);
      d["inputs_file"] = name;
    }
    list.push_back(d);
  }
  std::FILE* f = std::fopen((fs::path(dir) / "cases.json").c_str(), "w");
  if (f == nullptr) throw InputError(dir, "cannot write cases.json");
  const std::string text = nlohmann::json{{"suite", suite.name}, {"cases", list}}.dump(1) + "\n";
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

std::string service_log_dir(const RunOptions& options) {
  if (!options.service_log_dir.empty()) return options.service_log_dir;
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  return ((ec ? fs::path("/tmp") : tmp) / ("h0-services-" + std::to_string(::getpid()))).string();
}

// A report of no cases yet: which suite and platform, by name, file and content.
RunReport report_for(const suite::Suite& suite, const suite::Platform& platform) {
  RunReport report;
  report.suite_name = suite.name;
  report.suite_file = suite.file;
  report.suite_sha256 = suite.sha256;
  report.platform_name = platform.name;
  report.platform_file = platform.file;
  report.platform_sha256 = platform.sha256;
  return report;
}

// The worker's side: request "stack" -> stack info; request "<case index>" or
// "<case index>\n<service info JSON>" -> that case's result, as JSON.
std::string serve_request(checks::RunContext& ctx, std::vector<Prepared>& cases,
                          const std::string& request) {
  if (request == "stack") {
    try {
      return nlohmann::json{{"stack", ctx.backend().stack_info()}}.dump();
    } catch (const InputError& e) {
      return nlohmann::json{{"input_error", e.what()}}.dump();
    } catch (const std::exception& e) {
      return nlohmann::json{{"error", e.what()}}.dump();
    }
  }
  const size_t newline = request.find('\n');
  ctx.set_service(newline == std::string::npos
                      ? nlohmann::json()
                      : nlohmann::json::parse(request.substr(newline + 1)));
  // Invalid UTF-8 in a result (a model's text cut mid-character) is replaced, never thrown on.
  return run_here(*cases[std::stoul(request.substr(0, newline))].prepared, ctx)
      .to_json()
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Where requests are answered: in this process, or (isolated) by a worker process, started on
// the first request and again after one crashed or timed out.
class CaseChannel {
 public:
  CaseChannel(bool isolate, Worker::Serve serve) : isolate_(isolate), serve_(std::move(serve)) {}

  // The reply to `request`; "" when the worker crashed or timed out, with `result`'s status,
  // message and duration saying so.
  std::string ask(const std::string& request, double timeout_s, checks::CheckResult* result) {
    if (!isolate_) return serve_(request);
    if (!worker_ || !worker_->alive()) worker_ = std::make_unique<Worker>(serve_);
    std::string response, why;
    const auto t0 = Clock::now();
    switch (worker_->call(request, timeout_s, &response, &why)) {
      case Worker::Reply::kOk:
        return response;
      case Worker::Reply::kCrashed:
        result->status = checks::Status::kCrash;
        break;
      case Worker::Reply::kTimedOut:
        result->status = checks::Status::kTimeout;
        break;
    }
    result->message = "the platform's process " + why;
    result->duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return "";
  }

 private:
  bool isolate_;
  Worker::Serve serve_;
  std::unique_ptr<Worker> worker_;
};

// The report's stack from the worker's reply to "stack" (an error when it gave none). A
// platform file the backend cannot open with is the user's mistake: InputError.
nlohmann::json stack_of(const std::string& reply, const checks::CheckResult& failure,
                        const suite::Platform& platform) {
  if (reply.empty()) return {{"error", "opening the backend: " + failure.message}};
  const auto j = nlohmann::json::parse(reply);
  if (j.contains("input_error"))
    throw InputError(platform.file, j["input_error"].get<std::string>());
  return j.contains("stack") ? j["stack"] : nlohmann::json{{"error", j.value("error", "")}};
}

// The request for case `i`: its index, and the info of the service it needs (started now).
std::string case_request(size_t i, const checks::PreparedCase& prepared,
                         const suite::Platform& platform, const RunOptions& options,
                         std::unique_ptr<ServiceRegistry>* services) {
  std::string request = std::to_string(i);
  if (const std::string model = prepared.service_model(); !model.empty()) {
    if (!*services)
      *services = std::make_unique<ServiceRegistry>(platform, service_log_dir(options));
    const std::string variant = prepared.service_variant();
    checks::ServiceInfo info = (*services)->ensure(model, variant);
    if (prepared.needs_base_service() && !variant.empty())
      info.base = (*services)->ensure(model).to_json();
    request += "\n" + info.to_json().dump();
  }
  return request;
}

// An expected failure: a pass becomes xpass, a failure xfail (its message saying it was expected).
void apply_xfail(const std::string& reason, checks::CheckResult* r) {
  if (r->status == checks::Status::kPass) {
    r->status = checks::Status::kXpass;
    r->message = "expected to fail (" + reason + ") but passed";
  } else if (checks::is_failing(r->status)) {
    r->message = "expected failure (" + reason + "): " + r->message;
    r->status = checks::Status::kXfail;
  }
}

}  // namespace

bool RunReport::failed() const {
  for (const auto& c : cases) {
    if (checks::is_failing(c.result.status)) return true;
  }
  return false;
}

std::vector<std::string> list_cases(const suite::Suite& suite, const std::string& filter) {
  std::vector<std::string> ids;
  for (const suite::Case& c : filtered_cases(suite, filter)) ids.push_back(c.id);
  return ids;
}

RunReport run_suite(const suite::Suite& suite, const suite::Platform& platform,
                    const RunOptions& options, const CaseListener& listener,
                    const StartListener& on_start) {
  const auto start = Clock::now();
  std::vector<Prepared> cases = prepare_all(suite, platform, options.filter);
  RunReport report = report_for(suite, platform);
  if (!options.dump_dir.empty()) dump(cases, suite, options.dump_dir);
  if (!options.run) return report;

  checks::RunContext ctx(platform);
  ctx.set_world(options.world);
  ctx.set_store_path(options.store_path);
  std::unique_ptr<ServiceRegistry> services;  // started on the first case that needs one
  CaseChannel channel(options.isolate, [&](const std::string& request) {
    return serve_request(ctx, cases, request);
  });

  checks::CheckResult stack_failure;
  const std::string stack_reply = channel.ask("stack", platform.case_timeout_s, &stack_failure);
  report.stack = stack_of(stack_reply, stack_failure, platform);

  if (on_start) on_start(report, cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const suite::Case& c = cases[i].c;
    CaseOutcome outcome{c.id, c.check->id, c.check->kind, c.check->tags, {}};
    if (!c.check->skip_reason.empty()) {
      outcome.result.status = checks::Status::kSkip;
      outcome.result.message = c.check->skip_reason;
    } else {
      const checks::PreparedCase& prepared = *cases[i].prepared;
      const double timeout = options.timeout_s > 0    ? options.timeout_s
                             : prepared.timeout_s > 0 ? prepared.timeout_s
                                                      : platform.case_timeout_s;
      const std::string request = case_request(i, prepared, platform, options, &services);
      const std::string reply = channel.ask(request, timeout, &outcome.result);
      if (!reply.empty())
        outcome.result = checks::CheckResult::from_json(nlohmann::json::parse(reply));
      if (!c.check->xfail_reason.empty()) apply_xfail(c.check->xfail_reason, &outcome.result);
    }
    report.cases.push_back(std::move(outcome));
    if (listener) listener(i + 1, cases.size(), report.cases.back());
  }
  report.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace h0::run
