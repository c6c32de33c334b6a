// The reference kernels on small cases computed by hand or by PyTorch / HF transformers
// (golden/tools/gen_ops.py's functions, numbers pasted here), and against the same math done
// another way: attention as an explicit masked score matrix per head, paged attention as
// attention on the gathered keys, linear and patch_embed as matmuls, moe_experts from
// linear + swiglu calls, rope's two styles through a permutation, sample through Philox.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

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

// ---- matmul, linear, embedding, patch_embed --------------------------------------------------

TEST(ReferenceKernels, Matmul) {
  const auto c =
      run1("matmul", {make(kF32, {2, 2}, {1, 2, 3, 4}), make(kF32, {2, 3}, {5, 6, 7, 8, 9, 10})});
  EXPECT_EQ(c, (std::vector<double>{21, 24, 27, 47, 54, 61}));
  // One rounding at the end: the f64 sum of 2^24 + 1 - 2^24 survives in f32 outputs.
  const auto r =
      run1("matmul", {make(kF32, {1, 3}, {16777216, 1, -16777216}), make(kF32, {3, 1}, {1, 1, 1})});
  EXPECT_EQ(r[0], 1.0);
}

TEST(ReferenceKernels, LinearIsMatmulWithTransposedWeightPlusBias) {
  const int64_t t = 3, k = 5, n = 4;
  const Tensor x = normal(kF64, {t, k}, 1), w = normal(kF64, {n, k}, 2),
               bias = normal(kF64, {n}, 3);
  const auto wv = values(w);
  std::vector<double> wt(static_cast<size_t>(k * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < k; ++j)
      wt[static_cast<size_t>(j * n + i)] = wv[static_cast<size_t>(i * k + j)];
  }
  auto want = run1("matmul", {x, make(kF64, {k, n}, wt)});
  const auto no_bias = run1("linear", {x, w});
  expect_near_all(no_bias, want, 1e-14);
  const auto bv = values(bias);
  for (size_t i = 0; i < want.size(); ++i) want[i] += bv[i % static_cast<size_t>(n)];
  expect_near_all(run1("linear", {x, w, bias}), want, 1e-14);
}

// The reference takes its dots several outputs at a time; each output is still the sum of a
// plain loop over K in order, bit for bit, at every N around the blocks (8, 4, 1, 64 rows).
TEST(ReferenceKernels, MatmulSumsEachOutputInKOrder) {
  const int64_t m = 3, k = 37;
  for (int64_t n : {1, 3, 4, 5, 8, 13, 64, 70}) {
    SCOPED_TRACE(n);
    const Tensor a = normal(kF64, {m, k}, 4), b = normal(kF64, {k, n}, 5);
    const auto av = values(a), bv = values(b);
    std::vector<double> want(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += av[static_cast<size_t>(i * k + p)] * bv[static_cast<size_t>(p * n + j)];
        }
        want[static_cast<size_t>(i * n + j)] = acc;
      }
    }
    EXPECT_EQ(run1("matmul", {a, b}), want);
  }
}

// dequantize to f32 of 8-bit values runs in f32 (a 256-entry table): every 8-bit value times
// scales from tiny (subnormal products) to huge (overflow) equals the f64 product rounded once.
TEST(ReferenceKernels, DequantizeToF32IsTheF64ProductRoundedOnce) {
  const Tensor scale = make(kF32, {4, 1}, {1.0 / 3.0, 3.1e-41, 1.7e35, 0.0123});
  for (const DType q_dtype : {DType::kF8E4M3, DType::kF8E5M2, DType::kI8}) {
    SCOPED_TRACE(tensor::dtype_name(q_dtype));
    Tensor q = Tensor::zeros(q_dtype, {4, 256});
    for (int i = 0; i < 4 * 256; ++i)
      static_cast<uint8_t*>(q.mutable_data())[i] = static_cast<uint8_t>(i);
    const auto got = run1("dequantize", {q, scale},
                          {{"dtype", tensor::dtype_name(q_dtype)},
                           {"granularity", "block2d"},
                           {"block_rows", 1},
                           {"block", 256},
                           {"out_dtype", "f32"}});
    const auto qv = values(q), sv = values(scale);
    for (size_t i = 0; i < got.size(); ++i) {
      const double want = static_cast<float>(qv[i] * sv[i / 256]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << i;
      } else {
        EXPECT_EQ(got[i], want) << "byte " << i % 256 << " scale " << sv[i / 256];
      }
    }
  }
}

