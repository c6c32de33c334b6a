// kind: e2e_load — `requests` streamed requests (variants of one prompt) at a fixed
// `concurrency`, or arriving as a Poisson process at `rate` requests/s (seeded): p50/p90/p99 of
// TTFT, TPOT, ITL and E2E latency, output tokens/s, and goodput — the requests/s that met every
// SLO (`slo: {ttft_ms, tpot_ms, e2e_ms}`), with `min_goodput` (a fraction) as the pass bar.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <thread>

#include "checks/e2e_request.h"
#include "checks/engine_profile.h"
#include "checks/service_checks.h"

namespace h0::checks {
namespace {

using Clock = std::chrono::steady_clock;

struct Slo {
  double ttft_ms = 0, tpot_ms = 0, e2e_ms = 0;  // 0: no objective
};

struct LoadSpec {
  E2eRequest req;
  int64_t requests = 32, concurrency = 4;
  double rate = 0;  // requests/s; 0: closed loop at `concurrency`
  uint64_t arrival_seed = 0;
  Slo slo;
  double min_goodput = 0;
};

// Nearest-rank percentile of unsorted samples; -1 when there are none.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t rank = size_t(std::ceil(p / 100.0 * double(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

bool meets(const Slo& slo, const Latency& l) {
  return (slo.ttft_ms <= 0 || (l.ttft_ms >= 0 && l.ttft_ms <= slo.ttft_ms)) &&
         (slo.tpot_ms <= 0 || l.tpot_ms < 0 || l.tpot_ms <= slo.tpot_ms) &&
         (slo.e2e_ms <= 0 || l.e2e_ms <= slo.e2e_ms);
}

// Sends the load's requests: open loop (Poisson arrivals at `rate`) or closed loop
// (`concurrency` clients, each sending its next request when one ends).
void send_load(const ServiceHandle& h, const service::Request& base, const LoadSpec& spec,
               std::vector<service::Result>* results) {
  const size_t n = results->size();
  auto send = [&](size_t i) {
    (*results)[i] = h.client->complete(request_variant(base, int64_t(i)));
  };
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  if (spec.rate > 0) {
    std::mt19937_64 rng(spec.arrival_seed);
    std::exponential_distribution<double> gap(spec.rate);
    double at = 0;
    for (size_t i = 0; i < n; ++i) {
      std::this_thread::sleep_until(
          t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at)));
      threads.emplace_back(send, i);
      at += gap(rng);
    }
  } else {
    std::atomic<size_t> next{0};
    for (int64_t c = 0; c < spec.concurrency; ++c) {
      threads.emplace_back([&] {
        for (size_t i = next++; i < n; i = next++) send(i);
      });
    }
  }
  for (auto& t : threads) t.join();
}

// The engine's own profile (the platform's service.profiler), after the load has warmed it up:
// a fixed workload — kProfiledRequests of the load's requests, one at a time, so every run of
// it makes the same steps (one prefill, then decode steps of one sequence) — bracketed by the
// profiler's start and stop.
constexpr int64_t kProfiledRequests = 4;

void profile_engine(const ServiceHandle& h, const service::Request& base, CheckResult* out) {
  EngineProfileCapture engine(h);
  if (!engine.active()) return;
  for (int64_t i = 0; i < kProfiledRequests; ++i) h.client->complete(request_variant(base, i));
  engine.finish(h, out);
  if (out->details.contains("engine_profile"))
    out->details["engine_profile"]["workload"] =
        std::to_string(kProfiledRequests) + " of the load's requests, one at a time";
}

class LoadCase final : public PreparedCase {
 public:
  explicit LoadCase(LoadSpec spec) : spec_(std::move(spec)) {}

  std::string service_model() const override { return spec_.req.model_dir; }

