#include "run/service_registry.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace h0::run {
namespace fs = std::filesystem;

std::string fill_placeholders(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [name, value] : values) {
    const std::string key = "{" + name + "}";
    for (size_t at = text.find(key); at != std::string::npos;
         at = text.find(key, at + value.size())) {
      text.replace(at, key.size(), value);
    }
  }
  return text;
}

std::string self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "harness" : p.string();
}

namespace {

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// The dialect of a healthy service: the platform's (then only whether token-id prompts are
// taken is probed), else found by a few one-token requests for the model the platform names,
// else the first /v1/models lists.
service::Dialect probe(const checks::ServiceInfo& info, const std::string& stated) {
  service::ClientOptions o = info.client_options();
  o.retries = 1;
  service::Client client(o);
  std::string model = info.model;
  if (model.empty()) {
    std::vector<std::string> ids;
    if (client.models(&ids).ok() && !ids.empty()) model = ids[0];
  }
  if (stated.empty()) return service::probe_dialect(client, model);
  service::Dialect d = *service::dialect_named(stated);
  if (!service::probe_id_prompts(client, model, &d)) d.how = "platform file; " + d.how;
  return d;
}

}  // namespace

ServiceRegistry::ServiceRegistry(const suite::Platform& platform, std::string log_dir)
    : platform_(platform), log_dir_(std::move(log_dir)) {}

ServiceRegistry::~ServiceRegistry() { stop_all(); }

void ServiceRegistry::stop_all() {
  for (auto& [key, entry] : services_) {
    if (entry.process) entry.process->stop();
  }
}

checks::ServiceInfo ServiceRegistry::ensure(const std::string& model_dir,
                                            const std::string& variant) {
  checks::ServiceInfo info;
  info.variant = variant;
  if (!platform_.service.present) {
    info.error = "the platform file " + platform_.file +
                 " has no `service:` section (how to start or reach the service)";
    return info;
  }
  auto named = platform_.service_variants.find(variant);
  if (!variant.empty() && named == platform_.service_variants.end()) {
    info.error = "the platform file " + platform_.file + " has no service variant '" + variant +
                 "' (service: {variants: {" + variant + ": {...}}})";
    return info;
  }
  const suite::ServiceConfig& cfg = variant.empty() ? platform_.service : named->second;
  const std::map<std::string, std::string> fixed = {
      {"harness", shell_quoted(self_executable())},
      {"model", shell_quoted(model_dir)},
      {"platform", shell_quoted(fs::absolute(platform_.file).string())}};
  // One service per distinct command: a command without {model} serves every model, and a
  // variant that changes only the request or prefill_chunk shares its base's process.
  const std::string key =
      fill_placeholders(cfg.start, fixed) + "\n" + fill_placeholders(cfg.url, fixed);
  if (auto it = services_.find(key); it != services_.end()) {
    checks::ServiceInfo known = it->second.info;
    known.variant = variant;
    known.prefill_chunk = cfg.prefill_chunk;
    known.kv_source = cfg.kv_source;
    known.profiler = cfg.profiler;
    known.request = cfg.request;
    if (known.ok && it->second.process && !it->second.process->running()) {
      known.ok = false;
      known.error = "the service exited during the run";
      known.log_tail = it->second.process->log_tail();
    }
    return known;
  }
  if (!variant.empty()) {  // one variant at a time: its engine may hold the memory of a whole one
    for (auto it = services_.begin(); it != services_.end();) {
      if (it->second.variant.empty()) {
        ++it;
        continue;
      }
      if (it->second.process) it->second.process->stop();
      it = services_.erase(it);
    }
  }
  std::map<std::string, std::string> values = fixed;
  values["port"] = std::to_string(service::free_port());
  service::LaunchSpec spec;
  spec.command = fill_placeholders(cfg.start, values);
  spec.url = fill_placeholders(cfg.url, values);
  spec.health = cfg.health;
  spec.startup_timeout_s = cfg.startup_timeout_s;
  spec.stop_grace_s = cfg.stop_grace_s;
  spec.env = cfg.env;
  std::error_code ec;
  fs::create_directories(log_dir_, ec);
  spec.log_path =
      (fs::path(log_dir_) / ("service-" + std::to_string(++started_) + ".log")).string();

  Entry entry;
  entry.process = std::make_unique<service::ServiceProcess>();
  info.url = spec.url;
  info.model = cfg.model;
  info.api_key_env = cfg.api_key_env;
  info.command = spec.command;
  info.log_path = spec.command.empty() ? "" : spec.log_path;
  info.request_timeout_s = cfg.request_timeout_s;
  info.prefill_chunk = cfg.prefill_chunk;
  info.kv_source = cfg.kv_source;
  info.profiler = cfg.profiler;
  info.request = cfg.request;
  info.ok = entry.process->start(spec);
  info.startup_s = entry.process->startup_s();
  if (!info.ok) {
    info.error = entry.process->error();
    info.log_tail = entry.process->log_tail();
  } else {
    info.dialect = probe(info, cfg.dialect);
  }
  entry.info = info;
  entry.variant = variant;
  services_.emplace(key, std::move(entry));
  return info;
}

}  // namespace h0::run