TEST(ReferenceKernels, EmbeddingGathersRows) {
  const Tensor table = make(DType::kBF16, {3, 2}, {0, 1, 2, 3, 4, 5});
  for (DType index : {DType::kI32, DType::kI64}) {
    const auto out = run("embedding", {make(index, {3}, {2, 0, 2}), table});
    EXPECT_EQ(out[0].dtype(), DType::kBF16);
    EXPECT_EQ(values(out[0]), (std::vector<double>{4, 5, 0, 1, 4, 5}));
  }
}

TEST(ReferenceKernels, PatchEmbedByHand) {
  // One channel, 2x4 image, 2x2 patches, one all-ones filter, bias 0.5.
  const auto out = run1("patch_embed",
                        {make(kF32, {1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                         make(kF32, {1, 1, 2, 2}, {1, 1, 1, 1}), make(kF32, {1}, {0.5})},
                        {{"patch", 2}});
  EXPECT_EQ(out, (std::vector<double>{14.5, 22.5}));
}

TEST(ReferenceKernels, PatchEmbedIsIm2colMatmul) {
  const int64_t c = 3, hi = 6, wi = 9, p = 3, d = 4, rows = hi / p, cols = wi / p;
  const Tensor px = normal(kF64, {c, hi, wi}, 4), w = normal(kF64, {d, c, p, p}, 5),
               b = normal(kF64, {d}, 6);
  const auto pv = values(px);
  // patches[(r, cc), (ch, i, j)] = pixels[ch, r·P + i, cc·P + j]
  std::vector<double> patches;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t cc = 0; cc < cols; ++cc) {
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t i = 0; i < p; ++i) {
          for (int64_t j = 0; j < p; ++j)
            patches.push_back(pv[static_cast<size_t>((ch * hi + r * p + i) * wi + cc * p + j)]);
        }
      }
    }
  }
  const auto want =
      run1("linear", {make(kF64, {rows * cols, c * p * p}, patches), w.reshape({d, c * p * p}), b});
  expect_near_all(run1("patch_embed", {px, w, b}, {{"patch", p}}), want, 1e-13);
}

// ---- element-wise, softmax --------------------------------------------------------------------

TEST(ReferenceKernels, ElementwiseByHand) {
  const Tensor a = make(kF64, {3}, {1, -2, 2}), b = make(kF64, {3}, {0.5, 4, -3});
  EXPECT_EQ(run1("add", {a, b}), (std::vector<double>{1.5, 2, -1}));
  EXPECT_EQ(run1("mul", {a, b}), (std::vector<double>{0.5, -8, -6}));
  // torch.nn.functional.silu / gelu in float64.
  expect_near_all(run1("silu", {a}), {0.7310585786300049, -0.2384058440442351, 1.7615941559557646},
                  1e-15);
  const Tensor g = make(kF64, {3}, {1, -1, 0.5});
  expect_near_all(run1("gelu", {g}), {0.841344746068543, -0.15865525393145702, 0.34573123063700656},
                  1e-15);
  expect_near_all(run1("gelu", {g}, {{"approximate", "tanh"}}),
                  {0.8411919906082768, -0.15880800939172324, 0.34571400982514394}, 1e-15);
  expect_near_all(run1("swiglu", {make(kF64, {1, 3}, {1, -2, 2}), make(kF64, {1, 3}, {3, 1, -1})}),
                  {3 * 0.7310585786300049, -0.2384058440442351, -1.7615941559557646}, 1e-15);
  // Any rank, rounded once to the dtype.
  const auto bf = run("add", {make(DType::kBF16, {1, 2, 1}, {1, 256}),
                              make(DType::kBF16, {1, 2, 1}, {0.00390625, 1})});
  EXPECT_EQ(bf[0].dtype(), DType::kBF16);
  EXPECT_EQ(values(bf[0]),
            (std::vector<double>{1.0, 256.0}));  // 1 + 2^-8 -> 1, 257 -> 256: ties to even
}

TEST(ReferenceKernels, Softmax) {
  expect_near_all(run1("softmax", {make(kF64, {3}, {1, 2, 3})}),
                  {0.09003057317038045, 0.2447284710547976, 0.6652409557748218}, 1e-15);
  // Max-subtracted: no overflow.
  expect_near_all(run1("softmax", {make(kF64, {1, 2}, {1000, 1001})}),
                  {0.2689414213699951, 0.7310585786300049}, 1e-15);
  // Over the last axis only, any rank.
  const auto y = run1("softmax", {normal(kF64, {2, 3, 4}, 9)});
  for (size_t row = 0; row < 6; ++row) {
    EXPECT_NEAR(y[row * 4] + y[row * 4 + 1] + y[row * 4 + 2] + y[row * 4 + 3], 1.0, 1e-15);
  }
}

