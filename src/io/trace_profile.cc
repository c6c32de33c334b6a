#include "io/trace_profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <unordered_map>

#include "base/error.h"
#include "io/trace_events.h"

namespace h0::io {
namespace {

constexpr double kNsPerUs = 1000;

bool is_device_cat(const std::string& cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}

bool is_annotation_cat(const std::string& cat) {
  return cat.find("annotation") != std::string::npos;
}

// A process whose name says it is a device timeline (the PyTorch profiler's "GPU 0", msprof's
// "Ascend Hardware", a vendor's "Device 0" or "stream 7").
bool is_device_process(const std::string& name) {
  static const std::regex device("GPU|NPU|Ascend Hardware|Device|[Ss]tream",
                                 std::regex::ECMAScript | std::regex::optimize);
  return std::regex_search(name, device);
}

std::string thread_key(const TraceEvent& e) { return e.pid + "/" + e.tid; }

struct Step {
  double begin_us = 0, end_us = 0;
  int phase = 0;  // index into kPhases
};

constexpr const char* kPhases[] = {"steady/engine", "steady/engine-prefill", "steady/engine-decode",
                                   "steady/engine-mixed"};
constexpr int kPhaseCount = 4;

// A step's phase from its annotation: vLLM's "execute_context_N(..)_generation_M(..)" (N requests
// in prefill, M in decode: prefill, decode or mixed; neither: the generic phase), else a name
// saying prefill or decode.
int phase_of(const std::string& step_name) {
  static const std::regex vllm("execute_context_(\\d+)\\(.*_generation_(\\d+)\\(.*");
  std::smatch m;
  if (std::regex_match(step_name, m, vllm)) {
    const bool prefill = m[1] != "0", decode = m[2] != "0";
    return prefill && decode ? 3 : prefill ? 1 : decode ? 2 : 0;
  }
  if (step_name.find("prefill") != std::string::npos) return 1;
  if (step_name.find("decode") != std::string::npos) return 2;
  return 0;
}

// Complete events and begin/end pairs, per thread, as (kind, name, begin, duration): `kind` is the
// caller's tag of the begin (or complete) event, 0 for one it does not want.
class Spans {
 public:
  template <typename Done>
  void feed(const TraceEvent& e, int kind, const Done& done) {
    if (e.ph == "X" && kind != 0 && e.dur >= 0) {
      done(kind, e.name, e.ts, e.dur);
    } else if (e.ph == "B") {
      open_[thread_key(e)].push_back({e.name, e.ts, kind});
    } else if (e.ph == "E") {
      auto it = open_.find(thread_key(e));
      if (it == open_.end() || it->second.empty()) return;  // an end without its begin
      const Open b = it->second.back();
      it->second.pop_back();
      if (b.kind != 0) done(b.kind, b.name, b.ts, std::max(0.0, e.ts - b.ts));
    }
  }