  CheckResult run(RunContext& ctx) override {
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    service::Request base = spec_.req.request;
    base.model = h.model;
    base.stream = true;
    const AdaptedRequest adapted = adapt_request(h, spec_.req.model_dir, &base);
    if (!adapted.cannot.empty()) {
      CheckResult skipped = result_for(h, spec_.req);
      skipped.status = Status::kSkip;
      skipped.message = "not run: " + adapted.cannot;
      return skipped;
    }

    const size_t n = size_t(spec_.requests);
    std::vector<service::Result> results(n);
    const auto t0 = Clock::now();
    send_load(h, base, spec_, &results);
    const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    CheckResult out = result_for(h, spec_.req);
    profile_engine(h, base, &out);

    std::vector<double> ttft, tpot, itl, e2e;
    int64_t failed = 0, good = 0;
    double tokens = 0;
    std::string first_failure;
    for (const auto& r : results) {
      if (!r.ok()) {
        if (failed++ == 0) first_failure = failure_message(r);
        continue;
      }
      const Latency l = latency_of(r);
      if (l.ttft_ms >= 0) ttft.push_back(l.ttft_ms);
      if (l.tpot_ms >= 0) tpot.push_back(l.tpot_ms);
      itl.insert(itl.end(), l.itl_ms.begin(), l.itl_ms.end());
      e2e.push_back(l.e2e_ms);
      tokens += double(l.tokens);
      good += meets(spec_.slo, l);
    }
    if (!adapted.notes.empty()) out.details["adapted"] = adapted.notes;
    out.details["mode"] = spec_.rate > 0 ? "poisson rate " + std::to_string(spec_.rate) + "/s"
                                         : "concurrency " + std::to_string(spec_.concurrency);
    const std::pair<const char*, std::vector<double>*> series[] = {
        {"ttft", &ttft}, {"tpot", &tpot}, {"itl", &itl}, {"e2e", &e2e}};
    for (const auto& [name, v] : series) {
      for (double p : {50.0, 90.0, 99.0}) {
        out.metrics.push_back(
            {std::string(name) + "_p" + std::to_string(int(p)) + "_ms", percentile(*v, p)});
      }
      std::vector<double> ns;
      for (double ms : *v) ns.push_back(ms * 1e6);
      if (!ns.empty()) out.profile.push_back(summarize(name, std::string(name) + " latency", ns));
    }
    const double goodput_fraction = double(good) / double(n);
    out.metrics.push_back({"output_tokens_per_s", tokens / wall_s});
    out.metrics.push_back({"requests_per_s", double(n - size_t(failed)) / wall_s});
    out.metrics.push_back({"goodput_requests_per_s", double(good) / wall_s});
    out.metrics.push_back({"goodput_fraction", goodput_fraction});
    out.metrics.push_back({"failed_requests", double(failed)});
    char summary[256];
    std::snprintf(summary, sizeof summary,
                  "%zu requests in %.2f s: %.0f output tok/s, TTFT p50 %.1f ms, TPOT p50 %.2f ms, "
                  "goodput %.0f%%",
                  n, wall_s, tokens / wall_s, percentile(ttft, 50), percentile(tpot, 50),
                  goodput_fraction * 100);
    out.status = Status::kPass;
    out.message = summary;
    if (failed > 0) {
      out.status = Status::kFail;
      out.message = std::to_string(failed) + " of " + std::to_string(n) +
                    " requests failed (first: " + first_failure + "); " + summary;
    } else if (goodput_fraction < spec_.min_goodput) {
      out.status = Status::kFail;
      out.message = "goodput " + std::to_string(int(goodput_fraction * 100)) +
                    "% is below min_goodput " + std::to_string(int(spec_.min_goodput * 100)) +
                    "%; " + summary;
    }
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "e2e_load"},         {"model", spec_.req.model_dir},
            {"requests", spec_.requests}, {"concurrency", spec_.concurrency},
            {"rate", spec_.rate},         {"request", service::Client::body(spec_.req.request)}};
  }

 private:
  LoadSpec spec_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  LoadSpec s;
  s.req = parse_e2e_request(c);
  s.req.request.sampling.ignore_eos =
      field_bool(c, "ignore_eos", true);  // equal lengths unless told otherwise
  s.requests = field_int(c, "requests", 32, 1);
  s.concurrency = field_int(c, "concurrency", 4, 1);
  s.rate = field_double(c, "rate", 0);
  if (s.rate < 0) fail(c, case_field(c, "rate"), "rate must be > 0 (requests per second)");
  if (case_field(c, "rate").IsDefined() && case_field(c, "concurrency").IsDefined()) {
    fail(c, case_field(c, "rate"),
         "give `concurrency` (closed loop) or `rate` (Poisson arrivals), not both");
  }
  s.arrival_seed = uint64_t(field_int(c, "arrival_seed", 0, 0));
  s.min_goodput = field_double(c, "min_goodput", 0);
  if (s.min_goodput < 0 || s.min_goodput > 1)
    fail(c, case_field(c, "min_goodput"), "min_goodput must be in [0, 1]");
  if (const YAML::Node slo = case_field(c, "slo"); slo.IsDefined()) {
    if (!slo.IsMap())
      fail(c, slo, "slo must be a mapping {ttft_ms: 500, tpot_ms: 50, e2e_ms: 5000}");
    for (const auto& kv : slo) {
      const std::string key = kv.first.Scalar();
      double* target = key == "ttft_ms"   ? &s.slo.ttft_ms
                       : key == "tpot_ms" ? &s.slo.tpot_ms
                       : key == "e2e_ms"  ? &s.slo.e2e_ms
                                          : nullptr;
      if (target == nullptr)
        fail(c, kv.first,
             "unknown objective '" + key + "' (expected one of: ttft_ms, tpot_ms, e2e_ms)");
      *target = as_double(c, kv.second, key, "milliseconds");
      if (!(*target > 0)) fail(c, kv.second, key + " must be > 0");
    }
  }
  return std::make_unique<LoadCase>(std::move(s));
}

std::vector<std::string> fields() {
  std::vector<std::string> f = e2e_request_fields();
  f.insert(f.end(), {"requests", "concurrency", "rate", "arrival_seed", "slo", "min_goodput"});
  return f;
}

}  // namespace

CheckKind e2e_load_check_kind() { return {"e2e_load", fields(), &prepare}; }

}  // namespace h0::checks