// ---- rope
// ----------------------------------------------------------------------------------------

TEST(ReferenceKernels, RopeByHand) {
  // Dh 2: one pair, inv_freq 1, position 1 -> angle 1 rad.
  const auto y = run1("rope", {make(kF64, {1, 1, 2}, {1, 2}), make(DType::kI64, {1}, {1})});
  expect_near_all(y, {std::cos(1.0) - 2 * std::sin(1.0), 2 * std::cos(1.0) + std::sin(1.0)}, 1e-15);
  // Position 0 is the identity; dims past rotary_dim pass through.
  const Tensor x = normal(kF64, {2, 3, 8}, 11);
  EXPECT_EQ(run1("rope", {x, make(DType::kI32, {2}, {0, 0})}), values(x));
  const auto part = run1("rope", {x, make(DType::kI32, {2}, {5, 9})}, {{"rotary_dim", 4}});
  const auto xv = values(x);
  for (size_t i = 0; i < xv.size(); ++i) {
    if (i % 8 >= 4) {
      EXPECT_EQ(part[i], xv[i]) << i;
    }
  }
}

TEST(ReferenceKernels, RopeGptjIsNeoxOnInterleavedDims) {
  // gptj rotates (x[2i], x[2i+1]); neox rotates (x[i], x[i + rd/2]). With x_neox[i] = x[2i] and
  // x_neox[i + rd/2] = x[2i+1], neox(x_neox) is gptj(x) with the dims moved the same way.
  const int64_t t = 3, h = 2, dh = 10, rd = 6;
  const Tensor x = normal(kF64, {t, h, dh}, 12);
  const Tensor pos = make(DType::kI64, {t}, {0, 5, 1017});
  const Json scaling = Json::parse(
      R"({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64})");
  const auto xv = values(x);
  std::vector<double> xn = xv;
  for (int64_t row = 0; row < t * h; ++row) {
    for (int64_t i = 0; i < rd / 2; ++i) {
      xn[static_cast<size_t>(row * dh + i)] = xv[static_cast<size_t>(row * dh + 2 * i)];
      xn[static_cast<size_t>(row * dh + i + rd / 2)] =
          xv[static_cast<size_t>(row * dh + 2 * i + 1)];
    }
  }
  const Json attrs = {{"rotary_dim", rd}, {"theta", 500.0}, {"scaling", scaling}};
  Json gptj = attrs;
  gptj["style"] = "gptj";
  const auto yg = run1("rope", {x, pos}, gptj);
  const auto yn = run1("rope", {make(kF64, {t, h, dh}, xn), pos}, attrs);
  for (int64_t row = 0; row < t * h; ++row) {
    for (int64_t i = 0; i < rd / 2; ++i) {
      EXPECT_EQ(yg[static_cast<size_t>(row * dh + 2 * i)], yn[static_cast<size_t>(row * dh + i)]);
      EXPECT_EQ(yg[static_cast<size_t>(row * dh + 2 * i + 1)],
                yn[static_cast<size_t>(row * dh + i + rd / 2)]);
    }
    for (int64_t i = rd; i < dh; ++i)
      EXPECT_EQ(yg[static_cast<size_t>(row * dh + i)], xv[static_cast<size_t>(row * dh + i)]);
  }
}

// Reads inv_freq and the attention factor back from the kernel: with x[i] = 1, x[i + rd/2] = 0
// and position 1, neox gives y[i] = af·cos(inv_freq[i]), y[i + rd/2] = af·sin(inv_freq[i]).
void expect_frequencies(double theta, const char* scaling, const std::vector<double>& inv_freq,
                        double factor) {
  const int64_t rd = static_cast<int64_t>(inv_freq.size()) * 2;
  std::vector<double> x(static_cast<size_t>(rd), 0.0);
  for (int64_t i = 0; i < rd / 2; ++i) x[static_cast<size_t>(i)] = 1;
  const auto y = run1("rope", {make(kF64, {1, 1, rd}, x), make(DType::kI64, {1}, {1})},
                      {{"theta", theta}, {"scaling", Json::parse(scaling)}});
  for (int64_t i = 0; i < rd / 2; ++i) {
    const double c = y[static_cast<size_t>(i)], s = y[static_cast<size_t>(i + rd / 2)];
    EXPECT_NEAR(std::atan2(s, c), inv_freq[static_cast<size_t>(i)],
                1e-13 * inv_freq[static_cast<size_t>(i)])
        << scaling << " inv_freq[" << i << "]";
    EXPECT_NEAR(std::hypot(c, s), factor, 1e-14) << scaling << " attention factor";
  }
}

