// The reference kernels of MoE routing and experts, quantization, token selection and the
// DeepSeek-V3.2 indexer's key selection, on cases
// computed by hand and against the same math done another way (moe_experts from linear +
// swiglu calls, quantize/dequantize round trips, sample through Philox uniforms).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "base/error.h"
#include "ops/op.h"
#include "ops/op_test_util.h"
#include "tensor/philox.h"

namespace h0::ops {
namespace {

using testing::expect_near_all;
using testing::make;
using testing::normal;
using testing::run;
using testing::run1;
using testing::sigmoid;
using testing::silu;
using testing::values;

constexpr DType kF32 = DType::kF32;
constexpr DType kF64 = DType::kF64;

// ---- MoE ---------------------------------------------------------------------------------------

struct Gate {
  std::vector<double> weights, ids;
};

Gate gate(const std::vector<double>& logits, const std::vector<double>& bias, const Json& attrs) {
  const int64_t e = static_cast<int64_t>(bias.empty() ? logits.size() : bias.size());
  std::vector<Tensor> in = {make(kF64, {static_cast<int64_t>(logits.size()) / e, e}, logits)};
  if (!bias.empty()) in.push_back(make(kF64, {e}, bias));
  const auto out = run("moe_gate", in, attrs);
  EXPECT_EQ(out[0].dtype(), DType::kF32);
  EXPECT_EQ(out[1].dtype(), DType::kI32);
  return {values(out[0]), values(out[1])};
}

TEST(ReferenceKernels, MoeGateSoftmaxTopK) {
  // Mixtral: softmax over E, top 2, renormalised: e^3 / (e^3 + e^2) = sigmoid(1).
  const std::vector<double> logits = {1, 3, 2, 0};
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1;
  Gate g = gate(logits, {}, Json::object());
  EXPECT_EQ(g.ids, (std::vector<double>{1, 2}));
  expect_near_all(g.weights, {std::exp(3.0) / z, std::exp(2.0) / z}, 1e-7);
  g = gate(logits, {}, {{"normalize", true}});
  expect_near_all(g.weights, {sigmoid(1), sigmoid(-1)}, 1e-7);
  // Ties go to the lower expert id.
  EXPECT_EQ(gate({2, 2, 1, 2}, {}, {{"top_k", 3}}).ids, (std::vector<double>{0, 1, 3}));
  // Rows are independent.
  EXPECT_EQ(gate({0, 1, 2, 3, 3, 2, 1, 0}, {0, 0, 0, 0}, Json::object()).ids,
            (std::vector<double>{3, 2, 0, 1}));
}

TEST(ReferenceKernels, MoeGateSigmoidBiasSelectsButDoesNotWeigh) {
  // sel = sigmoid(logits) + bias = [1.5, 0.62, 0.73, 2.27]: experts 3 and 0, weighted by the
  // unbiased scores sigmoid(-1) and sigmoid(0), then × 2.5.
  const Gate g =
      gate({0, 0.5, 1, -1}, {1, 0, 0, 2}, {{"scoring", "sigmoid"}, {"routed_scaling_factor", 2.5}});
  EXPECT_EQ(g.ids, (std::vector<double>{3, 0}));
  expect_near_all(g.weights, {2.5 * sigmoid(-1), 2.5 * 0.5}, 1e-7);
  const Gate n =
      gate({0, 0.5, 1, -1}, {1, 0, 0, 2},
           {{"scoring", "sigmoid"}, {"normalize", true}, {"routed_scaling_factor", 2.5}});
  const double sum = sigmoid(-1) + 0.5;
  expect_near_all(n.weights, {2.5 * sigmoid(-1) / sum, 2.5 * 0.5 / sum}, 1e-7);
}

TEST(ReferenceKernels, MoeGateDeepSeekGroups) {
  // Sigmoid of 0 is 0.5 everywhere, so sel = 0.5 + bias (all exact in binary).
  const std::vector<double> zeros(8, 0.0);
  const Json grouped = {{"scoring", "sigmoid"}, {"n_group", 4}, {"topk_group", 2}, {"top_k", 2}};
  // sel = [1.25, 0.5 | 1, 1 | 1.125, 0 | 0.625, 0.625]; group scores (top-2 sums) 1.75, 2, 1.125,
  // 1.25: groups 1 and 0 stay, so expert 4 (second best overall) is out; then 0, and 2 before 3.
  const std::vector<double> bias = {0.75, 0, 0.5, 0.5, 0.625, -0.5, 0.125, 0.125};
  const Gate g = gate(zeros, bias, grouped);
  EXPECT_EQ(g.ids, (std::vector<double>{0, 2}));
  expect_near_all(g.weights, {0.5, 0.5}, 0);
  Json flat = grouped;
  flat["n_group"] = 1;
  flat["topk_group"] = 1;
  EXPECT_EQ(gate(zeros, bias, flat).ids, (std::vector<double>{0, 4}));
  // Tied groups: the lower group id stays. sel = [1, 0.5 | 0.5, 0.5 | 1.5, 0 | 0.25, 0.25]:
  // groups 0 and 2 both score 1.5; group 0 wins, so the best expert (4) is out.
  Json one = grouped;
  one["topk_group"] = 1;
  const Gate tie = gate(zeros, {0.5, 0, 0, 0, 1, -0.5, -0.25, -0.25}, one);
  EXPECT_EQ(tie.ids, (std::vector<double>{0, 1}));
  // Normalised and scaled as DeepSeek-V3 (norm_topk_prob, routed_scaling_factor 2.5).
  Json ds = grouped;
  ds["normalize"] = true;
  ds["routed_scaling_factor"] = 2.5;
  expect_near_all(gate(zeros, bias, ds).weights, {1.25, 1.25}, 0);
  // Groups of one expert: the group score is the expert's own.
  EXPECT_EQ(gate({0, 0, 0, 0}, {0.25, 0.5, 0, 0.125},
                 {{"scoring", "sigmoid"}, {"n_group", 4}, {"topk_group", 2}})
                .ids,
            (std::vector<double>{1, 0}));
}

TEST(ReferenceKernels, MoeExpertsByHand) {
  // D = F = 1. Expert 0: gate 1, up 3, down 2; expert 1: gate -1, up 0.5, down 4. x = 2.
  // y = 0.25·4·silu(-2)·1 + 0.75·2·silu(2)·6.
  const auto y =
      run1("moe_experts", {make(kF64, {1, 1}, {2}), make(kF32, {1, 2}, {0.25, 0.75}),
                           make(DType::kI32, {1, 2}, {1, 0}), make(kF64, {2, 1, 1}, {1, -1}),
                           make(kF64, {2, 1, 1}, {3, 0.5}), make(kF64, {2, 1, 1}, {2, 4})});
  EXPECT_NEAR(y[0], silu(-2) + 9 * silu(2), 1e-14);
}

TEST(ReferenceKernels, MoeExpertsIsSumOfLinearSwigluLinear) {
  const int64_t t = 3, d = 5, f = 7, e = 4, k = 2;
  const Tensor x = normal(kF64, {t, d}, 40), wg = normal(kF64, {e, f, d}, 41),
               wu = normal(kF64, {e, f, d}, 42), wd = normal(kF64, {e, d, f}, 43);
  const Tensor weights = make(kF32, {t, k}, {0.5, 0.25, 0.75, 0.125, 1, 0.375});
  const std::vector<double> ids = {3, 0, 1, 3, 2, 1};
  const auto y = run1("moe_experts", {x, weights, make(DType::kI32, {t, k}, ids), wg, wu, wd});
  const auto xv = values(x), gv = values(wg), uv = values(wu), dv = values(wd),
             wv = values(weights);
  const auto slice = [](const std::vector<double>& all, int64_t i, int64_t n) {
    return std::vector<double>(all.begin() + i * n, all.begin() + (i + 1) * n);
  };
  std::vector<double> want(static_cast<size_t>(t * d), 0.0);
  for (int64_t r = 0; r < t; ++r) {
    const Tensor xr = make(kF64, {1, d}, slice(xv, r, d));
    for (int64_t j = 0; j < k; ++j) {
      const auto ex = static_cast<int64_t>(ids[static_cast<size_t>(r * k + j)]);
      const auto gate = run("linear", {xr, make(kF64, {f, d}, slice(gv, ex, f * d))})[0];
      const auto up = run("linear", {xr, make(kF64, {f, d}, slice(uv, ex, f * d))})[0];
      const auto h = run("swiglu", {gate, up})[0];
      const auto out = run1("linear", {h, make(kF64, {d, f}, slice(dv, ex, d * f))});
      for (int64_t c = 0; c < d; ++c)
        want[static_cast<size_t>(r * d + c)] +=
            wv[static_cast<size_t>(r * k + j)] * out[static_cast<size_t>(c)];
    }
  }
  expect_near_all(y, want, 1e-13);
}

// ---- quantization ------------------------------------------------------------------------------

struct Quantized {
  std::vector<double> q, scale;
  DType q_dtype;
  Shape scale_shape;
};

Quantized quantize(const Tensor& x, const Json& attrs) {
  const auto out = run("quantize", {x}, attrs);
  return {values(out[0]), values(out[1]), out[0].dtype(), out[1].shape()};
}

// Expected numbers from gen_ops.py's op_quantize (PyTorch).
TEST(ReferenceKernels, QuantizeI8) {
  // amax 127 -> scale 1; round half to even; saturated at ±127.
  Quantized q = quantize(make(kF32, {7}, {127, 2.5, 3.5, -2.5, -127, 0.4, 0.6}), Json::object());
  EXPECT_EQ(q.q_dtype, DType::kI8);
  EXPECT_EQ(q.q, (std::vector<double>{127, 2, 4, -2, -127, 0, 1}));
  EXPECT_EQ(q.scale, (std::vector<double>{1.0}));
  EXPECT_EQ(q.scale_shape, (Shape{1}));
  // One scale per row; an all-zero row gets scale 1.
  q = quantize(make(kF32, {2, 3}, {1, -2, 0.5, 0, 0, 0}), {{"granularity", "channel"}});
  EXPECT_EQ(q.q, (std::vector<double>{64, -127, 32, 0, 0, 0}));
  EXPECT_EQ(q.scale, (std::vector<double>{0.015748031437397003, 1.0}));
  EXPECT_EQ(q.scale_shape, (Shape{2}));
  // Blocks of 2 along the last axis; the last block is short.
  q = quantize(make(kF32, {1, 5}, {1, -4, 0.5, 0.25, 3}), {{"granularity", "block"}, {"block", 2}});
  EXPECT_EQ(q.q, (std::vector<double>{32, -127, 127, 64, 127}));
  EXPECT_EQ(q.scale, (std::vector<double>{0.031496062874794006, 0.003937007859349251,
                                          0.023622047156095505}));
  EXPECT_EQ(q.scale_shape, (Shape{1, 3}));
}

TEST(ReferenceKernels, QuantizeF8) {
  Quantized q = quantize(make(kF32, {4}, {0.1, -0.7, 0.33, 1.0}), {{"dtype", "f8_e4m3"}});
  EXPECT_EQ(q.q_dtype, DType::kF8E4M3);
  EXPECT_EQ(q.q, (std::vector<double>{44, -320, 144, 448}));
  EXPECT_EQ(q.scale, (std::vector<double>{0.0022321429569274187}));
  q = quantize(make(kF32, {3}, {1, 0.5, -0.001}), {{"dtype", "f8_e5m2"}});
  EXPECT_EQ(q.q_dtype, DType::kF8E5M2);
  EXPECT_EQ(q.q, (std::vector<double>{57344, 28672, -56}));
  EXPECT_EQ(q.scale, (std::vector<double>{1.743861685099546e-05}));
}

TEST(ReferenceKernels, DequantizeByHand) {
  const auto x =
      run("dequantize", {make(DType::kI8, {2, 2}, {1, -2, 3, 4}), make(kF32, {2}, {0.5, 0.25})},
          {{"granularity", "channel"}, {"out_dtype", "bf16"}});
  EXPECT_EQ(x[0].dtype(), DType::kBF16);
  EXPECT_EQ(values(x[0]), (std::vector<double>{0.5, -1, 0.75, 1}));
  const auto blocks =
      run1("dequantize",
           {make(DType::kF8E4M3, {1, 5}, {1, 2, 3, 4, 448}), make(kF32, {1, 3}, {1, 2, 4})},
           {{"dtype", "f8_e4m3"}, {"granularity", "block"}, {"block", 2}});
  EXPECT_EQ(blocks, (std::vector<double>{1, 2, 6, 8, 1792}));
}

TEST(ReferenceKernels, QuantizeRoundTrips) {
  const Tensor x = normal(kF32, {4, 64}, 50);
  const auto xv = values(x);
  for (const char* granularity : {"tensor", "channel", "block"}) {
    for (const char* dtype : {"i8", "f8_e4m3", "f8_e5m2"}) {
      SCOPED_TRACE(std::string(granularity) + " " + dtype);
      const Json attrs = {{"dtype", dtype}, {"granularity", granularity}, {"block", 16}};
      const auto qs = run("quantize", {x}, attrs);
      const auto back = run1("dequantize", {qs[0], qs[1]}, attrs);
      const auto scale = values(qs[1]);
      const auto sv = [&](size_t i) {
        const size_t r = i / 64, j = i % 64;
        return std::string(granularity) == "tensor"    ? scale[0]
               : std::string(granularity) == "channel" ? scale[r]
                                                       : scale[r * 4 + j / 16];
      };
      // Mantissa bits: 3 for e4m3, 2 for e5m2; subnormal spacing 2^-9 and 2^-16 (× scale).
      for (size_t i = 0; i < xv.size(); ++i) {
        // The f32 scale and the f32 output add ~1e-7 relative.
        const double s = sv(i), err = std::fabs(back[i] - xv[i]), slack = 1e-6 * std::fabs(xv[i]);
        if (std::string(dtype) == "i8") {
          EXPECT_LE(err, 0.5 * s + slack) << i;
        } else {
          const double rel = std::string(dtype) == "f8_e4m3" ? 0x1p-4 : 0x1p-3;
          const double tiny = std::string(dtype) == "f8_e4m3" ? 0x1p-10 : 0x1p-17;
          EXPECT_LE(err, std::max(rel * std::fabs(xv[i]), tiny * s) + slack) << i;
        }
      }
    }
  }
}

// ---- argmax, sample ----------------------------------------------------------------------------

std::vector<double> sample(const Tensor& logits, const Json& attrs) {
  const auto out = run("sample", {logits}, attrs);
  EXPECT_EQ(out[0].dtype(), DType::kI64);
  return values(out[0]);
}

TEST(ReferenceKernels, ArgmaxFirstMaximum) {
  const auto ids =
      run("argmax", {make(DType::kF16, {3, 4}, {1, 3, 3, 2, -1, -5, -1, -2, 0, 0, 0, 0})});
  EXPECT_EQ(ids[0].dtype(), DType::kI64);
  EXPECT_EQ(values(ids[0]), (std::vector<double>{1, 0, 0}));
  // NaN is the maximum, as torch.argmax.
  EXPECT_EQ(run1("argmax", {make(kF32, {1, 3}, {1, std::nan(""), 5})}), (std::vector<double>{1}));
}

TEST(ReferenceKernels, SampleGreedyLimits) {
  const Tensor logits = normal(kF32, {64, 50}, 60);
  const auto greedy = run1("argmax", {logits});
  EXPECT_EQ(sample(logits, {{"temperature", 0.0}}), greedy);
  EXPECT_EQ(sample(logits, {{"top_k", 1}, {"seed", 3}}), greedy);
  EXPECT_EQ(sample(logits, {{"top_p", 1e-9}, {"seed", 4}, {"temperature", 5.0}}), greedy);
}

TEST(ReferenceKernels, SampleIsDeterministicPerSeedAndStep) {
  const Tensor logits = normal(kF32, {64, 50}, 61);
  const auto a = sample(logits, {{"seed", 7}, {"step", 2}});
  EXPECT_EQ(sample(logits, {{"seed", 7}, {"step", 2}}), a);
  EXPECT_NE(sample(logits, {{"seed", 8}, {"step", 2}}), a);
  EXPECT_NE(sample(logits, {{"seed", 7}, {"step", 3}}), a);
  EXPECT_NE(a, run1("argmax", {logits}));
  // top_k keeps the k best of each row.
  const auto lv = values(logits);
  const auto k3 = sample(logits, {{"seed", 9}, {"top_k", 3}});
  for (int64_t r = 0; r < 64; ++r) {
    std::vector<double> row(lv.begin() + r * 50, lv.begin() + (r + 1) * 50);
    std::vector<double> sorted = row;
    std::sort(sorted.rbegin(), sorted.rend());
    EXPECT_GE(row[static_cast<size_t>(k3[static_cast<size_t>(r)])], sorted[2]) << r;
  }
}

// The draw is u = Philox(seed, step).uniform(row) against the cumulative kept probabilities.
TEST(ReferenceKernels, SampleWalksPhiloxUniforms) {
  const int64_t t = 300;
  const uint64_t seed = 1234, step = 5;
  const tensor::Philox rng(seed, step);
  const auto u = [&](int64_t r) {
    return static_cast<double>(rng.uniform(static_cast<uint64_t>(r)));
  };
  // logits [0, ln 9] at temperature 2: p = [1/4, 3/4], index 1 first.
  std::vector<double> two;
  for (int64_t r = 0; r < t; ++r) two.insert(two.end(), {0.0, std::log(9.0)});
  const auto ids =
      sample(make(kF64, {t, 2}, two), {{"seed", seed}, {"step", step}, {"temperature", 2.0}});
  // top_p 0.6 over p = [0.1, 0.4, 0.2, 0.3]: order 1, 3, 2, 0; keeps 1 and 3 (0.4 + 0.3 >= 0.6),
  // renormalised to 4/7 and 3/7.
  std::vector<double> four;
  for (int64_t r = 0; r < t; ++r) {
    for (double p : {0.1, 0.4, 0.2, 0.3}) four.push_back(std::log(p));
  }
  const auto nucleus =
      sample(make(kF64, {t, 4}, four), {{"seed", seed}, {"step", step}, {"top_p", 0.6}});
  std::set<double> seen;
  for (int64_t r = 0; r < t; ++r) {
    EXPECT_EQ(ids[static_cast<size_t>(r)], u(r) < 0.75 ? 1 : 0) << r;
    EXPECT_EQ(nucleus[static_cast<size_t>(r)], u(r) < 4.0 / 7.0 ? 1 : 3) << r;
    seen.insert(nucleus[static_cast<size_t>(r)]);
  }
  EXPECT_EQ(seen, (std::set<double>{1, 3}));
}

TEST(ReferenceKernels, SampleFrequenciesFollowSoftmax) {
  const int64_t t = 20000;
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  std::vector<double> logits;
  for (int64_t r = 0; r < t; ++r) {
    for (double pi : p) logits.push_back(std::log(pi) + 3);  // a shift changes nothing
  }
  const auto ids = sample(make(kF64, {t, 4}, logits), {{"seed", 99}});
  std::vector<double> count(4, 0.0);
  for (double id : ids) count[static_cast<size_t>(id)] += 1;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(count[i] / t, p[i], 0.015) << i;
}

// ---- DeepSeek sparse attention: the indexer's selection, and attention over it -----------------

// Keys 0..4 (D = 1) in blocks of 4: key j in block table[j / 4] = {1, 0}[j / 4], slot j % 4.
Tensor indexer_keys(const std::vector<double>& keys) {
  std::vector<double> cache(8, std::numeric_limits<double>::quiet_NaN());
  for (size_t j = 0; j < keys.size(); ++j) cache[(j < 4 ? 4 : 0) + j % 4] = keys[j];
  return make(kF32, {2, 4, 1}, cache);
}

TEST(ReferenceKernels, LightningIndexerByHand) {
  const Tensor k = indexer_keys({2, 1, 2, -1, 3}), table = make(DType::kI32, {2}, {1, 0});
  const Json all = {{"topk", 6}, {"context_len", 5}, {"scale", 1.0}, {"causal", false}};
  // One head, weight 1: scores = relu(k) = 2 1 2 0 3; equal scores by lower key id; -1 past the
  // keys.
  const Tensor q1 = make(kF32, {1, 1, 1}, {1});
  EXPECT_EQ(run1("lightning_indexer", {q1, k, make(kF32, {1, 1}, {1}), table}, all),
            (std::vector<double>{4, 0, 2, 1, 3, -1}));
  // A negative weight turns the order over; the zero of key 3 is now the best.
  EXPECT_EQ(run1("lightning_indexer", {q1, k, make(kF32, {1, 1}, {-1}), table}, all),
            (std::vector<double>{3, 1, 0, 2, 4, -1}));
  // Causal at position 2: keys 0..2 only.
  Json causal = all;
  causal["causal"] = true;
  causal["q_offset"] = 2;
  EXPECT_EQ(run1("lightning_indexer", {q1, k, make(kF32, {1, 1}, {1}), table}, causal),
            (std::vector<double>{0, 2, 1, -1, -1, -1}));
  // Two heads, q = 1 and -1, weights 0.5 and 2: 0.5 relu(k) + 2 relu(-k) = 1 .5 1 2 1.5; the
  // default scale 1/sqrt(D) = 1 here.
  Json two = all;
  two.erase("scale");
  two["topk"] = 3;
  EXPECT_EQ(run1("lightning_indexer",
                 {make(kF32, {1, 2, 1}, {1, -1}), k, make(kF32, {1, 2}, {0.5, 2}), table}, two),
            (std::vector<double>{3, 4, 0}));
}

TEST(ReferenceKernels, LightningIndexerRefusesBadTopkAndContext) {
  const Tensor k = indexer_keys({2, 1, 2, -1, 3}), table = make(DType::kI32, {2}, {1, 0});
  const Tensor q = make(kF32, {1, 1, 1}, {1}), w = make(kF32, {1, 1}, {1});
  EXPECT_THROW(run("lightning_indexer", {q, k, w, table}, {{"topk", 0}}), InputError);
  EXPECT_THROW(run("lightning_indexer", {q, k, w, table}, {{"topk", 2}, {"context_len", 9}}),
               InputError);
  EXPECT_THROW(run("lightning_indexer", {q, k, w, table}, Json::object()),
               InputError);  // topk is required
}

// sparse_attention over a selection is attention over the selected keys alone; listing every
// key is paged attention; -1s and repeats change nothing; a query left with no key gets zeros.
TEST(ReferenceKernels, SparseAttentionIsAttentionOverTheSelectedKeys) {
  const int64_t s = 8, hq = 4, hkv = 2, dh = 4, dv = 3, b = 4;
  const Tensor q = normal(kF64, {1, hq, dh}, 40), k = normal(kF64, {s, hkv, dh}, 41),
               v = normal(kF64, {s, hkv, dv}, 42);
  const Tensor k_cache = make(kF64, {2, b, hkv, dh}, values(k)),
               v_cache = make(kF64, {2, b, hkv, dv}, values(v));
  const Tensor table = make(DType::kI32, {2}, {0, 1});
  const Json attrs = {{"context_len", s}, {"causal", false}};
  // Keys 1, 3 and 6.
  const std::vector<int64_t> picked = {1, 3, 6};
  std::vector<double> ks, vs;
  for (int64_t j : picked) {
    const auto kv = values(k), vv = values(v);
    ks.insert(ks.end(), kv.begin() + j * hkv * dh, kv.begin() + (j + 1) * hkv * dh);
    vs.insert(vs.end(), vv.begin() + j * hkv * dv, vv.begin() + (j + 1) * hkv * dv);
  }
  const auto want =
      run1("attention", {q, make(kF64, {3, hkv, dh}, ks), make(kF64, {3, hkv, dv}, vs)},
           {{"causal", false}});
  const auto got =
      run1("sparse_attention",
           {q, k_cache, v_cache, table, make(DType::kI32, {1, 5}, {6, -1, 1, 3, 1})}, attrs);
  expect_near_all(got, want, 1e-14);
  std::vector<double> every(static_cast<size_t>(s));
  std::iota(every.begin(), every.end(), 0.0);
  EXPECT_EQ(run1("sparse_attention", {q, k_cache, v_cache, table, make(DType::kI32, {1, s}, every)},
                 attrs),
            run1("paged_attention", {q, k_cache, v_cache, table}, attrs));
  // Causal at position 2 drops key 6 of the selection; nothing selected: zeros.
  Json causal = {{"context_len", s}, {"q_offset", 2}};
  EXPECT_EQ(run1("sparse_attention",
                 {q, k_cache, v_cache, table, make(DType::kI32, {1, 2}, {6, -1})}, causal),
            std::vector<double>(static_cast<size_t>(hq * dv), 0.0));
  EXPECT_THROW(
      run("sparse_attention", {q, k_cache, v_cache, table, make(DType::kI32, {1, 1}, {8})}, attrs),
      InputError);
}

}  // namespace
}  // namespace h0::ops
