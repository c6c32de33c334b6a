// The opencl and cuda plugins (src/backends/opencl, src/backends/cuda), loaded the way the
// harness loads any vendor plugin: the fingerprint, honest supports() answers, clear errors
// for a bad selection or a missing device, and the f16 storage kernels on PoCL (forced on: PoCL
// has no cl_khr_fp16, so the ops suite's f16 cases fall back there). Each part is compiled
// only when its plugin is built.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "backend/backend.h"
#include "harness/cli_util.h"

namespace h0::test {
namespace {

using backend::Backend;
using tensor::DType;

[[maybe_unused]] std::string open_error(const std::string& lib, const nlohmann::json& options) {
  try {
    Backend::open({"", lib, options});
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// A platform file for `lib` with `options` (JSON), in `dir`.
[[maybe_unused]] std::string platform_file(const TempDir& dir, const std::string& lib,
                                           const std::string& options) {
  const std::string path = dir.file("platform.yaml");
  std::ofstream(path) << "platform: test\nbackend: {lib: " << lib << ", options: " << options
                      << "}\nfallback: host\nisolation: none\n";
  return path;
}

#ifdef H0_OPENCL_PLUGIN
TEST(OpenclPlugin, OpensPoclWithAFingerprintAndAnswersSupportHonestly) {
  auto b = Backend::open({"", H0_OPENCL_PLUGIN, {{"platform", "PoCL"}}});
  EXPECT_EQ(b->name(), "opencl");
  const auto info = b->stack_info();
  for (const char* key : {"device", "driver", "runtime", "op_library", "compiler"}) {
    ASSERT_TRUE(info.contains(key) && info[key].is_string()) << key << " in " << info.dump();
    EXPECT_FALSE(info[key].get<std::string>().empty()) << key;
  }
  EXPECT_NE(info["runtime"].get<std::string>().find("PoCL"), std::string::npos) << info.dump();
  for (const char* op :
       {"matmul", "linear", "rmsnorm", "rope", "attention", "paged_attention", "moe_gate",
        "moe_experts", "embedding", "argmax", "patch_embed", "softmax", "swiglu"}) {
    EXPECT_TRUE(b->supports(op, DType::kF32)) << op;
    EXPECT_TRUE(b->supports(op, DType::kBF16)) << op;
    EXPECT_FALSE(b->supports(op, DType::kF16)) << op << ": PoCL has no cl_khr_fp16";
    EXPECT_FALSE(b->supports(op, DType::kF64)) << op;
  }
  for (const char* op : {"sample", "quantize", "dequantize"})
    EXPECT_FALSE(b->supports(op, DType::kF32)) << op;
  // fp8 weights dequantized on the device: f32 calls only (bf16 ones are decomposed).
  EXPECT_TRUE(b->supports("scaled_linear", DType::kF32));
  EXPECT_FALSE(b->supports("scaled_linear", DType::kBF16));
  EXPECT_TRUE(b->supports("dequantize_mxfp4", DType::kBF16));
}

TEST(OpenclPlugin, BadSelectionsAndOptionsAreClearErrors) {
  const std::string none = open_error(H0_OPENCL_PLUGIN, {{"device", "no-such-gpu"}});
  EXPECT_NE(none.find("opencl: no device matches platform '', device 'no-such-gpu' (devices: 0: "),
            std::string::npos)
      << none;
  EXPECT_EQ(
      open_error(H0_OPENCL_PLUGIN, {{"threads", 4}}),
      "backend 'opencl': init failed: invalid argument: opencl: bad option 'threads': 4 (expected "
      "platform, device: an index or a name part; f16: a boolean)");
}

// The ops suite's f16 cases with the storage-only f16 kernels forced on: every one passes
// natively (sample, quantize and dequantize run on the host; dequantize_mxfp4 has kernels).
TEST(OpenclPlugin, F16StorageKernelsPassTheOpsSuitesF16Cases) {
  TempDir dir;
  const std::string platform = platform_file(dir, H0_OPENCL_PLUGIN, "{f16: true}");
  const Result r = run_harness("run suites/ops.yaml -q --db " + dir.file("r.db") + " --json " +
                               dir.file("r.json") + " --platform " + platform +
                               " --filter '*f16*-*large*:*prefill*:*decode*:*bf16*'");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json run = nlohmann::json::parse(std::ifstream(dir.file("r.json")));
  int native = 0;
  for (const auto& c : run["cases"]) {
    const std::string check = c["check"], route = c["details"]["route"];
    const bool host_op = check.rfind("sample", 0) == 0 || check.rfind("quantize", 0) == 0 ||
                         (check.rfind("dequantize", 0) == 0 &&
                          check.rfind("dequantize_mxfp4", 0) != 0);  // which has kernels
    EXPECT_EQ(route, host_op ? "host" : "native") << c["id"];
    native += route == "native";
  }
  EXPECT_GE(native, 30);
}

// What `b` says of one run_op call (outputs shaped as `out`): "" when it runs, else the status and
// the backend's message without its "backend '<name>': run_op '<op>' failed: " prefix.
std::string rejection(Backend& b, const std::string& op, const std::vector<tensor::Tensor>& in,
                      const std::vector<tensor::Tensor>& out, const nlohmann::json& attrs) {
  std::vector<backend::DeviceTensor> din, dout;
  std::vector<const backend::DeviceTensor*> ins;
  std::vector<backend::DeviceTensor*> outs;
  for (const tensor::Tensor& t : in) din.push_back(b.upload(t));
  for (const tensor::Tensor& t : out) dout.push_back(b.allocate(t.dtype(), t.shape()));
  for (const auto& t : din) ins.push_back(&t);
  for (auto& t : dout) outs.push_back(&t);
  try {
    b.run_op(op, ins, outs, attrs.dump());
  } catch (const backend::BackendError& e) {
    const std::string what = e.what(), prefix = "' failed: ";
    return what.substr(what.find(prefix) + prefix.size());
  }
  return "";
}

// The cpu backend and the device plugins check a call's operands with one code
// (backends/portable/operands.cc, op_operands.cc): the same bad call gets the same status and
// the same words from both, down to the position of a bad id.
TEST(OpenclPlugin, RejectsABadCallWithTheCpuBackendsWords) {
  auto cpu = Backend::open({"cpu", "", nlohmann::json::object()});
  auto cl = Backend::open({"", H0_OPENCL_PLUGIN, {{"platform", "PoCL"}}});
  using tensor::Tensor;
  const auto f32 = [](tensor::Shape shape) { return Tensor::zeros(DType::kF32, shape); };
  const auto i32 = [](tensor::Shape shape, int64_t at, int32_t value) {
    Tensor t = Tensor::zeros(DType::kI32, shape);
    t.mutable_data_as<int32_t>()[at] = value;
    return t;
  };
  struct Bad {
    std::string op;
    std::vector<Tensor> in;
    std::vector<Tensor> out;
    nlohmann::json attrs;
    std::string says;
  };
  const std::vector<Bad> bad = {
      {"embedding",
       {i32({3}, 1, 5), f32({5, 4})},
       {f32({3, 4})},
       {},
       "invalid argument: embedding: ids[1] = 5 is outside the table's 5 rows"},
      {"paged_attention",
       {f32({1, 2, 8}), f32({3, 4, 2, 8}), f32({3, 4, 2, 8}), i32({2}, 1, -1)},
       {f32({1, 2, 8})},
       {},
       "invalid argument: paged_attention: block_table[1] = -1 is outside the cache's 3 blocks"},
      {"attention",
       {f32({1, 3, 8}), f32({4, 2, 8}), f32({4, 2, 8})},
       {f32({1, 3, 8})},
       {},
       "invalid argument: attention: q heads (3) must be a multiple of kv heads (2)"},
      {"rope",
       {f32({2, 2, 8}), i32({2}, 0, 0)},
       {f32({2, 2, 8})},
       {{"rotary_dim", 3}},
       "invalid argument: rope: attr rotary_dim must be even and in (0, Dh = 8], got 3"},
      {"rope",
       {f32({2, 2, 8}), i32({3}, 0, 0)},
       {f32({2, 2, 8})},
       {},
       "invalid argument: rope: positions must be [2] i32 or i64, got [3] i32"},
      {"moe_gate",
       {f32({2, 4})},
       {f32({2, 5}), i32({2, 5}, 0, 0)},
       {{"top_k", 5}},
       "invalid argument: moe_gate: attr top_k must be in [1, 4] (the experts eligible), got 5"},
      {"moe_experts",
       {f32({2, 4}), f32({2, 1}), i32({2, 1}, 1, 7), f32({3, 6, 4}), f32({3, 6, 4}),
        f32({3, 4, 6})},
       {f32({2, 4})},
       {},
       "invalid argument: moe_experts: ids[1, 0] = 7 is outside the 3 experts"},
      {"lightning_indexer",
       {f32({2, 2, 8}), f32({3, 4, 8}), f32({2, 2}), i32({2}, 0, 0)},
       {i32({2, 1}, 0, 0)},
       {{"topk", 0}},
       "invalid argument: lightning_indexer: attr topk must be positive, got 0"},
      {"causal_conv1d",
       {f32({3, 4}), f32({4, 1}), f32({4, 0})},
       {f32({3, 4}), f32({4, 0})},
       {},
       "invalid argument: causal_conv1d: w must be [C, K >= 2], got [4, 1] f32"},
      {"causal_conv1d",
       {f32({3, 4}), f32({4, 2}), f32({4, 1})},
       {f32({3, 4}), f32({4, 1})},
       {{"activation", "gelu"}},
       "unsupported: causal_conv1d: activation 'gelu' (silu or none)"},
      {"gated_delta_rule",
       {f32({2, 2, 4}), f32({2, 2, 4}), f32({2, 3, 4}), f32({2, 3}), f32({2, 3}), f32({3, 4, 4})},
       {f32({2, 3, 4}), f32({3, 4, 4})},
       {},
       "invalid argument: gated_delta_rule: v must be [T, Hv, Dv] with Hv a multiple of Hk = 2, "
       "got [2, 3, 4] f32"},
      {"sparse_attention",
       {f32({1, 2, 8}), f32({2, 4, 1, 8}), f32({2, 4, 1, 8}), i32({2}, 1, 1), i32({1, 3}, 2, 8)},
       {f32({1, 2, 8})},
       {},
       "invalid argument: sparse_attention: indices[0, 2] = 8 is outside [-1, context_len = 8)"},
  };
  for (const Bad& b : bad) {
    const std::string said = rejection(*cpu, b.op, b.in, b.out, b.attrs);
    EXPECT_EQ(said, b.says) << b.op;
    EXPECT_EQ(rejection(*cl, b.op, b.in, b.out, b.attrs), said) << b.op;
  }
}
#endif

#ifdef H0_CUDA_PLUGIN
TEST(CudaPlugin, WithoutADeviceInitFailsWithAClearMessage) {
  const std::string error = open_error(H0_CUDA_PLUGIN, {{"device", 0}});
  if (error.empty()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(
      error.rfind(
          "backend 'cuda': init failed: device error: cuda: no CUDA device (cudaGetDeviceCount: ",
          0),
      0u)
      << error;
}

TEST(CudaPlugin, WithoutADeviceTheRunSaysWhyAndExitsOne) {
  if (open_error(H0_CUDA_PLUGIN, {{"device", 0}}).empty())
    GTEST_SKIP() << "a CUDA device is present";
  TempDir dir;
  const std::string platform = platform_file(dir, H0_CUDA_PLUGIN, "{device: 0}");
  const Result r = run_harness("run suites/ops.yaml --db " + dir.file("r.db") + " --platform " +
                               platform + " --filter 'rmsnorm[*'");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("cuda: no CUDA device (cudaGetDeviceCount: "), std::string::npos)
      << r.out << r.err;
}
#endif

}  // namespace
}  // namespace h0::test
