// The cpu backend's ABI surface: supports(), stack_info_json, init options, memory, and the
// error statuses (HB_UNSUPPORTED for f64, HB_INVALID_ARGUMENT with a message for bad shapes and
// bad data), plus run-to-run determinism.
#include "backends/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu_test_util.h"
#include "ops/op.h"

namespace h0::test {
namespace {

TEST(CpuBackend, SupportsEveryOpInF32Bf16F16Only) {
  const hb_backend* be = backend();
  EXPECT_EQ(be->abi_version, HB_ABI_VERSION);
  EXPECT_STREQ(be->name, "cpu");
  for (const ops::OpDef* op : ops::all_ops()) {
    for (hb_dtype d : {HB_F32, HB_BF16, HB_F16})
      EXPECT_NE(be->supports(be->self, op->name, d), 0) << op->name << " " << d;
    for (hb_dtype d : {HB_F64, HB_F8_E4M3, HB_I64, HB_I32, HB_I8, HB_BOOL}) {
      EXPECT_EQ(be->supports(be->self, op->name, d), 0) << op->name << " " << d;
    }
  }
  EXPECT_EQ(be->supports(be->self, "no_such_op", HB_F32), 0);
}

TEST(CpuBackend, StackInfoIsJsonWithTheFiveKeys) {
  const Json info = Json::parse(backend()->stack_info_json(backend()->self));
  for (const char* key : {"device", "driver", "runtime", "op_library", "compiler"}) {
    ASSERT_TRUE(info.contains(key) && info[key].is_string()) << key << " in " << info.dump();
    EXPECT_FALSE(info[key].get<std::string>().empty()) << key;
  }
  EXPECT_EQ(info["runtime"], "host");
  EXPECT_EQ(info["op_library"].get<std::string>().rfind("OpenBLAS ", 0), 0u) << info.dump();
}

TEST(CpuBackend, InitRejectsBadOptions) {
  const hb_backend* be = backend();
  EXPECT_EQ(be->init(be->self, nullptr, R"({"threads": 2})"), HB_OK);
  EXPECT_EQ(be->init(be->self, nullptr, R"({"threads": 0})"), HB_INVALID_ARGUMENT);
  EXPECT_NE(std::string(be->last_error(be->self)).find("threads"), std::string::npos);
  EXPECT_EQ(be->init(be->self, nullptr, R"({"thread": 2})"), HB_INVALID_ARGUMENT);
  EXPECT_EQ(be->init(be->self, nullptr, "{not json"), HB_INVALID_ARGUMENT);
  EXPECT_EQ(be->init(be->self, nullptr, "{}"), HB_OK);
}

TEST(CpuBackend, MemoryInfoAndAlignment) {
  const hb_backend* be = backend();
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(be->memory_info(be->self, &free_bytes, &total), HB_OK);
  EXPECT_GT(total, 0u);
  EXPECT_LE(free_bytes, total);
  void* p = nullptr;
  ASSERT_EQ(be->alloc(be->self, 100, &p), HB_OK);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  be->free(be->self, p);
}

// Runs a 2-input matmul-shaped call with the given dtypes and shapes; returns the status.
hb_status run_matmul(DType dtype, tensor::Shape a, tensor::Shape b, tensor::Shape c) {
  Tensor ta = Tensor::zeros(dtype, a), tb = Tensor::zeros(dtype, b);
  std::vector<Tensor> out = {Tensor::zeros(dtype, c)};
  return run_on_backend("matmul", {&ta, &tb}, out, Json::object());
}

TEST(CpuBackend, F64IsUnsupportedSoTheHarnessFallsBack) {
  EXPECT_EQ(run_matmul(DType::kF64, {4, 8}, {8, 3}, {4, 3}), HB_UNSUPPORTED);
  EXPECT_NE(std::string(backend()->last_error(backend()->self)).find("f64"), std::string::npos);
  std::vector<Tensor> out = {Tensor::zeros(DType::kF32, {2})};
  EXPECT_EQ(run_on_backend("no_such_op", {}, out, Json::object()), HB_UNSUPPORTED);
}

TEST(CpuBackend, BadShapeIsInvalidArgumentWithAMessage) {
  EXPECT_EQ(run_matmul(DType::kF32, {4, 8}, {9, 3}, {4, 3}), HB_INVALID_ARGUMENT);
  const std::string msg = backend()->last_error(backend()->self);
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("b must be [8, *] f32, got [9, 3] f32"), std::string::npos) << msg;
  EXPECT_EQ(run_matmul(DType::kF32, {4, 8}, {8, 3}, {4, 4}), HB_INVALID_ARGUMENT);  // wrong output
  EXPECT_EQ(run_matmul(DType::kF32, {4, 8}, {8, 3}, {4, 3}), HB_OK);
  EXPECT_STREQ(backend()->last_error(backend()->self), "");
}

TEST(CpuBackend, OutOfRangeIdsAreInvalidArgumentNotACrash) {
  Tensor ids = Tensor::zeros(DType::kI32, {3}), table = Tensor::zeros(DType::kF32, {5, 4});
  ids.mutable_data_as<int32_t>()[1] = 5;
  std::vector<Tensor> out = {Tensor::zeros(DType::kF32, {3, 4})};
  EXPECT_EQ(run_on_backend("embedding", {&ids, &table}, out, Json::object()), HB_INVALID_ARGUMENT);
  EXPECT_NE(std::string(backend()->last_error(backend()->self)).find("ids[1] = 5"),
            std::string::npos);

  Tensor q = Tensor::zeros(DType::kF32, {1, 2, 8}), kc = Tensor::zeros(DType::kF32, {3, 4, 2, 8});
  Tensor vc = kc.clone(), table_ids = Tensor::zeros(DType::kI32, {2});
  table_ids.mutable_data_as<int32_t>()[1] = -1;
  std::vector<Tensor> o = {Tensor::zeros(DType::kF32, {1, 2, 8})};
  EXPECT_EQ(run_on_backend("paged_attention", {&q, &kc, &vc, &table_ids}, o, Json::object()),
            HB_INVALID_ARGUMENT);
  EXPECT_NE(std::string(backend()->last_error(backend()->self)).find("block_table[1] = -1"),
            std::string::npos);
}

// Large enough to split over several parallel_for chunks and OpenBLAS threads.
TEST(CpuBackend, ResultsAreTheSameBitsRunToRun) {
  const Tensor q = synthesize({{"normal", {{"std", 1}}}}, DType::kBF16, {64, 8, 64}, 1, 0);
  const Tensor k = synthesize({{"normal", {{"std", 1}}}}, DType::kBF16, {300, 2, 64}, 1, 1);
  const Tensor v = synthesize({{"normal", {{"std", 1}}}}, DType::kBF16, {300, 2, 64}, 1, 2);
  std::vector<Tensor> first = {Tensor::zeros(DType::kBF16, {64, 8, 64})},
                      second = {first[0].clone()};
  ASSERT_EQ(run_on_backend("attention", {&q, &k, &v}, first, Json{{"causal", true}}), HB_OK);
  ASSERT_EQ(run_on_backend("attention", {&q, &k, &v}, second, Json{{"causal", true}}), HB_OK);
  EXPECT_EQ(std::memcmp(first[0].data(), second[0].data(), first[0].nbytes()), 0);
  const Tensor x = synthesize({{"normal", {{"std", 1}}}}, DType::kF32, {512, 1024}, 1, 3);
  std::vector<Tensor> y1 = {Tensor::zeros(DType::kF32, {512, 1024})}, y2 = {y1[0].clone()};
  ASSERT_EQ(run_on_backend("softmax", {&x}, y1, Json::object()), HB_OK);
  ASSERT_EQ(run_on_backend("softmax", {&x}, y2, Json::object()), HB_OK);
  EXPECT_EQ(std::memcmp(y1[0].data(), y2[0].data(), y1[0].nbytes()), 0);
}

}  // namespace
}  // namespace h0::test