// Numbers from HF transformers' _compute_*_parameters evaluated in float64 (gen_ops.py's
// rope_frequencies, itself cross-checked against a hand computation), rotary dim 16.
TEST(ReferenceKernels, RopeScalingMatchesTransformers) {
  expect_frequencies(10000, "null",
                     {1.0, 0.31622776601683794, 0.1, 0.031622776601683794, 0.01,
                      0.0031622776601683794, 0.001, 0.00031622776601683794},
                     1.0);
  expect_frequencies(10000, R"({"type": "linear", "factor": 2.0})",
                     {0.5, 0.15811388300841897, 0.05, 0.015811388300841896, 0.005,
                      0.0015811388300841895, 0.0005, 0.00015811388300841897},
                     1.0);
  // Llama 3.1: high frequencies kept, low ones / 8, i = 4 in the smoothed band.
  expect_frequencies(
      500000,
      R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192})",
      {1.0, 0.19392274474868576, 0.03760603093086393, 0.0072926647372171085, 0.0005248461609929547,
       3.428102195952591e-05, 6.647869871181236e-06, 1.2891731721515574e-06},
      1.0);
  // DeepSeek-style yarn with mscale != mscale_all_dim.
  expect_frequencies(
      10000,
      R"({"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
                         "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 1.0})",
      {1.0, 0.31622776601683794, 0.1, 0.023914724805023366, 0.005125, 0.0008498621211702518,
       2.5e-05, 7.905694150420947e-06},
      0.9210423553163399);
  // Plain yarn: attention factor 0.1·ln(4) + 1.
  expect_frequencies(
      10000, R"({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048})",
      {1.0, 0.31622776601683794, 0.1, 0.02569350598886808, 0.00625, 0.0013834964763236657, 0.00025,
       7.905694150420948e-05},
      1.138629436111989);
  // No truncation of the correction range; an explicit attention factor.
  expect_frequencies(
      10000,
      R"({"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 2048,
                         "truncate": false, "attention_factor": 1.25})",
      {1.0, 0.31622776601683794, 0.1, 0.02193204625174946, 0.0038212144014117934,
       0.00022354356208469382, 6.25e-05, 1.976423537605237e-05},
      1.25);
}

// ---- attention
// -----------------------------------------------------------------------------------

struct AttentionCase {
  int64_t t, s, hq, hkv, dh, dv;
  Json attrs;
};

// The same attention written as HF eager attention: per query head, a full [T, S] score
// matrix with −inf where masked, row softmax (all-masked rows -> zeros), then P·V.
std::vector<double> naive_attention(const AttentionCase& c, const std::vector<double>& q,
                                    const std::vector<double>& k, const std::vector<double>& v) {
  const bool causal = c.attrs.value("causal", true);
  const double scale =
      c.attrs.contains("scale") ? c.attrs["scale"].get<double>() : 1 / std::sqrt(double(c.dh));
  const int64_t offset =
      c.attrs.contains("q_offset") ? c.attrs["q_offset"].get<int64_t>() : c.s - c.t;
  const int64_t window = c.attrs.value("sliding_window", 0);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> o(static_cast<size_t>(c.t * c.hq * c.dv), 0.0);
  for (int64_t h = 0; h < c.hq; ++h) {
    const int64_t kvh = h / (c.hq / c.hkv);  // repeat_kv
    for (int64_t t = 0; t < c.t; ++t) {
      std::vector<double> row(static_cast<size_t>(c.s));
      for (int64_t j = 0; j < c.s; ++j) {
        const int64_t p = offset + t;
        const bool masked = (causal && j > p) || (window > 0 && j <= p - window);
        double dot = 0;
        for (int64_t e = 0; e < c.dh; ++e)
          dot += q[static_cast<size_t>((t * c.hq + h) * c.dh + e)] *
                 k[static_cast<size_t>((j * c.hkv + kvh) * c.dh + e)];
        row[static_cast<size_t>(j)] = masked ? -inf : scale * dot;
      }
      const double m = *std::max_element(row.begin(), row.end());
      if (m == -inf) continue;
      double sum = 0;
      for (double& r : row) sum += (r = std::exp(r - m));
      for (int64_t j = 0; j < c.s; ++j) {
        for (int64_t e = 0; e < c.dv; ++e) {
          o[static_cast<size_t>((t * c.hq + h) * c.dv + e)] +=
              row[static_cast<size_t>(j)] / sum *
              v[static_cast<size_t>((j * c.hkv + kvh) * c.dv + e)];
        }
      }
    }
  }
  return o;
}

