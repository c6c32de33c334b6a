#include "checks/engine_profile.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "base/error.h"
#include "io/trace_profile.h"

namespace h0::checks {
namespace {

namespace fs = std::filesystem;

// POSTs `path`; "" on a 2xx answer, else why not.
std::string post(const ServiceHandle& h, const std::string& path) {
  std::string body;
  const service::Result r = h.client->post(path, "{}", &body);
  if (r.ok()) return "";
  return "POST " + path + ": " +
         (r.error.empty() ? "HTTP " + std::to_string(r.http_status) : r.error);
}

// The trace files in `dir` written since `since`, by size.
std::map<std::string, uintmax_t> new_traces(const std::string& dir, fs::file_time_type since) {
  std::map<std::string, uintmax_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file(ec) || name.find(".json") == std::string::npos) continue;
    if (e.last_write_time(ec) < since) continue;
    out[e.path().string()] = e.file_size(ec);
  }
  return out;
}

// Waits up to `wait_s` for new traces whose sizes hold still for a second; the one to read.
std::string wait_for_trace(const std::string& dir, fs::file_time_type since, double wait_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  std::map<std::string, uintmax_t> last;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto now = new_traces(dir, since);
    if (!now.empty() && now == last) {
      std::string best;
      for (const auto& [path, size] : now) {
        const bool rank0 = fs::path(path).filename().string().find("rank0") != std::string::npos;
        const bool best_rank0 =
            !best.empty() && fs::path(best).filename().string().find("rank0") != std::string::npos;
        if (best.empty() || (rank0 && !best_rank0) || (rank0 == best_rank0 && size > now.at(best)))
          best = path;
      }
      return best;
    }
    last = now;
  }
  return "";
}

nlohmann::json summary_of(const std::string& trace, const io::TraceProfile& p) {
  std::vector<const store::ProfileData*> heaviest;
  for (const auto& r : p.rows)
    if (r.name != "(step)") heaviest.push_back(&r);
  std::sort(heaviest.begin(), heaviest.end(),
            [](const auto* a, const auto* b) { return a->total_ns > b->total_ns; });
  double all = 0;
  for (const auto* r : heaviest) all += r->total_ns;
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < heaviest.size() && i < 5; ++i) {
    top.push_back({{"phase", heaviest[i]->phase},
                   {"name", heaviest[i]->name},
                   {"calls", heaviest[i]->count},
                   {"share", all > 0 ? heaviest[i]->total_ns / all : 0.0}});
  }
  return {{"trace", trace},
          {"stream", p.stream},
          {"steps", p.steps},
          {"prefill_steps", p.prefill_steps},
          {"decode_steps", p.decode_steps},
          {"mixed_steps", p.mixed_steps},
          {"rows", p.rows.size()},
          {"engine", p.metadata},
          {"notes", p.notes},
          {"top", top}};
}

}  // namespace

EngineProfileCapture::EngineProfileCapture(const ServiceHandle& h) {
  const suite::EngineProfiler& prof = h.info.profiler;
  if (!prof.present || !h.client) return;
  active_ = true;
  started_ = fs::file_time_type::clock::now() - std::chrono::seconds(1);
  error_ = post(h, prof.start);
}

void EngineProfileCapture::finish(const ServiceHandle& h, CheckResult* out) {
  if (!active_) return;
  const suite::EngineProfiler& prof = h.info.profiler;
  auto fail = [&](const std::string& why) { out->details["engine_profile"] = {{"error", why}}; };
  if (!error_.empty()) return fail("not started: " + error_);
  if (const std::string stop = post(h, prof.stop); !stop.empty()) return fail(stop);
  const std::string trace = wait_for_trace(prof.dir, started_, prof.wait_s);
  if (trace.empty()) {
    return fail("no trace appeared in " + prof.dir + " within " + std::to_string(int(prof.wait_s)) +
                " s of the stop");
  }
  io::TraceProfileOptions options;
  if (!prof.step_pattern.empty()) options.step_pattern = prof.step_pattern;
  try {
    const io::TraceProfile p = io::profile_trace(trace, options);
    out->profile.insert(out->profile.end(), p.rows.begin(), p.rows.end());
    out->details["engine_profile"] = summary_of(trace, p);
  } catch (const InputError& e) {
    fail(std::string("unreadable trace: ") + e.what());
  }
}

}  // namespace h0::checks
