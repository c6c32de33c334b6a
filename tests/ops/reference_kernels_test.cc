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

using testing::make;
using testing::normal;
using testing::run;
using testing::run1;
using testing::values;

constexpr DType kF32 = DType::kF32;
constexpr DType kF64 = DType::kF64;

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << what << " [" << i << "]";
  }
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }

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

}  // namespace
}  // namespace h0::ops
