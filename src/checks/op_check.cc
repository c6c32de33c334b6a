#include "checks/op_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>

#include "backend/backend.h"
#include "backend/fallback.h"
#include "base/error.h"
#include "base/sha256.h"
#include "base/text_format.h"
#include "checks/input_synth.h"
#include "checks/op_tolerance.h"
#include "compare/rounding.h"
#include "compare/tensor_compare.h"
#include "io/safetensors_reader.h"
#include "suite/location.h"
#include "suite/platform.h"
#include "tensor/philox.h"

namespace h0::checks {
namespace {

namespace fs = std::filesystem;
using ops::Json;
using tensor::DType;
using tensor::Tensor;

// One problem size of a case: dims, and the descs they give.
struct Problem {
  ops::Dims dims;
  std::string label;  // "7x4096"
  std::vector<ops::TensorDesc> inputs, outputs;
};

struct OpCaseSpec {
  std::string id, check_id, file;
  const ops::OpDef* op = nullptr;
  Json attrs;
  DType dtype = DType::kF32, index_dtype = DType::kI64;
  std::set<std::string> with;
  std::vector<Problem> problems;  // the case's own, then any dynamic shapes
  uint64_t seed = 0;
  Json dists;  // operand -> distribution, defaults merged
  std::string golden = "reference";
  std::string golden_path;  // resolved file path
  Json tolerance = Json::object();
  int warmup = 1, repeats = 5;
  double perf_threshold = -1;  // the diff's timing threshold for this check; < 0: the default
  backend::FallbackMode fallback = backend::FallbackMode::kDecompose;
};

// dims from `shape: [...]` (the op's dims in order) or `dims: {name: n}`.
ops::Dims parse_dims(const suite::Case& c, const ops::OpDef& op, const YAML::Node& shape,
                     const YAML::Node& dims) {
  ops::Dims out;
  const bool full_shape = op.dims.size() == 1 && std::string(op.dims[0]) == "*";
  if (shape.IsDefined()) {
    if (!shape.IsSequence()) fail(c, shape, "shape must be a sequence of integers");
    if (!full_shape && shape.size() > op.dims.size()) {
      std::string names;
      for (const char* d : op.dims) names += (names.empty() ? "" : ", ") + std::string(d);
      fail(c, shape,
           "shape has " + std::to_string(shape.size()) + " dims but " + op.name +
               " takes at most " + std::to_string(op.dims.size()) + " (" + names + ")");
    }
    for (size_t i = 0; i < shape.size(); ++i) {
      const int64_t v = as_int(c, shape[i], "a shape entry");
      if (v < 0) fail(c, shape[i], "dims must be >= 0");
      std::string name = full_shape ? std::string("d") : std::string(op.dims[i]);
      if (full_shape) name += std::to_string(i);
      out[name] = v;
    }
  }
  if (dims.IsDefined() && !dims.IsNull()) {
    if (!dims.IsMap()) fail(c, dims, "dims must be a mapping of dim name to size");
    for (const auto& kv : dims) {
      const std::string name = kv.first.Scalar();
      bool known = false;
      for (const char* d : op.dims) known = known || name == d;
      if (!known || full_shape)
        fail(c, kv.first, std::string("op '") + op.name + "' has no dim '" + name + "'");
      out[name] = as_int(c, kv.second, "dim '" + name + "'");
    }
  }
  return out;
}

Problem make_problem(const suite::Case& c, const YAML::Node& where, const OpCaseSpec& s,
                     ops::Dims dims) {
  Problem p;
  p.dims = std::move(dims);
  for (const auto& [k, v] : p.dims) {
    if (!p.label.empty()) p.label += 'x';
    p.label += std::to_string(v);
  }
  try {
    p.inputs = s.op->operands(p.dims, s.attrs, s.dtype, s.index_dtype, s.with);
    p.outputs = ops::infer_outputs(*s.op, p.inputs, s.attrs);
  } catch (const InputError& e) {
    fail(c, where, e.what());
  }
  return p;
}

// The op the case names (`op:`), required.
const ops::OpDef* parse_op(const suite::Case& c) {
  const YAML::Node op_node = case_field(c, "op");
  if (!op_node.IsDefined()) fail(c, c.check->node, "kind op needs an `op` field");
  try {
    return &ops::require_op(as_string(c, op_node, "op"));
  } catch (const InputError& e) {
    fail(c, op_node, e.what());
  }
}

// attrs: validated as a whole; on error the offending key is found for the location.
Json parse_attrs(const suite::Case& c, const ops::OpDef& op) {
  const YAML::Node attrs = case_field(c, "attrs");
  Json attrs_json = attrs.IsDefined() ? suite::yaml_to_json(c.check->file, attrs) : Json::object();
  try {
    return ops::validate_attrs(op, attrs_json);
  } catch (const InputError& e) {
    if (attrs.IsMap()) {
      for (const auto& kv : attrs) {
        try {
          ops::validate_attrs(
              op, Json{{kv.first.Scalar(), suite::yaml_to_json(c.check->file, kv.second)}});
        } catch (const InputError& one) {
          const std::string why = one.what();
          if (why.find("unknown attr") != std::string::npos) fail(c, kv.first, why);
          if (why.find("missing attr") == std::string::npos) fail(c, kv.second, why);
        }
      }
    }
    fail(c, attrs, e.what());
  }
}

// dtype, index_dtype and the optional operands asked for (`with:`).
void parse_operand_types(const suite::Case& c, OpCaseSpec& s) {
  const ops::OpDef& op = *s.op;
  if (const YAML::Node d = case_field(c, "dtype"); d.IsDefined()) {
    const auto dt = tensor::parse_dtype(as_string(c, d, "dtype"));
    if (!dt || !tensor::is_float(*dt) || tensor::dtype_size(*dt) == 1) {
      fail(c, d, "dtype must be one of f64, f32, bf16, f16, got '" + d.Scalar() + "'");
    }
    s.dtype = *dt;
  }
  if (const YAML::Node d = case_field(c, "index_dtype"); d.IsDefined()) {
    const auto dt = tensor::parse_dtype(as_string(c, d, "index_dtype"));
    if (!dt || (*dt != DType::kI32 && *dt != DType::kI64))
      fail(c, d, "index_dtype must be i32 or i64");
    s.index_dtype = *dt;
  }
  if (const YAML::Node w = case_field(c, "with"); w.IsDefined()) {
    if (!w.IsSequence()) fail(c, w, "with must be a sequence of optional operand names");
    for (const auto& item : w) {
      const std::string name = as_string(c, item, "an operand name");
      bool optional = false;
      for (const auto& in : op.inputs) optional = optional || (in.optional && name == in.name);
      if (!optional)
        fail(c, item, std::string("op '") + op.name + "' has no optional operand '" + name + "'");
      s.with.insert(name);
    }
  }
}

// The case's own problem (`shape:` or `dims:`), then one per `dynamic_shapes` entry.
void parse_problems(const suite::Case& c, OpCaseSpec& s) {
  const ops::OpDef& op = *s.op;
  const YAML::Node shape = case_field(c, "shape"), dims = case_field(c, "dims");
  s.problems.push_back(
      make_problem(c, shape.IsDefined() ? shape : dims, s, parse_dims(c, op, shape, dims)));
  if (const YAML::Node dyn = case_field(c, "dynamic_shapes"); dyn.IsDefined()) {
    if (!dyn.IsSequence() || dyn.size() == 0)
      fail(c, dyn, "dynamic_shapes must be a non-empty sequence of shapes");
    for (const auto& item : dyn)
      s.problems.push_back(make_problem(c, item, s, parse_dims(c, op, item, YAML::Node())));
  }
}

// inputs: seed and per-operand distributions over the op's defaults.
void parse_inputs(const suite::Case& c, OpCaseSpec& s) {
  const ops::OpDef& op = *s.op;
  s.dists = op.default_inputs ? op.default_inputs(s.problems[0].dims, s.attrs) : Json::object();
  const YAML::Node in = case_field(c, "inputs");
  if (!in.IsDefined()) return;
  if (!in.IsMap()) fail(c, in, "inputs must be a mapping: {seed: N, <operand>: <distribution>}");
  for (const auto& kv : in) {
    const std::string key = kv.first.Scalar();
    if (key == "seed") {
      s.seed = static_cast<uint64_t>(as_int(c, kv.second, "seed"));
      continue;
    }
    bool known = false;
    for (const auto& operand : op.inputs) known = known || key == operand.name;
    if (!known) fail(c, kv.first, std::string("op '") + op.name + "' has no input '" + key + "'");
    const Json dist = suite::yaml_to_json(c.check->file, kv.second);
    if (const std::string err = check_distribution(dist); !err.empty()) fail(c, kv.second, err);
    s.dists[key] = dist;
  }
}

// Tolerance: the platform's (for this op or `*`) under the check's, key by key.
void parse_tolerance(const suite::Case& c, const suite::Platform& platform, OpCaseSpec& s) {
  const ops::OpDef& op = *s.op;
  if (platform.tolerance.IsDefined() && platform.tolerance.IsMap()) {
    for (const char* key : {"*", op.name}) {
      if (const YAML::Node t = platform.tolerance[key]; t.IsDefined())
        s.tolerance.update(suite::yaml_to_json(platform.file, t));
    }
  }
  if (const YAML::Node t = case_field(c, "tolerance"); t.IsDefined()) {
    if (!t.IsMap()) fail(c, t, "tolerance must be a mapping");
    s.tolerance.update(suite::yaml_to_json(c.check->file, t));
    try {
      for (const auto& out : s.problems[0].outputs) op_tolerance(op, out.dtype, {}, s.tolerance, 0);
    } catch (const InputError& e) {
      fail(c, t, e.message());
    }
  }
}

// warmup, repeats and the diff's perf_threshold.
void parse_timing(const suite::Case& c, OpCaseSpec& s) {
  if (const YAML::Node n = case_field(c, "warmup"); n.IsDefined())
    s.warmup = static_cast<int>(as_int(c, n, "warmup"));
  if (const YAML::Node n = case_field(c, "repeats"); n.IsDefined()) {
    s.repeats = static_cast<int>(as_int(c, n, "repeats"));
    if (s.repeats < 1) fail(c, n, "repeats must be >= 1");
  }
  if (const YAML::Node t = case_field(c, "perf_threshold"); t.IsDefined()) {
    const Json v = suite::yaml_to_json(c.check->file, t);
    if (!v.is_number() || v.get<double>() < 0)
      fail(c, t, "perf_threshold must be a number >= 0 (0.05 = 5%)");
    s.perf_threshold = v.get<double>();
  }
}

// The platform's default fallback (a partial backend asks for host fallback), then the check's.
void parse_fallback_mode(const suite::Case& c, const suite::Platform& platform, OpCaseSpec& s) {
  if (!platform.fallback.empty()) {
    H0_CHECK(backend::parse_fallback(platform.fallback, &s.fallback)) << platform.fallback;
  }
  if (const YAML::Node f = case_field(c, "fallback"); f.IsDefined()) {
    if (!backend::parse_fallback(as_string(c, f, "fallback"), &s.fallback)) {
      fail(c, f, "fallback must be none, decompose or host, got '" + f.Scalar() + "'");
    }
  }
}

OpCaseSpec parse(const suite::Case& c, const suite::Platform& platform) {
  OpCaseSpec s;
  s.id = c.id;
  s.check_id = c.check->id;
  s.file = c.check->file;
  s.op = parse_op(c);
  s.attrs = parse_attrs(c, *s.op);
  parse_operand_types(c, s);
  parse_problems(c, s);
  parse_inputs(c, s);
  if (const YAML::Node g = case_field(c, "golden"); g.IsDefined()) {
    s.golden = as_string(c, g, "golden");
    if (s.golden != "reference" && s.golden != "perturbation") {
      s.golden_path = resolve_case_path(c, s.golden);
    }
  }
  parse_tolerance(c, platform, s);
  parse_timing(c, s);
  parse_fallback_mode(c, platform, s);
  if (s.problems.size() > 1 && s.golden != "reference" && s.golden != "perturbation") {
    fail(c, case_field(c, "dynamic_shapes"),
         "dynamic_shapes needs `golden: reference` (golden files hold one shape per case)");
  }
  return s;
}

// Golden files are read once per process.
std::shared_ptr<const io::SafetensorsFile> golden_file(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const io::SafetensorsFile>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[path];
  if (!slot) slot = std::make_shared<io::SafetensorsFile>(io::SafetensorsFile::open(path));
  return slot;
}

std::string inputs_sha256(const std::vector<Tensor>& inputs) {
  base::Sha256 h;
  for (const auto& t : inputs) h.update(t.data(), t.nbytes());
  return h.hex_digest();
}

// A fixed amount of host work — a dependent chain of multiply-adds on doubles, no memory
// traffic — timed between the repetitions of a kernel. Its time tracks how fast the machine is
// right now (frequency, stolen time, a busy neighbour), so the diff can tell a slower stack from
// a slower machine by comparing kernel times relative to it.
double calibration_ns() {
  double x = 1.0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < (1 << 14); ++i) x = x * 1.0000001 + 1e-9;
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  volatile double sink = x;
  (void)sink;
  return ns;
}

double rms(const Tensor& t) {
  if (t.numel() == 0 || !tensor::is_float(t.dtype())) return 0;
  const Tensor f64 = t.to(DType::kF64);
  const double* values = f64.data_as<double>();
  double sum = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = values[i];
    if (std::isfinite(v)) sum += v * v, ++n;
  }
  return n ? std::sqrt(sum / static_cast<double>(n)) : 0;
}

