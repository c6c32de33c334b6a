// kind: determinism — a request sent alone `repeats` times gives identical outputs, and sent
// among `concurrency - 1` different requests at once (`rounds` times, at a different place in
// the batch each round) gives the output it gave alone (batch invariance). A difference names
// the run and the first differing token position.
#include <latch>
#include <thread>

#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "compare/e2e_compare.h"

namespace h0::checks {
namespace {

struct DeterminismSpec {
  E2eRequest req;
  int64_t repeats = 3, concurrency = 4, rounds = 2;
};

class DeterminismCase final : public PreparedCase {
 public:
  explicit DeterminismCase(DeterminismSpec spec) : spec_(std::move(spec)) {}

  std::string service_model() const override { return spec_.req.model_dir; }

  CheckResult run(RunContext& ctx) override {
    StartedRequest started = start_request(ctx, spec_.req);
    if (!started.usable()) return started.out;
    const ServiceHandle& h = started.h;
    CheckResult& out = started.out;
    const service::Request& request = started.request;
    if (!started.adapted.notes.empty()) out.details["adapted"] = started.adapted.notes;
    if (!started.adapted.cannot.empty()) {
      out.status = Status::kSkip;
      out.message = "not run: " + started.adapted.cannot;
      return out;
    }

    const service::Result baseline = h.client->complete(request);
    out.details["baseline"] = response_evidence(baseline);
    if (!baseline.ok()) return failed(out, "the request alone: " + failure_message(baseline));

    int64_t identical = 0, runs = 0;
    std::string first_problem;
    auto record = [&](const std::string& run, const service::Result& r) {
      ++runs;
      if (!r.ok()) {
        if (first_problem.empty()) first_problem = run + ": " + failure_message(r);
        return;
      }
      const compare::ResponseVerdict v = compare::compare_responses(baseline, r);
      if (v.pass) {
        ++identical;
      } else if (first_problem.empty()) {
        first_problem = run + " differs from the request alone: " + v.message;
        out.details["first_difference"] = v.first_difference;
        out.details["differing"] = response_evidence(r);
      }
    };
    for (int64_t i = 0; i < spec_.repeats; ++i)
      record("repeat " + std::to_string(i + 1), h.client->complete(request));

    for (int64_t round = 0; round < spec_.rounds; ++round) {
      const int64_t n = spec_.concurrency, place = round % n;
      std::vector<service::Result> results(static_cast<size_t>(n));
      std::latch start(n);
      std::vector<std::thread> threads;
      for (int64_t j = 0; j < n; ++j) {
        threads.emplace_back([&, j] {
          const service::Request r = j == place ? request : request_variant(request, j + round * n);
          start.arrive_and_wait();  // all requests leave together, so the service batches them
          results[size_t(j)] = h.client->complete(r);
        });
      }
      for (auto& t : threads) t.join();
      record("round " + std::to_string(round + 1) + " (among " + std::to_string(n - 1) +
                 " concurrent requests)",
             results[size_t(place)]);
      for (int64_t j = 0; j < n; ++j) {
        if (j != place && !results[size_t(j)].ok() && first_problem.empty()) {
          first_problem = "a concurrent request failed: " + failure_message(results[size_t(j)]);
        }
      }
    }
    out.metrics.push_back({"identical_runs", double(identical)});
    out.metrics.push_back({"runs", double(runs)});
    if (!first_problem.empty()) return failed(out, first_problem);
    out.status = Status::kPass;
    out.message = std::to_string(runs) + " runs identical to the request alone (" +
                  std::to_string(spec_.repeats) + " repeats, " + std::to_string(spec_.rounds) +
                  " rounds among " + std::to_string(spec_.concurrency - 1) +
                  " concurrent requests)";
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "determinism"},
            {"model", spec_.req.model_dir},
            {"request", service::Client::body(spec_.req.request)},
            {"repeats", spec_.repeats},
            {"concurrency", spec_.concurrency},
            {"rounds", spec_.rounds}};
  }

 private:
  static CheckResult failed(CheckResult& out, const std::string& message) {
    out.status = Status::kFail;
    out.message = message;
    return out;
  }

  DeterminismSpec spec_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  DeterminismSpec s;
  s.req = parse_e2e_request(c);
  s.repeats = field_int(c, "repeats", 3, 1);
  s.concurrency = field_int(c, "concurrency", 4, 2);
  s.rounds = field_int(c, "rounds", 2, 0);
  return std::make_unique<DeterminismCase>(std::move(s));
}

std::vector<std::string> fields() {
  std::vector<std::string> f = e2e_request_fields();
  f.insert(f.end(), {"repeats", "concurrency", "rounds"});
  return f;
}

}  // namespace

CheckKind determinism_check_kind() { return {"determinism", fields(), &prepare}; }

}  // namespace h0::checks
