#include "model/exec/op_runner.h"

#include <algorithm>

#include "base/error.h"

namespace h0::model {

BoundOp bind_op(const char* name, const ops::Json& attrs) {
  const ops::OpDef& def = ops::require_op(name);
  return {&def, ops::validate_attrs(def, attrs)};
}

std::vector<DeviceTensor> OpRunner::run(const BoundOp& op,
                                        const std::vector<const DeviceTensor*>& inputs) {
  std::vector<ops::TensorDesc> in;
  in.reserve(inputs.size());
  for (const DeviceTensor* t : inputs) in.push_back({t->dtype(), t->shape(), true});
  const std::vector<ops::TensorDesc> out_desc = ops::infer_outputs(*op.def, in, op.attrs);
  std::vector<DeviceTensor> out;
  std::vector<DeviceTensor*> out_ptrs;
  out.reserve(out_desc.size());
  for (const auto& d : out_desc) out.push_back(backend_.allocate(d.dtype, d.shape));
  for (auto& t : out) out_ptrs.push_back(&t);

  const auto start = std::chrono::steady_clock::now();
  const backend::Outcome outcome =
      backend::execute(backend_, *op.def, inputs, out_ptrs, op.attrs, fallback_);
  if (outcome.route == backend::Route::kUnsupported) {
    throw backend::BackendError(HB_UNSUPPORTED, std::string(op.def->name) + ": " + outcome.detail);
  }
  if (profile_) backend_.synchronize();
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();

  routes_[op.def->name] = backend::route_name(outcome.route);
  if (profile_) {
    std::string key = op.def->name;
    std::string shapes;
    for (const auto& d : in) {
      if (!shapes.empty()) shapes.push_back(',');
      shapes.append(tensor::shape_string(d.shape));
    }
    key.push_back('[');
    key.append(shapes);
    key.push_back(']');
    auto [it, fresh] = index_.emplace(key, stats_.size());
    if (fresh) {
      std::vector<ops::TensorDesc> full = in;  // absent optionals, as cost() expects
      full.resize(op.def->inputs.size(), ops::TensorDesc{tensor::DType::kF32, {}, false});
      const ops::Cost cost = op.def->cost(full, out_desc, op.attrs);
      stats_.push_back({op.def->name,
                        shapes,
                        0,
                        {},
                        cost.bytes,
                        cost.flops,
                        backend::route_name(outcome.route)});
    }
    OpStats& s = stats_[it->second];
    ++s.calls;
    s.samples_ns.push_back(ns);
  }
  return out;
}

std::vector<OpStats> OpRunner::profile() const { return stats_; }

std::map<std::string, std::string> OpRunner::routes() const { return routes_; }

double total_ns(const OpStats& s) {
  double t = 0;
  for (double x : s.samples_ns) t += x;
  return t;
}

void sort_by_total_time(std::vector<OpStats>* ops) {
  std::sort(ops->begin(), ops->end(),
            [](const OpStats& a, const OpStats& b) { return total_ns(a) > total_ns(b); });
}

}  // namespace h0::model