TEST(ReferenceKernels, AttentionMatchesPerHeadLoop) {
  const std::vector<AttentionCase> cases = {
      {4, 4, 4, 2, 8, 8, Json::object()},           // causal prefill, GQA
      {1, 9, 2, 1, 4, 6, Json::object()},           // decode, Dv != Dh (MLA)
      {3, 5, 2, 2, 4, 4, {{"causal", false}}},      // bidirectional (vision)
      {5, 5, 3, 1, 4, 4, {{"sliding_window", 3}}},  // sliding window
      {3, 7, 2, 1, 4, 4, {{"q_offset", 2}}},        // a chunk in the middle
      {3, 3, 1, 1, 4, 4, {{"q_offset", -2}}},       // queries 0 and 1 see no key
      {2,
       6,
       4,
       4,
       4,
       4,
       {{"scale", 0.5}, {"causal", false}, {"sliding_window", 2}, {"q_offset", 3}}},
  };
  uint64_t seed = 20;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.attrs.dump() + " T " + std::to_string(c.t) + " S " + std::to_string(c.s));
    const Tensor q = normal(kF64, {c.t, c.hq, c.dh}, seed++),
                 k = normal(kF64, {c.s, c.hkv, c.dh}, seed++),
                 v = normal(kF64, {c.s, c.hkv, c.dv}, seed++);
    const auto o = run1("attention", {q, k, v}, c.attrs);
    expect_near_all(o, naive_attention(c, values(q), values(k), values(v)), 1e-13);
  }
  // The all-masked queries of the q_offset = -2 case are zeros; the third sees key 0 only.
  const Tensor q = normal(kF64, {3, 1, 4}, 1), k = normal(kF64, {3, 1, 4}, 2),
               v = normal(kF64, {3, 1, 4}, 3);
  const auto o = run1("attention", {q, k, v}, {{"q_offset", -2}});
  const auto vv = values(v);
  EXPECT_EQ(std::vector<double>(o.begin(), o.begin() + 8), std::vector<double>(8, 0.0));
  EXPECT_EQ(std::vector<double>(o.begin() + 8, o.end()),
            std::vector<double>(vv.begin(), vv.begin() + 4));
}

TEST(ReferenceKernels, AttentionByHand) {
  // One query, two keys with scores 0 and ln 3: weights 1/4 and 3/4.
  const auto o = run1("attention",
                      {make(kF64, {1, 1, 1}, {1}), make(kF64, {2, 1, 1}, {0, std::log(3.0)}),
                       make(kF64, {2, 1, 1}, {4, 8})},
                      {{"scale", 1.0}});
  EXPECT_NEAR(o[0], 7.0, 1e-15);
}

TEST(ReferenceKernels, PagedAttentionIsAttentionOnGatheredKeys) {
  const int64_t t = 3, s = 10, hq = 4, hkv = 2, dh = 4, dv = 3, b = 4, nb = 5;
  const std::vector<double> table = {3, 0, 4};  // blocks 1 and 2 unused
  const Tensor q = normal(kF64, {t, hq, dh}, 30), k = normal(kF64, {s, hkv, dh}, 31),
               v = normal(kF64, {s, hkv, dv}, 32);
  // Caches full of NaN except where the S keys live: any stray read poisons the output.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> kc(static_cast<size_t>(nb * b * hkv * dh), nan),
      vc(static_cast<size_t>(nb * b * hkv * dv), nan);
  const auto kv = values(k), vv = values(v);
  for (int64_t j = 0; j < s; ++j) {
    const int64_t slot = static_cast<int64_t>(table[static_cast<size_t>(j / b)]) * b + j % b;
    std::copy_n(&kv[static_cast<size_t>(j * hkv * dh)], hkv * dh,
                &kc[static_cast<size_t>(slot * hkv * dh)]);
    std::copy_n(&vv[static_cast<size_t>(j * hkv * dv)], hkv * dv,
                &vc[static_cast<size_t>(slot * hkv * dv)]);
  }
  const Tensor k_cache = make(kF64, {nb, b, hkv, dh}, kc),
               v_cache = make(kF64, {nb, b, hkv, dv}, vc);
  const Tensor bt = make(DType::kI32, {3}, table);
  for (const Json& extra :
       {Json::object(), Json{{"causal", false}}, Json{{"q_offset", 4}, {"scale", 0.3}}}) {
    Json paged = extra, plain = extra;
    paged["context_len"] = s;
    const auto want = run1("attention", {q, k, v}, plain);
    EXPECT_EQ(run1("paged_attention", {q, k_cache, v_cache, bt}, paged), want) << extra.dump();
  }
}

}  // namespace
}  // namespace h0::ops
