#include "checks/collective_check.h"

#include <algorithm>
#include <cmath>

#include "checks/collective_sweep.h"
#include "mesh/communicator.h"
#include "mesh/nccl_communicator.h"
#include "suite/location.h"
#include "suite/platform.h"

namespace h0::checks {
namespace {

namespace coll = collectives;
using coll::Form;

struct CollectiveSpec {
  std::string id, check_id;
  const coll::Collective* op = nullptr;
  std::string reduce_name = "sum";
  mesh::ReduceOp reduce = mesh::ReduceOp::kSum;
  tensor::DType dtype = tensor::DType::kF32;
  std::vector<double> sizes;  // bytes
  int warmup = 2, repeats = 5, root = 0;
  std::string engine = "world";
};

// "8B", "1KiB", "64MiB": the largest binary unit that divides the size.
std::string size_label(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  auto n = static_cast<uint64_t>(bytes);
  int u = 0;
  while (u < 4 && n >= 1024 && n % 1024 == 0) n /= 1024, ++u;
  return std::to_string(n) + kUnits[u];
}

class CollectiveCase : public PreparedCase {
 public:
  explicit CollectiveCase(CollectiveSpec s) : s_(std::move(s)) {}

  nlohmann::json describe() const override {
    nlohmann::json sizes = nlohmann::json::array();
    for (double b : s_.sizes) sizes.push_back(size_label(b));
    return {{"id", s_.id},
            {"check", s_.check_id},
            {"kind", "collective"},
            {"op", s_.op->name},
            {"reduce", s_.op->reduces ? s_.reduce_name : ""},
            {"dtype", tensor::dtype_name(s_.dtype)},
            {"sizes", sizes},
            {"engine", s_.engine},
            {"warmup", s_.warmup},
            {"repeats", s_.repeats}};
  }

  CheckResult run(RunContext& ctx) override {
    CheckResult r;
    mesh::Communicator& world = ctx.world();
    try {
      std::unique_ptr<mesh::Communicator> nccl;
      std::unique_ptr<coll::Memory> memory = coll::host_memory();
      if (s_.engine == "nccl") {
        // Each wait bounded as the world's (--mesh-timeout) and within the case's time.
        const double case_s = timeout_s > 0 ? timeout_s : ctx.platform().case_timeout_s;
        const double timeout = world.timeout_s() > 0 && (case_s <= 0 || world.timeout_s() < case_s)
                                   ? world.timeout_s()
                                   : case_s;
        nccl = mesh::make_nccl_communicator(world, mesh::detect_rank_env().local_rank, timeout);
        memory = coll::device_memory();
      }
      mesh::Communicator& comm = nccl ? *nccl : world;
      if (s_.root >= comm.size()) {
        r.status = Status::kError;
        r.message = "root " + std::to_string(s_.root) + " is not a rank of a mesh of " +
                    std::to_string(comm.size());
        return r;
      }
      coll::Args args{comm.rank(), comm.size(), 0, s_.dtype, s_.reduce, s_.root};
      std::vector<coll::SizeResult> results;
      for (double bytes : s_.sizes)
        results.push_back(
            coll::run_size(comm, *memory, *s_.op, args, bytes, s_.warmup, s_.repeats));
      report(world, results, &r);
    } catch (const mesh::MeshTimeout& e) {
      r.status = Status::kTimeout;
      r.message = e.what();
    } catch (const mesh::MeshError& e) {
      r.status = Status::kError;
      r.message = e.what();
    }
    return r;
  }

 private:
  std::string name() const {
    return std::string(s_.op->name) + (s_.op->reduces ? "(" + s_.reduce_name + ")" : "");
  }
  bool both_forms() const { return s_.op->out_of_place && s_.op->in_place; }
  std::string suffix(Form f) const {
    return both_forms() && f == coll::kInPlace ? "_in_place" : "";
  }