 private:
  struct Open {
    std::string name;
    double ts = 0;
    int kind = 0;
  };
  std::unordered_map<std::string, std::vector<Open>> open_;
};

// What the first pass learns: the steps and which events are the device's.
struct Layout {
  std::vector<Step> host_steps, device_steps;
  std::map<std::string, std::string> process_names;  // pid -> name
  int64_t device_cat_events = 0;
  std::map<std::string, int64_t> complete_by_pid;
};

Layout read_layout(const std::string& path, const std::regex& step_re, TraceProfile* out) {
  Layout l;
  Spans annotations;
  enum { kNone, kHost, kDevice };
  const TraceReadStats stats = read_trace_events(path, [&](const TraceEvent& e) {
    if (e.ph == "M") {
      if (e.name == "process_name") l.process_names[e.pid] = e.args_name;
      return;
    }
    if (is_device_cat(e.cat)) ++l.device_cat_events;
    if (e.ph == "X" && !is_annotation_cat(e.cat)) ++l.complete_by_pid[e.pid];
    int kind = kNone;
    if (e.cat == "gpu_user_annotation")
      kind = kDevice;
    else if (is_annotation_cat(e.cat) || e.cat.empty())
      kind = kHost;
    annotations.feed(e, kind, [&](int k, const std::string& name, double ts, double dur) {
      if (!std::regex_match(name, step_re)) return;
      (k == kDevice ? l.device_steps : l.host_steps).push_back({ts, ts + dur, phase_of(name)});
    });
  });
  out->events = stats.events;
  out->bytes = stats.bytes;
  out->metadata = stats.metadata;
  if (stats.unterminated)
    out->notes.push_back("the event array has no closing bracket (accepted, as the format allows)");
  for (auto* steps : {&l.host_steps, &l.device_steps}) {
    std::sort(steps->begin(), steps->end(),
              [](const Step& a, const Step& b) { return a.begin_us < b.begin_us; });
  }
  return l;
}

// A uniform sample of at most kMaxSamples values (reservoir sampling, seeded: reproducible).
class Reservoir {
 public:
  void add(double v) {
    ++seen_;
    if (values_.size() < kMaxSamples) {
      values_.push_back(v);
      return;
    }
    const uint64_t j = std::uniform_int_distribution<uint64_t>(0, seen_ - 1)(rng_);
    if (j < kMaxSamples) values_[j] = v;
  }
  const std::vector<double>& values() const { return values_; }

 private:
  std::vector<double> values_;
  uint64_t seen_ = 0;
  std::mt19937_64 rng_{0};
};

struct Kernel {
  int64_t count = 0;
  double total_ns = 0;
  Reservoir calls;
  std::vector<double> per_step;  // ns in each step of the phase
};

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

store::ProfileData row_of(const std::string& phase, const std::string& name, const Kernel& k,
                          bool stepped) {
  store::ProfileData p;
  p.phase = phase;
  p.name = name;
  p.count = k.count;
  p.total_ns = k.total_ns;
  const std::vector<double>& calls = k.calls.values();
  if (!calls.empty()) {
    p.min_ns = *std::min_element(calls.begin(), calls.end());
    p.median_ns = quantile(calls, 0.5);
    p.p99_ns = quantile(calls, 0.99);
    double sum = 0, sq = 0;
    for (double v : calls) sum += v;
    p.mean_ns = sum / double(calls.size());
    for (double v : calls) sq += (v - p.mean_ns) * (v - p.mean_ns);
    p.stddev_ns = calls.size() > 1 ? std::sqrt(sq / double(calls.size() - 1)) : 0;
  }
  p.samples_ns = stepped ? k.per_step : calls;
  return p;
}

// Self time of the host's operators: per thread, the open calls (in start order) and the time
// of their finished children. Calls it does not want (an annotation's begin) stay on the stack
// for their end to match, and give their children's time to the nearest wanted call around them.
class SelfTimes {
 public:
  // `done(name, begin_us, self_us)` for each wanted call once it and its children are over.
  template <typename Done>
  void feed(const TraceEvent& e, bool wanted, const Done& done) {
    Thread& t = threads_[thread_key(e)];
    if (e.ph == "X") {
      if (e.dur < 0 || !wanted) return;
      if (e.ts < t.last_ts) t.unordered = true;
      t.last_ts = e.ts;
      if (t.unordered) {  // not in start order: no nesting can be read, the inclusive time
        flush(t, done);
        done(e.name, e.ts, e.dur);
        return;
      }
      close_before(t, e.ts, done);
      add_child(t, e.dur);
      t.open.push_back({e.name, e.ts, e.ts + e.dur, 0, false, true});
    } else if (e.ph == "B") {
      close_before(t, e.ts, done);
      t.open.push_back({e.name, e.ts, 0, 0, true, wanted});
    } else if (e.ph == "E") {
      close_before(t, e.ts, done);
      if (t.open.empty() || !t.open.back().begin_only) return;
      const Open o = t.open.back();
      t.open.pop_back();
      const double dur = std::max(0.0, e.ts - o.ts);
      if (!o.wanted) return;
      add_child(t, dur);
      done(o.name, o.ts, std::max(0.0, dur - o.children));
    }
  }
  template <typename Done>
  void finish(const Done& done) {
    for (auto& [key, t] : threads_) flush(t, done);
  }
  int64_t unordered_threads() const {
    int64_t n = 0;
    for (const auto& [key, t] : threads_) n += t.unordered;
    return n;
  }

