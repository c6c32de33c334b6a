// Runs catalogue ops for the executor on one backend, with the op checks' fallback rules, and
// keeps the per-op profile of a model run: op, input shapes, calls, total/median time, bytes,
// FLOPs. Outputs are allocated from the catalogue's shape rules.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/fallback.h"
#include "ops/op.h"

namespace h0::model {

using backend::DeviceTensor;

// One row of a model run's profile, per (op, input shapes).
struct OpStats {
  std::string op, shapes;  // "rmsnorm", "7x128,128"
  int64_t calls = 0;
  std::vector<double> samples_ns;
  double bytes = 0, flops = 0;  // per call
  std::string route;            // native, decomposed, host
};

// An op with its attrs validated once (the executor builds these when it is constructed).
struct BoundOp {
  const ops::OpDef* def = nullptr;
  ops::Json attrs;
};
BoundOp bind_op(const char* name, const ops::Json& attrs = ops::Json::object());

// The summed time of an op's calls, ns.
double total_ns(const OpStats& s);
// Ops ordered by summed time, the costliest first.
void sort_by_total_time(std::vector<OpStats>* ops);

class OpRunner {
 public:
  OpRunner(backend::Backend& backend, backend::FallbackMode fallback, bool profile)
      : backend_(backend), fallback_(fallback), profile_(profile) {}

  backend::Backend& backend() { return backend_; }

  // Runs `op` on `inputs` and returns its outputs (allocated here). Throws BackendError when
  // the backend fails or the op is unsupported under the fallback mode.
  std::vector<DeviceTensor> run(const BoundOp& op, const std::vector<const DeviceTensor*>& inputs);
  DeviceTensor run1(const BoundOp& op, const std::vector<const DeviceTensor*>& inputs) {
    return std::move(run(op, inputs)[0]);
  }

  // The profile so far, one row per (op, shapes), in first-call order.
  std::vector<OpStats> profile() const;
  // Routes taken by op name (e.g. {"swiglu": "decomposed"}): which ops fell back.
  std::map<std::string, std::string> routes() const;

 private:
  backend::Backend& backend_;
  backend::FallbackMode fallback_;
  bool profile_;
  std::map<std::string, size_t> index_;
  std::vector<OpStats> stats_;
  std::map<std::string, std::string> routes_;
};

}  // namespace h0::model
