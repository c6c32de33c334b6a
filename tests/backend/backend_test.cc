// The plugin loader, the host API and the fallback routes.
#include "backend/backend.h"

#include <gtest/gtest.h>

#include <cstring>

#include "backend/fallback.h"
#include "backend/registry.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "base/error.h"
#include "checks/input_synth.h"
#include "compare/tensor_compare.h"
#include "ops/op.h"

namespace h0::backend {
namespace {

using tensor::DType;
using tensor::Tensor;

std::string error_of(const BackendSpec& spec) {
  try {
    Backend::open(spec);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// ABI 2's copy_to_device_at: a tensor uploaded in pieces, each reported once copied, lands whole;
// a backend without it (a device plugin's NULL) gets one copy and one report.
TEST(Upload, InPiecesReportsEachPieceAndLandsTheWholeTensor) {
  auto cpu = Backend::open({"cpu", "", nlohmann::json::object()});
  Tensor host = Tensor::empty(DType::kF32, {10});
  for (int i = 0; i < 10; ++i) host.mutable_data_as<float>()[i] = float(i) + 0.5f;
  std::vector<std::pair<size_t, size_t>> pieces;
  const DeviceTensor t =
      cpu->upload_in_pieces(host, 12, [&](size_t o, size_t n) { pieces.emplace_back(o, n); });
  EXPECT_EQ(pieces, (std::vector<std::pair<size_t, size_t>>{{0, 12}, {12, 12}, {24, 12}, {36, 4}}));
  const Tensor back = cpu->download(t);
  EXPECT_EQ(std::memcmp(back.data(), host.data(), host.nbytes()), 0);

  static hb_backend whole = *h0_cpu_backend_entry();
  whole.copy_to_device_at = nullptr;
  auto b = Backend::from_entry(&whole, nlohmann::json::object(), "test");
  pieces.clear();
  const DeviceTensor u =
      b->upload_in_pieces(host, 12, [&](size_t o, size_t n) { pieces.emplace_back(o, n); });
  EXPECT_EQ(pieces, (std::vector<std::pair<size_t, size_t>>{{0, 40}}));
  EXPECT_EQ(std::memcmp(b->download(u).data(), host.data(), host.nbytes()), 0);
}

TEST(Loader, LoadsThePluginBuiltOnlyAgainstTheAbiHeader) {
  auto b = Backend::open({"", H0_FAULTY_PLUGIN, {{"fault", "none"}}});
  EXPECT_EQ(b->name(), "faulty");
  EXPECT_EQ(b->origin(), H0_FAULTY_PLUGIN);
  const auto info = b->stack_info();
  for (const char* key : {"device", "driver", "runtime", "op_library", "compiler"})
    EXPECT_TRUE(info.contains(key)) << key;
  EXPECT_TRUE(b->supports("rmsnorm", DType::kBF16));
  EXPECT_FALSE(b->supports("rmsnorm", DType::kI32));
}

TEST(Loader, ClearErrorsForBadPlugins) {
  EXPECT_EQ(error_of({"", "/nonexistent/libx.so", {}})
                .rfind("/nonexistent/libx.so: cannot load plugin: ", 0),
            0u);
  const std::string not_plugin = error_of({"", "libm.so.6", {}});
  EXPECT_EQ(not_plugin, "libm.so.6: not a harness plugin: no hb_backend_entry symbol");
  EXPECT_EQ(error_of({"gpu9000", "", {}}),
            "backend 'gpu9000': no such built-in backend (expected one of reference, cpu, or {lib: "
            "path.so})");
  EXPECT_EQ(error_of({"", H0_FAULTY_PLUGIN, {{"fault", "melt"}}}),
            "backend 'faulty': init failed: invalid argument: unknown fault 'melt' (none, scale, "
            "nan, bf16_truncate, slow, crash, hang, wrong_block, drop_attr, drop_inputs, set_attr, "
            "conv_state_lag, decay_after, tie_high, score_jitter, truncate, amplify, "
            "scaling_lost_past, block_wrap, prefill_drops_state, window_off_by_one)");
}

TEST(Loader, RefusesANewerAbi) {
  hb_backend future = *h0_reference_backend_entry();
  future.abi_version = HB_ABI_VERSION + 1;
  try {
    Backend::from_entry(&future, {}, "future.so");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "future.so: backend ABI version 3 is not supported by this harness (ABI 2)");
  }
}

// A plugin built for ABI 1 ends before copy_to_device_at: the harness never reads that field of
// it (here garbage, as the memory past a version 1 table may be) and copies whole tensors.
TEST(Loader, AVersionOnePluginStillLoadsAndNeverSeesCopyAt) {
  hb_backend old = *h0_reference_backend_entry();
  old.abi_version = 1;
  old.copy_to_device_at = reinterpret_cast<decltype(old.copy_to_device_at)>(uintptr_t{1});
  auto b = Backend::from_entry(&old, {}, "old.so");
  Tensor host = Tensor::zeros(DType::kF32, {1024});
  int reports = 0;
  const DeviceTensor t = b->upload_in_pieces(host, 64, [&](size_t, size_t) { ++reports; });
  EXPECT_EQ(reports, 1);
  EXPECT_EQ(b->download(t).nbytes(), host.nbytes());
}

// The reference kernel through the host API, called the way a plugin calls it.
TEST(HostApi, ReferenceOpRunsOnHostTensorsAndRejectsBadShapes) {
  const hb_host_api* host = host_api();
  EXPECT_EQ(host->abi_version, HB_ABI_VERSION);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {};
  hb_tensor in = make_hb_tensor(x, DType::kF32, {2, 3});
  hb_tensor out = make_hb_tensor(y, DType::kF32, {2, 3});
  ASSERT_EQ(host->reference_op("softmax", &in, 1, &out, 1, "{}"), HB_OK);
  EXPECT_NEAR(y[0] + y[1] + y[2], 1.0f, 1e-6);
  EXPECT_GT(y[2], y[1]);
  hb_tensor wrong = make_hb_tensor(y, DType::kF32, {3, 2});
  EXPECT_EQ(host->reference_op("softmax", &in, 1, &wrong, 1, "{}"), HB_INVALID_ARGUMENT);
  EXPECT_EQ(take_host_error(), "reference_op: op 'softmax': output 0 must be 2x3 f32");
  EXPECT_EQ(host->reference_op("frobnicate", &in, 1, &out, 1, "{}"), HB_UNSUPPORTED);
  EXPECT_EQ(host->reference_op("rmsnorm", &in, 1, &out, 1, R"({"eps": "x"})"), HB_INVALID_ARGUMENT);
}

// A backend that is the reference but claims to support only some ops.
const std::vector<std::string>* g_supported = nullptr;
int32_t limited_supports(void*, const char* op, hb_dtype) {
  for (const auto& s : *g_supported) {
    if (s == op) return 1;
  }
  return 0;
}

std::unique_ptr<Backend> limited(const std::vector<std::string>& ops) {
  static hb_backend entry;
  entry = *h0_reference_backend_entry();
  entry.name = "limited";
  entry.supports = &limited_supports;
  static std::vector<std::string> supported;
  supported = ops;
  g_supported = &supported;
  return Backend::from_entry(&entry, {}, "test");
}

// Runs op through `b` with `mode` on synthesized inputs; returns the route and checks the
// outputs against the host reference.
Outcome run_and_check(Backend& b, const char* name, ops::Dims dims, FallbackMode mode,
                      std::set<std::string> with = {}) {
  const ops::OpDef& op = ops::require_op(name);
  const ops::Json attrs = ops::validate_attrs(op, ops::Json::object());
  const auto in_descs = op.operands(dims, attrs, DType::kF32, DType::kI64, with);
  const auto out_descs = ops::infer_outputs(op, in_descs, attrs);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < in_descs.size(); ++i) {
    inputs.push_back(
        checks::synthesize({{"normal", {{"std", 1}}}}, in_descs[i].dtype, in_descs[i].shape, 3, i));
  }
  std::vector<DeviceTensor> din, dout;
  for (const auto& t : inputs) din.push_back(b.upload(t));
  for (const auto& d : out_descs) dout.push_back(b.allocate(d.dtype, d.shape));
  std::vector<const DeviceTensor*> ip;
  std::vector<DeviceTensor*> op_out;
  for (auto& t : din) ip.push_back(&t);
  for (auto& t : dout) op_out.push_back(&t);
  const Outcome outcome = execute(b, op, ip, op_out, attrs, mode);
  if (outcome.route == Route::kUnsupported) return outcome;
  std::vector<Tensor> expected;
  std::vector<const Tensor*> eip(op.inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) eip[i] = &inputs[i];
  std::vector<Tensor*> eop;
  for (const auto& d : out_descs) expected.push_back(Tensor::zeros(d.dtype, d.shape));
  for (auto& t : expected) eop.push_back(&t);
  op.reference(eip, eop, attrs);
  compare::Tolerance tol = *compare::preset("f32");
  tol.element.rtol = 1e-5;
  const auto c = compare::compare_tensors(b.download(dout[0]), expected[0], tol);
  EXPECT_TRUE(c.pass) << name << ": " << (c.failures.empty() ? "" : c.failures[0]);
  return outcome;
}

TEST(Executor, DecomposesIntoSupportedOps) {
  auto b = limited({"silu", "mul", "matmul", "add"});
  const Outcome swiglu =
      run_and_check(*b, "swiglu", {{"T", 5}, {"F", 24}}, FallbackMode::kDecompose);
  EXPECT_EQ(swiglu.route, Route::kDecomposed);
  EXPECT_EQ(swiglu.detail, "swiglu -> silu, mul");
  EXPECT_EQ(
      run_and_check(*b, "linear", {{"T", 3}, {"K", 16}, {"N", 8}}, FallbackMode::kDecompose).route,
      Route::kDecomposed);
  EXPECT_EQ(run_and_check(*b, "linear", {{"T", 3}, {"K", 16}, {"N", 8}}, FallbackMode::kDecompose,
                          {"bias"})
                .route,
            Route::kDecomposed);
  EXPECT_EQ(run_and_check(*b, "rmsnorm", {{"T", 4}, {"D", 32}}, FallbackMode::kDecompose).route,
            Route::kDecomposed);
}

TEST(Executor, HostFallbackOnlyWhenAllowed) {
  auto b = limited({"mul"});
  const Outcome none = run_and_check(*b, "softmax", {{"d0", 3}, {"d1", 10}}, FallbackMode::kNone);
  EXPECT_EQ(none.route, Route::kUnsupported);
  EXPECT_EQ(none.detail, "backend 'limited' does not support softmax in f32");
  EXPECT_EQ(run_and_check(*b, "softmax", {{"d0", 3}, {"d1", 10}}, FallbackMode::kDecompose).route,
            Route::kUnsupported);
  const Outcome host = run_and_check(*b, "softmax", {{"d0", 3}, {"d1", 10}}, FallbackMode::kHost);
  EXPECT_EQ(host.route, Route::kHost);
  EXPECT_EQ(run_and_check(*b, "mul", {{"d0", 3}, {"d1", 10}}, FallbackMode::kNone).route,
            Route::kNative);
}

}  // namespace
}  // namespace h0::backend
