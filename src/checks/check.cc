#include "checks/check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "backend/backend.h"
#include "base/error.h"
#include "checks/collective_check.h"
#include "checks/dump_check.h"
#include "checks/load_check.h"
#include "checks/model_check.h"
#include "checks/op_check.h"
#include "checks/plan_check.h"
#include "checks/rounding_check.h"
#include "checks/service_checks.h"
#include "mesh/communicator.h"
#include "suite/location.h"
#include "suite/suite.h"

namespace h0::checks {

ProfileRow summarize(std::string phase, std::string name, std::vector<double> samples) {
  ProfileRow r;
  r.phase = std::move(phase);
  r.name = std::move(name);
  r.count = static_cast<int64_t>(samples.size());
  r.samples_ns = samples;
  if (samples.empty()) return r;
  std::sort(samples.begin(), samples.end());
  for (double s : samples) r.total_ns += s;
  r.min_ns = samples.front();
  const size_t n = samples.size();
  r.median_ns = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  r.p99_ns =
      samples[std::min(n - 1, static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n))) - 1)];
  r.mean_ns = r.total_ns / static_cast<double>(n);
  double var = 0;
  for (double s : samples) var += (s - r.mean_ns) * (s - r.mean_ns);
  r.stddev_ns = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0;
  return r;
}

nlohmann::json CheckResult::to_json() const {
  nlohmann::json j = {
      {"status", status_name(status)}, {"message", message}, {"duration_s", duration_s}};
  nlohmann::json m = nlohmann::json::object();
  for (const auto& [k, v] : metrics)
    m[k] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(std::to_string(v));
  j["metrics"] = m;
  nlohmann::json p = nlohmann::json::array();
  for (const auto& r : profile) {
    p.push_back({{"phase", r.phase},
                 {"name", r.name},
                 {"count", r.count},
                 {"total_ns", r.total_ns},
                 {"min_ns", r.min_ns},
                 {"median_ns", r.median_ns},
                 {"p99_ns", r.p99_ns},
                 {"mean_ns", r.mean_ns},
                 {"stddev_ns", r.stddev_ns},
                 {"bytes", r.bytes},
                 {"flops", r.flops},
                 {"samples_ns", r.samples_ns}});
  }
  j["profile"] = p;
  j["details"] = details;
  j["artifacts"] = artifacts;
  return j;
}

CheckResult CheckResult::from_json(const nlohmann::json& j) {
  CheckResult r;
  parse_status(j.at("status").get<std::string>(), &r.status);
  r.message = j.value("message", "");
  r.duration_s = j.value("duration_s", 0.0);
  for (const auto& [k, v] : j.at("metrics").items()) {
    r.metrics.emplace_back(k, v.is_number() ? v.get<double>() : std::stod(v.get<std::string>()));
  }
  for (const auto& p : j.at("profile")) {
    ProfileRow row;
    row.phase = p.at("phase");
    row.name = p.at("name");
    row.count = p.at("count");
    row.total_ns = p.at("total_ns");
    row.min_ns = p.at("min_ns");
    row.median_ns = p.at("median_ns");
    row.p99_ns = p.at("p99_ns");
    row.mean_ns = p.at("mean_ns");
    row.stddev_ns = p.at("stddev_ns");
    row.bytes = p.at("bytes");
    row.flops = p.at("flops");
    row.samples_ns = p.at("samples_ns").get<std::vector<double>>();
    r.profile.push_back(std::move(row));
  }
  r.details = j.at("details");
  r.artifacts = j.at("artifacts").get<std::vector<std::string>>();
  return r;
}

RunContext::RunContext(const suite::Platform& platform) : platform_(platform) {}
RunContext::~RunContext() = default;

mesh::Communicator& RunContext::world() {
  if (world_ != nullptr) return *world_;
  static const std::unique_ptr<mesh::Communicator> single = mesh::make_single_communicator();
  return *single;
}

backend::Backend& RunContext::backend() {
  if (!backend_)
    backend_ = backend::Backend::open({platform_.backend, platform_.lib, platform_.options});
  return *backend_;
}