 private:
  struct Open {
    std::string name;
    double ts = 0, end = 0, children = 0;
    bool begin_only = false;  // a "B" whose "E" has not come
    bool wanted = true;
  };
  struct Thread {
    std::vector<Open> open;
    double last_ts = -1e300;
    bool unordered = false;
  };
  static void add_child(Thread& t, double dur) {
    for (auto it = t.open.rbegin(); it != t.open.rend(); ++it) {
      if (it->wanted) {
        it->children += dur;
        return;
      }
    }
  }
  template <typename Done>
  static void close_before(Thread& t, double ts, const Done& done) {
    while (!t.open.empty() && !t.open.back().begin_only && t.open.back().end <= ts) {
      const Open o = t.open.back();
      t.open.pop_back();
      done(o.name, o.ts, std::max(0.0, o.end - o.ts - o.children));
    }
  }
  template <typename Done>
  static void flush(Thread& t, const Done& done) {
    close_before(t, 1e300, done);
    t.open.clear();  // begins without their ends: not counted
  }
  std::unordered_map<std::string, Thread> threads_;
};

// The kernel calls by phase and step: each call goes to the last step that began at or before
// it (before the first: not counted), its name normalized once.
class KernelTable {
 public:
  explicit KernelTable(const std::vector<Step>& steps) : steps_(steps), index_(steps.size()) {
    for (size_t i = 0; i < steps.size(); ++i) index_[i] = per_phase_[steps[i].phase]++;
  }
  int64_t steps_of(int phase) const { return per_phase_[phase]; }
  int64_t calls() const { return calls_; }
  int64_t outside() const { return outside_; }

  void add(const std::string& raw, double ts_us, double dur_us) {
    ++calls_;
    int phase = 0;
    int64_t step = -1;
    if (!steps_.empty()) {
      const auto it = std::upper_bound(steps_.begin(), steps_.end(), ts_us,
                                       [](double t, const Step& s) { return t < s.begin_us; });
      if (it == steps_.begin()) {
        ++outside_;
        return;
      }
      const size_t i = size_t(it - steps_.begin()) - 1;
      phase = steps_[i].phase;
      step = index_[i];
    }
    Kernel& k = kernels_[{phase, normalized(raw)}];
    const double ns = dur_us * kNsPerUs;
    ++k.count;
    k.total_ns += ns;
    k.calls.add(ns);
    if (step >= 0) {
      if (k.per_step.empty()) k.per_step.assign(size_t(per_phase_[phase]), 0.0);
      k.per_step[size_t(step)] += ns;
    }
  }

  // The kernels' rows, then each phase's step durations as "(step)" (a kernel's share of them).
  std::vector<store::ProfileData> rows() const {
    std::vector<store::ProfileData> out;
    for (const auto& [key, k] : kernels_)
      out.push_back(row_of(kPhases[key.first], key.second, k, !steps_.empty()));
    std::map<int, Kernel> step_rows;
    for (const Step& s : steps_) {
      Kernel& k = step_rows[s.phase];
      const double ns = (s.end_us - s.begin_us) * kNsPerUs;
      ++k.count;
      k.total_ns += ns;
      k.calls.add(ns);
      k.per_step.push_back(ns);
    }
    for (const auto& [phase, k] : step_rows)
      out.push_back(row_of(kPhases[phase], "(step)", k, true));
    return out;
  }

 private:
  // Names repeat: each normalized once (the cache bounded, for traces whose names never repeat).
  const std::string& normalized(const std::string& raw) {
    if (names_.size() > 100000) names_.clear();
    auto [it, fresh] = names_.try_emplace(raw);
    if (fresh) it->second = normalize_kernel_name(raw);
    return it->second;
  }