// A top-k selection's ids (OpDef::selection_scores): where the kernel lists another id than the
// golden, its id is taken as the golden's when the two f64 scores are a near-tie — apart by less
// than an f32-accumulating kernel drifts over the score's reduction (or the case's rtol / atol),
// but not equal: an exact tie has the order the op fixes — and the kernel's row lists every key
// once. Returns how many ids were taken so.
int64_t accept_near_ties(const ops::OpDef& op, const std::vector<Tensor>& inputs, const Json& attrs,
                         const ops::Cost& cost, const nlohmann::json& user, const Tensor& golden,
                         Tensor* actual) {
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  const std::vector<double> sa = op.selection_scores(in, *actual, attrs),
                            sg = op.selection_scores(in, golden, attrs);
  double sum = 0;
  int64_t finite = 0;
  for (double v : sg) {
    if (std::isfinite(v)) sum += v * v, ++finite;
  }
  const double scale = finite ? std::sqrt(sum / static_cast<double>(finite)) : 0;
  const double rtol = user.value("rtol", 8.0 * std::sqrt(std::max(1.0, cost.reduction)) * 0x1p-24);
  const double atol = user.value("atol", rtol * scale);
  const int64_t rows = actual->dim(0), k = actual->dim(1);
  int32_t* a = actual->mutable_data_as<int32_t>();
  const int32_t* g = golden.data_as<int32_t>();
  int64_t accepted = 0;
  std::vector<int32_t> listed;
  for (int64_t r = 0; r < rows; ++r) {
    listed.assign(a + r * k, a + (r + 1) * k);
    std::sort(listed.begin(), listed.end());
    if (std::adjacent_find(std::lower_bound(listed.begin(), listed.end(), 0), listed.end()) !=
        listed.end())
      continue;
    for (int64_t i = r * k; i < (r + 1) * k; ++i) {
      const size_t n = static_cast<size_t>(i);
      if (a[i] == g[i] || !std::isfinite(sa[n]) || !std::isfinite(sg[n]) || sa[n] == sg[n])
        continue;
      if (std::abs(sa[n] - sg[n]) <= atol + rtol * std::abs(sg[n])) a[i] = g[i], ++accepted;
    }
  }
  return accepted;
}