  // Sums the wrong counts and takes the slowest rank's mean time over `world`, then fills the
  // metrics, profile rows, details and status (the same on every rank).
  void report(mesh::Communicator& world, const std::vector<coll::SizeResult>& results,
              CheckResult* r) const {
    std::vector<int64_t> wrong;
    std::vector<double> mean_ns;
    for (const auto& s : results) {
      for (const auto& f : s.form) wrong.push_back(f.wrong), mean_ns.push_back(f.mean_ns());
    }
    world.all_reduce(wrong.data(), wrong.data(), wrong.size(), tensor::DType::kI64,
                     mesh::ReduceOp::kSum);
    world.all_reduce(mean_ns.data(), mean_ns.data(), mean_ns.size(), tensor::DType::kF64,
                     mesh::ReduceOp::kMax);
    const int n = world.size();
    int64_t wrong_total = 0;
    double busbw_max = 0;
    std::vector<std::string> failures;
    r->details["sizes"] = nlohmann::json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      const coll::SizeResult& s = results[i];
      const std::string label = size_label(s.bytes);
      nlohmann::json row = {{"size", label}, {"bytes", s.algbw_bytes}, {"count", s.count}};
      for (Form f : {coll::kOutOfPlace, coll::kInPlace}) {
        if (!s.form[f].ran) continue;
        const int64_t w = wrong[2 * i + f];
        const double seconds = mean_ns[2 * i + f] * 1e-9;
        const double algbw = seconds > 0 ? s.algbw_bytes / seconds / 1e9 : 0;
        const double busbw = algbw * s_.op->bus_factor(n);
        r->metrics.emplace_back("wrong" + suffix(f) + "@" + label, double(w));
        r->metrics.emplace_back("algbw_gbps" + suffix(f) + "@" + label, algbw);
        r->metrics.emplace_back("busbw_gbps" + suffix(f) + "@" + label, busbw);
        r->profile.push_back(summarize(
            "collective",
            std::string(s_.op->name) + "[" + label + (suffix(f).empty() ? "" : ",in_place") + "]",
            s.form[f].samples_ns));
        r->profile.back().bytes = s.algbw_bytes;
        const std::string key = suffix(f).empty() ? "" : "_in_place";
        row["wrong" + key] = w;
        row["time_us" + key] = seconds * 1e6;
        row["busbw_gbps" + key] = busbw;
        if (w > 0 && s.form[f].first_wrong >= 0) {
          row["first_wrong" + key] = {
              {"index", s.form[f].first_wrong}, {"got", s.form[f].got}, {"want", s.form[f].want}};
        }
        wrong_total += w;
        busbw_max = std::max(busbw_max, busbw);
        if (w > 0)
          failures.push_back(std::to_string(w) + " wrong at " + label + " " + coll::form_name(f));
      }
      r->details["sizes"].push_back(row);
    }
    r->metrics.emplace_back("wrong_total", double(wrong_total));
    r->metrics.emplace_back("busbw_gbps_max", busbw_max);
    r->metrics.emplace_back("ranks", double(n));
    r->status = failures.empty() ? Status::kPass : Status::kFail;
    if (failures.empty()) return;
    r->message =
        name() + " " + tensor::dtype_name(s_.dtype) + " over " + std::to_string(n) + " ranks: ";
    for (size_t i = 0; i < failures.size() && i < 3; ++i)
      r->message += (i ? "; " : "") + failures[i];
    if (failures.size() > 3)
      r->message += "; and " + std::to_string(failures.size() - 3) + " more sizes";
  }