const std::vector<CheckKind>& check_kinds() {
  static const std::vector<CheckKind> kinds = {op_check_kind(),
                                               model_check_kind(),
                                               image_check_kind(),
                                               layer_check_kind(),
                                               prefill_consistency_check_kind(),
                                               plan_check_kind(),
                                               load_check_kind(),
                                               dump_check_kind(),
                                               collective_check_kind(),
                                               service_check_kind(),
                                               e2e_text_check_kind(),
                                               e2e_image_check_kind(),
                                               determinism_check_kind(),
                                               e2e_load_check_kind(),
                                               eval_check_kind(),
                                               rounding_check_kind(),
                                               serving_check_kind(),
                                               structured_output_check_kind(),
                                               tool_call_check_kind(),
                                               chat_template_check_kind(),
                                               reasoning_check_kind(),
                                               tool_agreement_check_kind(),
                                               kv_capacity_check_kind(),
                                               prompt_logprobs_check_kind()};
  return kinds;
}

const CheckKind* find_kind(const std::string& name) {
  for (const auto& k : check_kinds()) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

void register_kinds_with_suite_parser() {
  for (const auto& k : check_kinds()) suite::register_kind({k.name, k.fields});
}

void fail(const suite::Case& c, const YAML::Node& node, const std::string& message) {
  suite::fail_at(node.IsDefined() ? suite::location_of(c.check->file, node) : c.check->where,
                 message);
}

namespace {

// How a value that is not of the expected type reads in a message.
std::string shown(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a sequence";
  return "nothing";
}

}  // namespace

std::optional<int64_t> int_of(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  int64_t v = 0;
  if (!YAML::convert<int64_t>::decode(node, v)) return std::nullopt;
  return v;
}

std::optional<double> double_of(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  double v = 0;
  if (!YAML::convert<double>::decode(node, v)) return std::nullopt;
  return v;
}

int64_t as_int(const suite::Case& c, const YAML::Node& node, const std::string& what, int64_t min) {
  const std::optional<int64_t> v = int_of(node);
  if (!v) fail(c, node, what + " must be an integer, got " + shown(node));
  if (*v < min) fail(c, node, what + " must be >= " + std::to_string(min));
  return *v;
}

double as_double(const suite::Case& c, const YAML::Node& node, const std::string& what,
                 const std::string& unit) {
  const std::optional<double> v = double_of(node);
  if (!v)
    fail(c, node,
         what + " must be a number" + (unit.empty() ? "" : " of " + unit) + ", got " + shown(node));
  return *v;
}

bool as_bool(const suite::Case& c, const YAML::Node& node, const std::string& what) {
  bool v = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, v))
    fail(c, node, what + " must be true or false, got " + shown(node));
  return v;
}

std::string as_string(const suite::Case& c, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) fail(c, node, what + " must be a string, got " + shown(node));
  return node.Scalar();
}

int64_t field_int(const suite::Case& c, const std::string& name, int64_t fallback, int64_t min) {
  const YAML::Node n = case_field(c, name);
  return n.IsDefined() ? as_int(c, n, name, min) : fallback;
}

double field_double(const suite::Case& c, const std::string& name, double fallback) {
  const YAML::Node n = case_field(c, name);
  if (!n.IsDefined()) return fallback;
  const double v = as_double(c, n, name);
  if (!std::isfinite(v)) fail(c, n, name + " must be a finite number, got " + shown(n));
  return v;
}

bool field_bool(const suite::Case& c, const std::string& name, bool fallback) {
  const YAML::Node n = case_field(c, name);
  return n.IsDefined() ? as_bool(c, n, name) : fallback;
}

std::string field_string(const suite::Case& c, const std::string& name,
                         const std::string& fallback) {
  const YAML::Node n = case_field(c, name);
  return n.IsDefined() ? as_string(c, n, name) : fallback;
}

std::string resolve_case_path(const suite::Case& c, const std::string& path) {
  std::filesystem::path p(path);
  // A name no file system holds (NAME_MAX 255 bytes a component) is the suite's error, not the
  // file system's: say which case and name, before any filesystem call throws on it.
  for (const auto& part : p) {
    if (part.native().size() > 255) {
      throw InputError(c.check->where.str(), "case " + c.id + ": path '" + path.substr(0, 60) +
                                                 "...' has a name of " +
                                                 std::to_string(part.native().size()) +
                                                 " bytes (a file name holds at most 255)");
    }
  }
  std::error_code ec;
  if (p.is_relative() && !std::filesystem::exists(p, ec))
    p = std::filesystem::path(c.check->file).parent_path().parent_path() / path;
  return p.string();
}

YAML::Node case_field(const suite::Case& c, const std::string& name) {
  for (const auto& [param, value] : c.params) {
    if (param == name) return value;
  }
  return c.check->node[name];
}

}  // namespace h0::checks
