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
// natively (sample, quantize and dequantize run on the host).
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
                         check.rfind("dequantize", 0) == 0;
    EXPECT_EQ(route, host_op ? "host" : "native") << c["id"];
    native += route == "native";
  }
  EXPECT_GE(native, 30);
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
