// The engine-trace reader (io/trace_events.h) and its profile (io/trace_profile.h): on a trace the
// PyTorch profiler wrote (golden/tools/gen_profile_trace.py), on small hand-made traces for the
// forms a real profiler does not write here (begin/end pairs, device kernels, the unterminated
// array), and on malformed input.
#include "io/trace_profile.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "base/error.h"
#include "io/trace_events.h"
#include "test_gunzip.h"
#include "test_util.h"

namespace h0::io {
namespace {

using nlohmann::json;

const std::string kRun1 = "tests/data/traces/torch_cpu_tiny_mistral_run1.json.gz";

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

using test::gunzip;

std::map<std::pair<std::string, std::string>, store::ProfileData> by_key(const TraceProfile& p) {
  std::map<std::pair<std::string, std::string>, store::ProfileData> out;
  for (const auto& r : p.rows) out[{r.phase, r.name}] = r;
  return out;
}

// The PyTorch profiler's CPU trace of tiny-mistral: 1 prefill and 12 decode steps, host operators
// at their self time, per step.
TEST(TraceProfile, ATorchProfilerTraceOfAForward) {
  const TraceProfile p = profile_trace(test::source_path(kRun1), {});
  EXPECT_EQ(p.stream, "host");
  EXPECT_EQ(p.steps, 13);
  EXPECT_EQ(p.prefill_steps, 1);
  EXPECT_EQ(p.decode_steps, 12);
  EXPECT_GT(p.events, 8000);
  const auto rows = by_key(p);
  const auto& mm = rows.at({"steady/engine-decode", "aten::mm"});
  EXPECT_EQ(mm.samples_ns.size(), 12u);  // its time in each decode step
  EXPECT_GT(mm.count, 12);
  const auto& step = rows.at({"steady/engine-decode", "(step)"});
  ASSERT_EQ(step.samples_ns.size(), 12u);
  // Self times: the operators of a step add up to no more than the step (nesting counted twice
  // would pass it: aten::linear holds aten::addmm), and to a real part of it (the rest is
  // transformers' Python between the operators: 12-16 % here).
  std::vector<double> ops(12, 0.0);
  for (const auto& r : p.rows) {
    if (r.phase != "steady/engine-decode" || r.name == "(step)") continue;
    for (size_t i = 0; i < 12; ++i) ops[i] += r.samples_ns[i];
  }
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_LE(ops[i], step.samples_ns[i] * 1.0001) << "step " << i;
    EXPECT_GT(ops[i], step.samples_ns[i] * 0.05) << "step " << i;
  }
  // The same trace, not gzipped: the same profile.
  test::TempDir dir;
  write(dir.file("t.json"), gunzip(test::source_path(kRun1)));
  const TraceProfile plain = profile_trace(dir.file("t.json"), {});
  ASSERT_EQ(plain.rows.size(), p.rows.size());
  for (size_t i = 0; i < p.rows.size(); ++i) {
    EXPECT_EQ(plain.rows[i].name, p.rows[i].name);
    EXPECT_EQ(plain.rows[i].samples_ns, p.rows[i].samples_ns);
  }
}

// Begin/end pairs nest like complete events; an annotation between two operators gives its
// children's time to the operator around it.
TEST(TraceProfile, BeginEndPairsAndSelfTime) {
  test::TempDir dir;
  write(dir.file("t.json"), R"js([
    {"ph":"X","cat":"user_annotation","name":"decode","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"B","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":10},
    {"ph":"B","cat":"user_annotation","name":"inner","pid":1,"tid":1,"ts":15},
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":20,"dur":30},
    {"ph":"E","pid":1,"tid":1,"ts":55},
    {"ph":"E","pid":1,"tid":1,"ts":60},
    {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":70,"dur":5}
  ])js");
  const auto rows = by_key(profile_trace(dir.file("t.json"), {}));
  EXPECT_DOUBLE_EQ(rows.at({"steady/engine-decode", "aten::linear"}).total_ns, 20000);  // 50 - 30
  EXPECT_DOUBLE_EQ(rows.at({"steady/engine-decode", "aten::mm"}).total_ns, 30000);
  EXPECT_DOUBLE_EQ(rows.at({"steady/engine-decode", "aten::add"}).total_ns, 5000);
  EXPECT_DOUBLE_EQ(rows.at({"steady/engine-decode", "(step)"}).total_ns, 100000);
}

// Device kernels (a GPU trace): the kernels of the device, not the host's operators; steps from
// the device's annotations; names normalized; calls before the first step not counted.
TEST(TraceProfile, DeviceKernelsByStep) {
  test::TempDir dir;
  write(dir.file("t.json"), R"js({"traceEvents":[
    {"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"GPU 0"}},
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":9,"tid":9,"ts":0,"dur":500},
    {"ph":"X","cat":"kernel","name":"warmup_kernel","pid":0,"tid":7,"ts":1,"dur":3},
    {"ph":"X","cat":"gpu_user_annotation","name":"execute_context_1(5)_generation_0(0)","pid":0,"tid":7,"ts":10,"dur":40},
    {"ph":"X","cat":"kernel","name":"void gemm<float, 128>(float*, int)","pid":0,"tid":7,"ts":11,"dur":10},
    {"ph":"X","cat":"kernel","name":"void gemm<float, 64>(float*, int)","pid":0,"tid":7,"ts":22,"dur":6},
    {"ph":"X","cat":"gpu_user_annotation","name":"execute_context_0(0)_generation_1(1)","pid":0,"tid":7,"ts":60,"dur":30},
    {"ph":"X","cat":"kernel","name":"void gemm<float, 128>(float*, int)","pid":0,"tid":7,"ts":61,"dur":12},
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pageable)","pid":0,"tid":8,"ts":80,"dur":2}
  ]})js");
  const TraceProfile p = profile_trace(dir.file("t.json"), {});
  EXPECT_EQ(p.stream, "device");
  EXPECT_EQ(p.steps, 2);
  const auto rows = by_key(p);
  // vLLM's step names: a prefill step (1 request of 5 tokens), then a decode step.
  EXPECT_EQ(p.prefill_steps, 1);
  EXPECT_EQ(p.decode_steps, 1);
  const auto& gemm = rows.at({"steady/engine-prefill", "gemm"});  // both launches: one kernel
  EXPECT_EQ(gemm.count, 2);
  EXPECT_EQ(gemm.samples_ns, (std::vector<double>{16000}));
  EXPECT_EQ(rows.at({"steady/engine-decode", "gemm"}).samples_ns, (std::vector<double>{12000}));
  EXPECT_EQ(rows.count({"steady/engine-prefill", "aten::mm"}), 0u);       // the host's
  EXPECT_EQ(rows.count({"steady/engine-prefill", "warmup_kernel"}), 0u);  // before the first step
  EXPECT_EQ(rows.at({"steady/engine-decode", "Memcpy DtoH (Device -> Pageable)"}).count, 1);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("1 kernel calls before the first step"), std::string::npos);
}

