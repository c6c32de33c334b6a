// The state contract of the linear-attention ops on the cpu backend: a prefill split in two
// with the state carried across equals the whole prefill, and token-by-token decode equals one
// prefill.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu_test_util.h"
#include "compare/tensor_compare.h"

namespace h0::test {
namespace {

// Rows [b, e) of a [T, ...] tensor.
Tensor rows(const Tensor& t, int64_t b, int64_t e) { return t.slice_rows(b, e).clone(); }

void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what,
                  double atol) {
  const auto cmp = compare::compare_tensors(actual, expected, {"state", {1e-5, atol, true}, {}});
  EXPECT_TRUE(cmp.pass) << what << ": max_abs_err " << cmp.metrics.max_abs_err << " at "
                        << cmp.metrics.worst_index;
}

struct DeltaInputs {
  Tensor q, k, v, g, beta, state;
};

DeltaInputs delta_inputs(int64_t t, int64_t hk, int64_t dk, int64_t hv, int64_t dv) {
  return {synthesize({{"normal", {{"std", 1}}}}, DType::kF32, {t, hk, dk}, 3, 0),
          synthesize({{"normal", {{"std", 1}}}}, DType::kF32, {t, hk, dk}, 3, 1),
          synthesize({{"normal", {{"std", 1}}}}, DType::kF32, {t, hv, dv}, 3, 2),
          synthesize({{"uniform", {{"low", -2}, {"high", 0}}}}, DType::kF32, {t, hv}, 3, 3),
          synthesize({{"uniform", {{"low", 0}, {"high", 1}}}}, DType::kF32, {t, hv}, 3, 4),
          synthesize({{"normal", {{"std", 0.5}}}}, DType::kF32, {hv, dk, dv}, 3, 5)};
}

// o and state_out of gated_delta_rule over rows [b, e) of `in`, from `state`.
std::vector<Tensor> delta(const DeltaInputs& in, int64_t b, int64_t e, const Tensor& state) {
  const Tensor q = rows(in.q, b, e), k = rows(in.k, b, e), v = rows(in.v, b, e),
               g = rows(in.g, b, e), beta = rows(in.beta, b, e);
  std::vector<Tensor> out = {Tensor::zeros(DType::kF32, {e - b, in.v.dim(1), in.v.dim(2)}),
                             Tensor::zeros(DType::kF32, state.shape())};
  EXPECT_EQ(
      run_on_backend("gated_delta_rule", {&q, &k, &v, &g, &beta, &state}, out, Json::object()),
      HB_OK)
      << backend()->last_error(backend()->self);
  return out;
}

TEST(CpuLinearAttention, DeltaRuleSplitPrefillAndDecodeEqualOnePrefill) {
  const int64_t t = 150;
  const DeltaInputs in = delta_inputs(t, 2, 32, 4, 16);
  const auto whole = delta(in, 0, t, in.state);
  // 100 + 50, the second from the first's state.
  const auto first = delta(in, 0, 100, in.state);
  const auto second = delta(in, 100, t, first[1]);
  expect_close(second[1], whole[1], "state after 100 + 50", 1e-5);
  expect_close(second[0], rows(whole[0], 100, t), "o of tokens 100..149", 1e-5);
  // 150 decode steps of one token, the state carried each time.
  Tensor state = in.state;
  for (int64_t i = 0; i < t; ++i) {
    auto step = delta(in, i, i + 1, state);
    expect_close(step[0], rows(whole[0], i, i + 1), "o of decode step " + std::to_string(i), 1e-5);
    state = step[1];
  }
  expect_close(state, whole[1], "state after 150 decode steps", 1e-5);
}

TEST(CpuLinearAttention, ConvSplitPrefillAndDecodeEqualOnePrefill) {
  const int64_t t = 12, c = 20, k = 4;
  const Tensor x = synthesize({{"normal", {{"std", 1}}}}, DType::kF32, {t, c}, 5, 0);
  const Tensor w = synthesize({{"normal", {{"std", 0.5}}}}, DType::kF32, {c, k}, 5, 1);
  const Tensor zero = Tensor::zeros(DType::kF32, {c, k - 1});
  auto conv = [&](int64_t b, int64_t e, const Tensor& state) {
    const Tensor xs = rows(x, b, e);
    std::vector<Tensor> out = {Tensor::zeros(DType::kF32, {e - b, c}),
                               Tensor::zeros(DType::kF32, {c, k - 1})};
    EXPECT_EQ(run_on_backend("causal_conv1d", {&xs, &w, &state}, out, Json{{"activation", "silu"}}),
              HB_OK);
    return out;
  };
  const auto whole = conv(0, t, zero);
  // 2 + 10 (a first call shorter than the window) and 12 single steps.
  const auto a = conv(0, 2, zero);
  const auto b = conv(2, t, a[1]);
  expect_close(b[0], rows(whole[0], 2, t), "y of 2 + 10", 0);
  expect_close(b[1], whole[1], "state of 2 + 10", 0);
  Tensor state = zero;
  for (int64_t i = 0; i < t; ++i) {
    auto step = conv(i, i + 1, state);
    expect_close(step[0], rows(whole[0], i, i + 1), "y of step " + std::to_string(i), 0);
    state = step[1];
  }
  expect_close(state, whole[1], "state after 12 steps", 0);
  // The state is the last K - 1 inputs, channel-major: state[c][i] = x[T - (K - 1) + i][c].
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < k - 1; ++i) {
      EXPECT_EQ(whole[1].data_as<float>()[ch * (k - 1) + i],
                x.data_as<float>()[(t - (k - 1) + i) * c + ch]);
    }
  }
}

}  // namespace
}  // namespace h0::test