  CollectiveSpec s_;
};

std::string as_name(const suite::Case& c, const YAML::Node& n, const char* what,
                    const std::vector<std::string>& allowed) {
  if (!n.IsScalar() || std::find(allowed.begin(), allowed.end(), n.Scalar()) == allowed.end()) {
    fail(c, n,
         std::string("unknown ") + what + " '" + (n.IsScalar() ? n.Scalar() : "...") +
             "' (expected one of: " + suite::join_names(allowed) + ")");
  }
  return n.Scalar();
}

// `sizes: {min, max, factor}`, a list of sizes, or one size.
std::vector<double> parse_sizes(const suite::Case& c, const YAML::Node& n) {
  const std::string& file = c.check->file;
  if (!n.IsDefined()) return {8, 1024, 1 << 20};
  if (n.IsScalar()) return {suite::parse_size(file, n)};
  std::vector<double> out;
  if (n.IsSequence()) {
    for (const auto& v : n) out.push_back(suite::parse_size(file, v));
  } else if (n.IsMap()) {
    suite::for_each_entry(file, n,
                          [&](const std::string& key, const YAML::Node& k, const YAML::Node&) {
                            if (key != "min" && key != "max" && key != "factor")
                              fail(c, k, "unknown key '" + key + "' in sizes (min, max, factor)");
                          });
    if (!n["min"] || !n["max"])
      fail(c, n, "sizes needs min and max, e.g. {min: 8B, max: 64MiB, factor: 2}");
    const double lo = suite::parse_size(file, n["min"]), hi = suite::parse_size(file, n["max"]);
    double factor = 2;
    if (n["factor"]) {
      factor = double_of(n["factor"]).value_or(0);
      if (!(factor > 1)) fail(c, n["factor"], "factor must be a number > 1");
    }
    if (lo < 1 || hi < lo) fail(c, n, "sizes needs 1B <= min <= max");
    for (double b = lo; b <= hi * (1 + 1e-12); b *= factor) out.push_back(std::floor(b));
  }
  if (out.empty()) fail(c, n, "sizes must be a size, a list of sizes or {min, max, factor}");
  return out;
}

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  CollectiveSpec s;
  s.id = c.id;
  s.check_id = c.check->id;
  std::vector<std::string> ops;
  for (const auto& row : coll::table()) ops.push_back(row.name);
  const YAML::Node op = case_field(c, "op");
  if (!op.IsDefined())
    fail(c, op, "kind collective needs `op` (one of: " + suite::join_names(ops) + ")");
  s.op = coll::find(as_name(c, op, "op", ops));
  if (const YAML::Node n = case_field(c, "reduce"); n.IsDefined()) {
    if (!s.op->reduces) fail(c, n, std::string(s.op->name) + " takes no `reduce`");
    s.reduce_name = as_name(c, n, "reduce", {"sum", "max"});
    s.reduce = s.reduce_name == "sum" ? mesh::ReduceOp::kSum : mesh::ReduceOp::kMax;
  }
  if (const YAML::Node n = case_field(c, "dtype"); n.IsDefined()) {
    const auto d = n.IsScalar() ? tensor::parse_dtype(n.Scalar()) : std::nullopt;
    if (!d) fail(c, n, "unknown dtype (expected one of: " + tensor::dtype_names() + ")");
    s.dtype = *d;
    std::vector<std::string> allowed = {"f64", "f32", "f16", "bf16", "i64", "i32"};
    if (!s.op->reduces) allowed.push_back("i8");
    if (std::find(allowed.begin(), allowed.end(), tensor::dtype_name(s.dtype)) == allowed.end()) {
      fail(c, n,
           std::string(s.op->name) + " is checked in " + suite::join_names(allowed) + ", not " +
               n.Scalar());
    }
  }
  s.sizes = parse_sizes(c, case_field(c, "sizes"));
  s.warmup = int(field_int(c, "warmup", s.warmup, 0));
  s.repeats = int(field_int(c, "repeats", s.repeats, 1));
  s.root = int(field_int(c, "root", s.root, 0));
  if (const YAML::Node n = case_field(c, "engine"); n.IsDefined())
    s.engine = as_name(c, n, "engine", {"world", "nccl"});
  return std::make_unique<CollectiveCase>(std::move(s));
}

}  // namespace

CheckKind collective_check_kind() {
  return {"collective",
          {"op", "reduce", "dtype", "sizes", "root", "engine", "warmup", "repeats", "timeout",
           "description"},
          &prepare};
}

}  // namespace h0::checks