TEST(TraceProfile, KernelNamesAreNormalized) {
  EXPECT_EQ(normalize_kernel_name("void at::native::vectorized_elementwise_kernel<4, "
                                  "at::native::AddFunctor<float>, std::array<char*, 3> >(int, "
                                  "at::native::AddFunctor<float>, std::array<char*, 3>)"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(normalize_kernel_name("aten::mm"), "aten::mm");
  EXPECT_EQ(normalize_kernel_name("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(normalize_kernel_name("nccl:all_reduce 0x7f3a2c001200 seq 123456"),
            "nccl:all_reduce 0x# seq #");
  EXPECT_EQ(normalize_kernel_name("Memcpy HtoD (Pageable -> Device)"),
            "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(normalize_kernel_name("at::native::(anonymous namespace)::cat_kernel(int)"),
            "at::native::(anonymous namespace)::cat_kernel");
  EXPECT_EQ(normalize_kernel_name("bool operator<(A, B)"), "operator<");
}

// The array form may end without its closing bracket; a cut object is malformed.
TEST(TraceProfile, UnterminatedArrayIsAcceptedACutObjectIsNot) {
  test::TempDir dir;
  write(dir.file("a.json"),
        R"js([{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":4},
           {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":5,"dur":4},)js");
  const TraceProfile p = profile_trace(dir.file("a.json"), {});
  EXPECT_EQ(p.kernel_calls, 2);
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes[0].find("no closing bracket"), std::string::npos);

  write(dir.file("b.json"),
        R"js({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1)js");
  try {
    profile_trace(dir.file("b.json"), {});
    FAIL() << "a cut trace was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), dir.file("b.json"));
    EXPECT_NE(e.message().find("malformed trace JSON at byte"), std::string::npos) << e.what();
  }
}

TEST(TraceProfile, NotATraceNoKernelsAndMissingFilesAreInputErrors) {
  test::TempDir dir;
  write(dir.file("cfg.json"), R"js({"hidden_size": 64, "layers": [1, 2]})js");
  write(dir.file("empty.json"),
        R"js({"traceEvents": [{"ph":"M","name":"process_name","pid":1}]})js");
  write(dir.file("junk.json"), std::string("\x1f\x8b\x08\x00garbage", 12));
  for (const char* name : {"cfg.json", "empty.json", "junk.json", "absent.json"}) {
    SCOPED_TRACE(name);
    EXPECT_THROW(profile_trace(dir.file(name), {}), InputError);
  }
  TraceProfileOptions bad;
  bad.step_pattern = "(unclosed";
  EXPECT_THROW(profile_trace(test::source_path(kRun1), bad), InputError);
}

// Arbitrary bytes never crash the reader: an InputError or a profile.
TEST(TraceProfile, RandomBytesAndDeepNestingFailCleanly) {
  test::TempDir dir;
  std::string deep = "{\"traceEvents\":[{\"ph\":\"X\",\"args\":";
  for (int i = 0; i < 100000; ++i) deep += "[";
  write(dir.file("deep.json"), deep);
  EXPECT_THROW(profile_trace(dir.file("deep.json"), {}), InputError);
  uint64_t x = 88172645463325252ull;
  for (int t = 0; t < 50; ++t) {
    std::string bytes = "{\"traceEvents\":[";
    for (int i = 0; i < 200; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      bytes += "{}[],:\"0123X\\ph"[x % 16];
    }
    write(dir.file("r.json"), bytes);
    try {
      profile_trace(dir.file("r.json"), {});
    } catch (const InputError&) {
    }
  }
}

}  // namespace
}  // namespace h0::io