  const std::vector<Step>& steps_;
  std::vector<int64_t> index_;  // a step's number within its phase
  int64_t per_phase_[kPhaseCount] = {0, 0, 0, 0};
  std::map<std::pair<int, std::string>, Kernel> kernels_;
  std::unordered_map<std::string, std::string> names_;
  int64_t calls_ = 0, outside_ = 0;
};

std::regex step_regex(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    throw InputError("--step-pattern", pattern + ": " + e.what());
  }
}

}  // namespace

TraceProfile profile_trace(const std::string& path, const TraceProfileOptions& options) {
  TraceProfile out;
  const Layout layout = read_layout(path, step_regex(options.step_pattern), &out);
  std::set<std::string> device_pids;
  for (const auto& [pid, name] : layout.process_names) {
    if (is_device_process(name) && layout.complete_by_pid.count(pid)) device_pids.insert(pid);
  }
  const bool device = layout.device_cat_events > 0 || !device_pids.empty();
  out.stream = device ? "device" : "host";
  const std::vector<Step>& steps =
      device && !layout.device_steps.empty() ? layout.device_steps : layout.host_steps;
  KernelTable table(steps);
  out.steps = int64_t(steps.size());
  out.prefill_steps = table.steps_of(1);
  out.decode_steps = table.steps_of(2);
  out.mixed_steps = table.steps_of(3);

  auto add_call = [&table](const std::string& name, double ts, double dur) {
    table.add(name, ts, dur);
  };
  Spans device_spans;
  SelfTimes host_ops;
  read_trace_events(path, [&](const TraceEvent& e) {
    if (e.ph == "M") return;
    if (device) {
      const bool kernel =
          is_device_cat(e.cat) || (device_pids.count(e.pid) && !is_annotation_cat(e.cat));
      device_spans.feed(
          e, kernel ? 1 : 0,
          [&](int, const std::string& name, double ts, double dur) { add_call(name, ts, dur); });
    } else {
      host_ops.feed(e, e.cat == "cpu_op", add_call);
    }
  });
  host_ops.finish(add_call);
  out.kernel_calls = table.calls();
  if (out.kernel_calls == 0) {
    throw InputError(path,
                     "no kernel events: neither device kernels (cat kernel, gpu_memcpy, a "
                     "device process) nor host operators (cat cpu_op)");
  }
  if (table.outside() > 0) {
    out.notes.push_back(std::to_string(table.outside()) +
                        " kernel calls before the first step (warm-up) not counted");
  }
  if (const int64_t n = host_ops.unordered_threads(); n > 0) {
    out.notes.push_back(std::to_string(n) +
                        " threads' events not in start order: their operators' inclusive time");
  }
  out.rows = table.rows();
  return out;
}

std::string normalize_kernel_name(std::string_view name) {
  std::string s;
  s.reserve(name.size());
  // Template arguments: every balanced <...> group ("operator<" and "->" are not groups).
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool arrow = c == '>' && i > 0 && name[i - 1] == '-';
    if (c == '<' && !(i >= 8 && name.substr(i - 8, 8) == "operator")) {
      ++depth;
      continue;
    }
    if (c == '>' && depth > 0 && !arrow) {
      --depth;
      continue;
    }
    if (depth == 0) s += c;
  }
  if (depth > 0) s = std::string(name);  // unbalanced: not templates, keep the name as written
  // A parameter list right after the function name: "kernel(float*, int)" -> "kernel".
  if (!s.empty() && s.back() == ')') {
    int d = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++d;
      if (s[i] == '(' && --d == 0) {
        if (i > 0 && s[i - 1] != ' ') s.resize(i);
        break;
      }
    }
  }
  static const std::regex return_type(
      "^((static|__global__|void|int|float|double|unsigned|bool)\\s+)+");
  static const std::regex hex("0x[0-9a-fA-F]+");
  static const std::regex number("\\d{4,}");
  s = std::regex_replace(s, return_type, "");
  s = std::regex_replace(s, hex, "0x#");
  s = std::regex_replace(s, number, "#");
  const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string(name) : s.substr(b, e - b + 1);
}

}  // namespace h0::io