class OpCase : public PreparedCase {
 public:
  explicit OpCase(OpCaseSpec spec) : s_(std::move(spec)) {}

  nlohmann::json describe() const override {
    const Problem& p = s_.problems[0];
    nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
    for (size_t i = 0; i < p.inputs.size(); ++i) inputs.push_back(s_.op->inputs[i].name);
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      outputs.push_back({{"name", s_.op->outputs[i].name},
                         {"dtype", tensor::dtype_name(p.outputs[i].dtype)},
                         {"shape", p.outputs[i].shape}});
    }
    return {{"id", s_.id},       {"check", s_.check_id}, {"kind", "op"},
            {"op", s_.op->name}, {"attrs", s_.attrs},    {"dtype", tensor::dtype_name(s_.dtype)},
            {"inputs", inputs},  {"outputs", outputs},   {"golden", s_.golden},
            {"seed", s_.seed}};
  }

  std::vector<std::pair<std::string, Tensor>> dump_inputs() const override {
    std::vector<std::pair<std::string, Tensor>> out;
    const auto tensors = make_inputs(s_.problems[0]);
    for (size_t i = 0; i < tensors.size(); ++i) out.emplace_back(s_.op->inputs[i].name, tensors[i]);
    return out;
  }

  CheckResult run(RunContext& ctx) override {
    CheckResult r;
    backend::Backend& be = ctx.backend();
    const Problem& first = s_.problems[0];
    const DType call = backend::call_dtype(*s_.op, first.inputs, first.outputs);
    const backend::Outcome planned = backend::plan(be, *s_.op, call, s_.fallback);
    r.details["route"] = backend::route_name(planned.route);
    if (s_.perf_threshold >= 0) r.details["perf_threshold"] = s_.perf_threshold;
    if (!planned.detail.empty()) r.details["route_detail"] = planned.detail;
    if (planned.route == backend::Route::kUnsupported) {
      r.status = Status::kSkip;
      r.message = planned.detail;
      return r;
    }
    r.status = Status::kPass;
    nlohmann::json problems = nlohmann::json::array();
    for (const Problem& p : s_.problems) {
      nlohmann::json detail;
      const std::string failure = run_problem(be, p, s_.problems.size() > 1, &r, &detail);
      problems.push_back(detail);
      if (!failure.empty() && r.status == Status::kPass) {
        r.status = Status::kFail;
        r.message = failure;
      }
    }
    if (s_.problems.size() > 1) {
      r.details["shapes"] = problems;
    } else if (s_.golden == "perturbation") {
      r.details["perturbation"] = problems[0]["perturbation"];
    } else {
      r.details["outputs"] = problems[0]["outputs"];
    }
    return r;
  }

 private:
  std::vector<Tensor> make_inputs(const Problem& p) const {
    std::vector<Tensor> out;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const char* name = s_.op->inputs[i].name;
      const Json dist =
          s_.dists.contains(name) ? s_.dists[name] : Json{{"normal", {{"mean", 0}, {"std", 1}}}};
      out.push_back(synthesize(dist, p.inputs[i].dtype, p.inputs[i].shape, s_.seed, i));
    }
    return out;
  }

  // The golden outputs of a problem: from the golden file, or the host reference in f64.
  // Returns "" or why there is none (which makes the case an error).
  std::string golden_outputs(const Problem& p, const std::vector<Tensor>& inputs,
                             std::vector<Tensor>* golden) const {
    if (s_.golden == "reference") {
      std::vector<const Tensor*> in(s_.op->inputs.size(), nullptr);
      for (size_t i = 0; i < inputs.size(); ++i) in[i] = &inputs[i];
      std::vector<Tensor*> out;
      for (size_t i = 0; i < p.outputs.size(); ++i) {
        const DType d = tensor::is_float(p.outputs[i].dtype) &&
                                s_.op->outputs[i].kind == ops::OperandKind::kFloat
                            ? DType::kF64
                            : p.outputs[i].dtype;
        golden->push_back(Tensor::zeros(d, p.outputs[i].shape));
      }
      for (auto& t : *golden) out.push_back(&t);
      s_.op->reference(in, out, s_.attrs);
      return "";
    }
    if (!fs::exists(s_.golden_path))
      return "golden file " + s_.golden_path +
             " does not exist (generate it with golden/tools/gen_ops.py)";
    const auto file = golden_file(s_.golden_path);
    const auto& meta = file->metadata();
    if (auto it = meta.find("inputs:" + s_.id);
        it != meta.end() && it->second != inputs_sha256(inputs)) {
      return "golden " + s_.golden_path +
             " was made from different inputs for this case (regenerate with "
             "golden/tools/gen_ops.py)";
    }
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      const std::string key = s_.id + "/" + s_.op->outputs[i].name;
      if (!file->find(key)) return "golden " + s_.golden_path + " has no tensor '" + key + "'";
      golden->push_back(file->get(key));
    }
    return "";
  }

  // Runs one problem: timed repetitions, then the comparison. Returns "" or the first failure.
  std::string run_problem(backend::Backend& be, const Problem& p, bool label_rows, CheckResult* r,
                          nlohmann::json* detail) const {
    const std::vector<Tensor> inputs = make_inputs(p);
    const ops::Cost cost = s_.op->cost(p.inputs, p.outputs, s_.attrs);
    std::vector<Tensor> actual = time_repetitions(be, p, inputs, cost, label_rows, r);
    (*detail)["shape"] = p.label;
    if (s_.golden == "perturbation") {
      const std::string metric_suffix = shape_suffix(p, label_rows);
      std::string failure = perturbation_failure(be, p, inputs, actual, r, detail, metric_suffix);
      if (!failure.empty() && label_rows) failure = "shape " + p.label + ": " + failure;
      return failure;
    }
    return compare_outputs(p, inputs, cost, label_rows, &actual, r, detail);
  }

  // "[shape=7x4096]" where a case's rows are labelled by problem, else "".
  static std::string shape_suffix(const Problem& p, bool label_rows) {
    return label_rows ? "[shape=" + p.label + "]" : "";
  }

  // Runs the problem's warmup and timed repetitions, records their profile rows and timing
  // metrics in `r`, and returns the outputs downloaded.
  std::vector<Tensor> time_repetitions(backend::Backend& be, const Problem& p,
                                       const std::vector<Tensor>& inputs, const ops::Cost& cost,
                                       bool label_rows, CheckResult* r) const {
    // Timings depend on where buffers and temporaries land in memory (cache sets, page and
    // 4 KiB-aliasing boundaries), and one process gets one layout: two runs of the same stack
    // could then differ by tens of percent. So the repetitions rotate over several copies of
    // the buffers, placed behind pads of different sizes, and run with the heap shifted by a
    // different pad each time: one run's samples span many layouts (randomized placement, as
    // in Stabilizer), and medians agree across runs. Large cases keep one copy.
    constexpr double kRotationBudget = 256.0 * (1 << 20);
    const int copies = cost.bytes * 4 <= kRotationBudget ? 4 : 1;
    const tensor::Philox pads(s_.seed, 0x5eed);
    std::vector<backend::DeviceTensor> spacers;
    std::vector<std::vector<backend::DeviceTensor>> dev_in(copies), dev_out(copies);
    std::vector<std::vector<const backend::DeviceTensor*>> in_ptrs(copies);
    std::vector<std::vector<backend::DeviceTensor*>> out_ptrs(copies);
    for (int k = 0; k < copies; ++k) {
      spacers.push_back(
          be.allocate(DType::kU8, {64 * static_cast<int64_t>(1 + pads.word(1000 + k) % 256)}));
      for (const auto& t : inputs) dev_in[k].push_back(be.upload(t));
      for (const auto& d : p.outputs) dev_out[k].push_back(be.allocate(d.dtype, d.shape));
      for (auto& t : dev_in[k]) in_ptrs[k].push_back(&t);
      for (auto& t : dev_out[k]) out_ptrs[k].push_back(&t);
    }
    uint64_t repetition = 0;
    auto timed = [&] {
      const size_t k = repetition % static_cast<uint64_t>(copies);
      const size_t pad_bytes = 64 * static_cast<size_t>(pads.word(repetition++) % 4096);
      std::unique_ptr<char[]> pad(new char[pad_bytes + 1]);
      pad[pad_bytes] = 1;
      const auto t0 = std::chrono::steady_clock::now();
      backend::execute(be, *s_.op, in_ptrs[k], out_ptrs[k], s_.attrs, s_.fallback);
      be.synchronize();
      return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
          .count();
    };
    const double first_call_ns = timed();
    for (int i = 1; i < s_.warmup; ++i) timed();
    std::vector<double> samples, calibration;
    for (int i = 0; i < s_.repeats; ++i) {
      samples.push_back(timed());
      calibration.push_back(calibration_ns());
    }
    record_timings(p, cost, label_rows, first_call_ns, samples, calibration, r);
    std::vector<Tensor> actual;
    for (const auto& t : dev_out[0]) actual.push_back(be.download(t));
    return actual;
  }

  // The profile rows (first call, steady state, host calibration) and the timing metrics.
  void record_timings(const Problem& p, const ops::Cost& cost, bool label_rows,
                      double first_call_ns, const std::vector<double>& samples,
                      const std::vector<double>& calibration, CheckResult* r) const {
    const std::string name = std::string(s_.op->name) + "[" + p.label + "]";
    const std::string suffix = shape_suffix(p, label_rows);
    ProfileRow first_call = summarize("first_call" + suffix, name, {first_call_ns});
    ProfileRow steady = summarize("steady" + suffix, name, samples);
    r->profile.push_back(summarize("calibration" + suffix, "host", calibration));
    for (ProfileRow* row : {&first_call, &steady}) row->bytes = cost.bytes, row->flops = cost.flops;
    r->profile.push_back(first_call);
    r->profile.push_back(steady);
    if (steady.median_ns > 0) {
      r->metrics.emplace_back("gbps" + suffix, cost.bytes / steady.median_ns);
      r->metrics.emplace_back("gflops" + suffix, cost.flops / steady.median_ns);
    }
    r->metrics.emplace_back("first_call_ms" + suffix, first_call.median_ns * 1e-6);
    r->metrics.emplace_back("median_ms" + suffix, steady.median_ns * 1e-6);
  }

  // Compares `actual` with the golden outputs (near-tied top-k ids accepted first), output by
  // output, into r's metrics and detail["outputs"]. Returns "" or the first failure.
  std::string compare_outputs(const Problem& p, const std::vector<Tensor>& inputs,
                              const ops::Cost& cost, bool label_rows, std::vector<Tensor>* actual,
                              CheckResult* r, nlohmann::json* detail) const {
    const std::string metric_suffix = shape_suffix(p, label_rows);
    std::vector<Tensor> golden;
    if (const std::string why = golden_outputs(p, inputs, &golden); !why.empty()) {
      throw InputError(s_.id, why);
    }
    int64_t near_ties = -1;
    if (s_.op->selection_scores != nullptr && golden[0].dtype() == DType::kI32 &&
        (*actual)[0].dtype() == DType::kI32) {
      near_ties =
          accept_near_ties(*s_.op, inputs, s_.attrs, cost, s_.tolerance, golden[0], &(*actual)[0]);
    }
    std::string failure;
    (*detail)["outputs"] = nlohmann::json::array();
    for (size_t i = 0; i < actual->size(); ++i) {
      const char* out_name = s_.op->outputs[i].name;
      const compare::Tolerance tol =
          op_tolerance(*s_.op, p.outputs[i].dtype, cost, s_.tolerance, rms(golden[i]));
      const compare::Comparison c = compare::compare_tensors((*actual)[i], golden[i], tol);
      const std::string prefix = (actual->size() > 1 ? std::string(out_name) + "." : "");
      if (c.metrics_valid) {
        for (const auto& [k, v] : compare::metric_values(c.metrics))
          r->metrics.emplace_back(prefix + k + metric_suffix, v);
      }
      nlohmann::json o = output_detail(out_name, p.outputs[i].dtype, c);
      if (i == 0 && near_ties >= 0) o["near_ties_accepted"] = near_ties;
      if (c.metrics_valid && c.metrics.worst_index >= 0) {
        o["worst_index"] = c.metrics.worst_index;
        o["worst_actual"] = c.metrics.worst_actual;
        o["worst_expected"] = c.metrics.worst_expected;
      }
      (*detail)["outputs"].push_back(o);
      if (!c.pass && failure.empty()) {
        failure = (actual->size() > 1 ? std::string(out_name) + ": " : "") + c.failures.front();
        if (label_rows) failure = "shape " + p.label + ": " + failure;
      }
    }
    return failure;
  }

  // One output's comparison as the case's detail lists it.
  static nlohmann::json output_detail(const char* out_name, DType dtype,
                                      const compare::Comparison& c) {
    return {{"name", out_name},
            {"dtype", tensor::dtype_name(dtype)},
            {"preset", c.tolerance.preset},
            {"rtol", c.tolerance.element.rtol},
            {"atol", c.tolerance.element.atol},
            {"pass", c.pass},
            {"failures", c.failures}};
  }

  // The op once on the platform: `inputs` uploaded, outputs as `descs` say, downloaded. Empty
  // when the route is unsupported.
  std::vector<Tensor> run_once(backend::Backend& be, const std::vector<Tensor>& inputs,
                               const std::vector<ops::TensorDesc>& descs) const {
    std::vector<backend::DeviceTensor> in, out;
    std::vector<const backend::DeviceTensor*> in_ptrs;
    std::vector<backend::DeviceTensor*> out_ptrs;
    for (const auto& t : inputs) in.push_back(be.upload(t));
    for (const auto& d : descs) out.push_back(be.allocate(d.dtype, d.shape));
    for (auto& t : in) in_ptrs.push_back(&t);
    for (auto& t : out) out_ptrs.push_back(&t);
    const backend::Outcome o =
        backend::execute(be, *s_.op, in_ptrs, out_ptrs, s_.attrs, s_.fallback);
    be.synchronize();
    std::vector<Tensor> result;
    if (o.route == backend::Route::kUnsupported) return result;
    for (const auto& t : out) result.push_back(be.download(t));
    return result;
  }

  // golden: perturbation — no golden, the platform against itself (msprobe's free benchmark):
  //   raised     the bf16/f16 inputs in f32: the outputs, in f32, against the case's;
  //   perturbed  every float input of the precision the op ran at (f32 when raised) one ULP off
  //              at a random sign: against the unperturbed outputs at that precision;
  //   permuted   add and mul with their operands swapped: against the case's outputs.
  // Each compares by the relative L2 error over the finite elements (and NaN/Inf that appear),
  // with msprobe's bounds for the precision compared: 0.004 bf16, 0.002 f16, 0.0002 f32. A
  // stable kernel stays far inside them; one that amplifies small input changes does not.
  std::string perturbation_failure(backend::Backend& be, const Problem& p,
                                   const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& actual, CheckResult* r,
                                   nlohmann::json* detail, const std::string& metric_suffix) const {
    const auto bound = [](DType d) {
      return d == DType::kBF16                            ? 0.004
             : d == DType::kF16                           ? 0.002
             : d == DType::kF8E4M3 || d == DType::kF8E5M2 ? 0.1
                                                          : 0.0002;
    };
    nlohmann::json variants = nlohmann::json::object();
    std::string failure;
    // Compares `moved` with `base` output by output; records the worst relative L2.
    const auto judge = [&](const std::string& name, const std::vector<Tensor>& moved,
                           const std::vector<Tensor>& base, DType precision) {
      double worst = 0;
      int64_t new_non_finite = 0;
      for (size_t i = 0; i < base.size() && i < moved.size(); ++i) {
        if (!tensor::is_float(base[i].dtype())) continue;
        const compare::Metrics m = compare::compute_metrics(moved[i], base[i], {0, 0, false});
        worst = std::max(worst, m.rel_l2);
        new_non_finite += m.nan_mismatch + m.inf_mismatch;
      }
      const double b = bound(precision);
      variants[name] = {{"rel_l2", worst},
                        {"bound", b},
                        {"precision", tensor::dtype_name(precision)},
                        {"non_finite_mismatch", new_non_finite}};
      r->metrics.emplace_back("perturbation_" + name + "_rel_l2" + metric_suffix, worst);
      if ((worst > b || new_non_finite > 0) && failure.empty()) {
        failure =
            "unstable under a small input change (" + name +
            "): outputs moved by a relative "
            "L2 of " +
            printf_string("%.3g", worst) + " > " + printf_string("%.3g", b) + " (" +
            tensor::dtype_name(precision) + ")" +
            (new_non_finite > 0 ? ", " + std::to_string(new_non_finite) + " NaN/Inf appeared" : "");
      }
    };
    const bool narrow = s_.dtype == DType::kBF16 || s_.dtype == DType::kF16;
    std::vector<Tensor> wide_inputs = inputs;  // the case's inputs at the precision perturbed
    std::vector<ops::TensorDesc> wide_descs = p.outputs;
    std::vector<Tensor> wide = actual;
    DType precision = s_.dtype;
    if (narrow) {
      std::vector<ops::TensorDesc> in_descs;
      for (Tensor& t : wide_inputs) {
        if (t.dtype() == s_.dtype) t = t.to(DType::kF32);
        in_descs.push_back({t.dtype(), t.shape(), true});
      }
      try {
        wide_descs = ops::infer_outputs(*s_.op, in_descs, s_.attrs);
        wide = run_once(be, wide_inputs, wide_descs);
        if (!wide.empty()) {
          precision = DType::kF32;
          judge("raised", wide, actual, s_.dtype);
        }
      } catch (const std::exception& e) {  // an op whose output dtype an attr fixes
        variants["raised"] = {{"skipped", e.what()}};
      }
      if (precision != DType::kF32) wide_inputs = inputs, wide_descs = p.outputs, wide = actual;
    }
    // A quantizing op is a step function: one ULP may cross a step, by design.
    bool quantizes = s_.attrs.is_object() && s_.attrs.value("act_quant", "") == "dynamic";
    for (const auto& d : p.outputs)
      quantizes = quantizes || d.dtype == DType::kF8E4M3 || d.dtype == DType::kF8E5M2;
    if (quantizes) {
      variants["perturbed"] = {{"skipped",
                                "the op quantizes: a step function, which one ULP "
                                "may cross"}};
    } else {
      std::vector<Tensor> nudged = wide_inputs;
      const tensor::Philox signs(s_.seed, 0x0b17);
      for (size_t k = 0; k < nudged.size(); ++k) {
        Tensor& t = nudged[k];
        if (!tensor::is_float(t.dtype()) || t.dtype() != precision) continue;
        Tensor f64 = t.to(DType::kF64);
        double* v = f64.mutable_data_as<double>();
        for (int64_t i = 0; i < f64.numel(); ++i) {
          if (!std::isfinite(v[i])) continue;
          const double up = signs.word(uint64_t(k) << 40 | uint64_t(i)) & 1 ? 1.0 : -1.0;
          v[i] += up * compare::ulp_of(v[i], precision);  // one ULP off
        }
        t = f64.to(precision);
      }
      const std::vector<Tensor> moved = run_once(be, nudged, wide_descs);
      if (!moved.empty()) judge("perturbed", moved, wide, precision);
    }
    if ((std::string(s_.op->name) == "add" || std::string(s_.op->name) == "mul") &&
        inputs.size() == 2 && inputs[0].shape() == inputs[1].shape()) {
      const std::vector<Tensor> swapped = run_once(be, {inputs[1], inputs[0]}, p.outputs);
      if (!swapped.empty()) judge("permuted", swapped, actual, s_.dtype);
    }
    (*detail)["perturbation"] = variants;
    return failure;
  }

  OpCaseSpec s_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform& platform) {
  OpCaseSpec spec = parse(c, platform);
  return std::make_unique<OpCase>(std::move(spec));
}

}  // namespace

CheckKind op_check_kind() {
  return {
      "op",
      {"op", "attrs", "dtype", "shape", "dims", "with", "index_dtype", "inputs", "golden", "warmup",
       "repeats", "dynamic_shapes", "fallback", "timeout", "perf_threshold", "description"},
      &prepare};
}

}  // namespace h0::checks
