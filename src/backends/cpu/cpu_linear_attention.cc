// Linear attention (Qwen3-Next's Gated DeltaNet): causal_conv1d, gated_delta_rule, gdn_gating.
//   causal_conv1d(x[T,C], w[C,K], state[C,K-1], bias[C]?) -> y[T,C], state_out[C,K-1]
//   gated_delta_rule(q[T,Hk,Dk], k, v[T,Hv,Dv], g[T,Hv], beta[T,Hv], state[Hv,Dk,Dv])
//     -> o[T,Hv,Dv], state_out[Hv,Dk,Dv]
//   gdn_gating(a[T,Hv], b[T,Hv], A_log[Hv], dt_bias[Hv]) -> g[T,Hv] f32, beta[T,Hv]
// The delta rule runs per value head (one task each), token by token as the catalogue states
// it, for prefill and decode alike: two passes over the head's [Dk, Dv] state per token, which
// stays in L2. The chunked form GPU kernels use (the WY/UT transform, transformers'
// torch_chunk_gated_delta_rule) was measured here at 0.75-0.86x the recurrence's tokens/s
// (4096 tokens, 16 heads of 128, BM_DeltaRule): it does ~1.4x the flops and its products are
// too small to pay that back on a CPU.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"

namespace h0::backends::cpu {
namespace {

// The hot loops are compiled for AVX-512 and AVX2 as well as the baseline and picked at load time
// (GCC function multiversioning). -ffp-contract=off holds in every clone, so each runs the same
// multiplies and adds in the same order: the same bits on every ISA, only wider.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define H0_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define H0_MULTIVERSION
#endif

float silu(float x) { return x / (1.0f + std::exp(-x)); }

float dot(const float* a, const float* b, int64_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

struct Delta {
  int64_t t, hk, dk, hv, dv;
  const float* q;  // [T, Hk, Dk], normalized and scaled
  const float* k;  // [T, Hk, Dk], normalized
  const float* v;  // [T, Hv, Dv]
  const float* g;  // [T, Hv]
  const float* beta;
};

// Token by token: S ← e^g S; δ = β (v − Sᵀk); S ← S + k ⊗ δ; o = Sᵀq. s is [Dk, Dv].
H0_MULTIVERSION void delta_recurrent(const Delta& d, int64_t h, float* s, float* o) {
  const int64_t kh = h / (d.hv / d.hk);
  std::vector<float> delta(size_t(d.dv));
  for (int64_t t = 0; t < d.t; ++t) {
    const float* q = d.q + (t * d.hk + kh) * d.dk;
    const float* k = d.k + (t * d.hk + kh) * d.dk;
    const float* v = d.v + (t * d.hv + h) * d.dv;
    const float decay = std::exp(d.g[t * d.hv + h]), b = d.beta[t * d.hv + h];
    std::fill(delta.begin(), delta.end(), 0.0f);
    for (int64_t i = 0; i < d.dk; ++i) {
      float* row = s + i * d.dv;
      const float ki = k[i];
#pragma omp simd
      for (int64_t j = 0; j < d.dv; ++j) {
        row[j] *= decay;
        delta[size_t(j)] += row[j] * ki;
      }
    }
    for (int64_t j = 0; j < d.dv; ++j) delta[size_t(j)] = b * (v[j] - delta[size_t(j)]);
    float* out = o + t * d.dv;
    std::fill(out, out + d.dv, 0.0f);
    for (int64_t i = 0; i < d.dk; ++i) {
      float* row = s + i * d.dv;
      const float ki = k[i], qi = q[i];
#pragma omp simd
      for (int64_t j = 0; j < d.dv; ++j) {
        row[j] += ki * delta[size_t(j)];
        out[j] += row[j] * qi;
      }
    }
  }
}

}  // namespace

void causal_conv1d_kernel(const Operands& call) {
  const h0p::CausalConv1d cv = h0p::causal_conv1d_operands(call);
  const hb_tensor &x = call.in[0], &w_t = call.in[1], &state_t = call.in[2];
  const int64_t t = cv.t, c = cv.c, k = cv.k;
  const bool has_bias = cv.has_bias;
  const F32View xv(x), wv(w_t), sv(state_t);
  std::optional<F32View> bv;
  if (has_bias) bv.emplace(call.in[3]);
  const float *xs = xv.data(), *ws = wv.data(), *ss = sv.data();
  // xp(i, ch): column i of state ++ x along time.
  auto xp = [&](int64_t i, int64_t ch) {
    return i < k - 1 ? ss[ch * (k - 1) + i] : xs[(i - (k - 1)) * c + ch];
  };
  std::vector<float> y(size_t(t * c));
  base::parallel_for(size_t(t), row_grain(c * k), [&](size_t, size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      for (int64_t ch = 0; ch < c; ++ch) {
        float acc = has_bias ? bv->data()[ch] : 0.0f;
        for (int64_t j = 0; j < k; ++j) acc += ws[ch * k + j] * xp(int64_t(r) + j, ch);
        y[r * size_t(c) + size_t(ch)] = cv.silu ? silu(acc) : acc;
      }
    }
  });
  std::vector<float> next(size_t(c * (k - 1)));
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < k - 1; ++i) next[size_t(ch * (k - 1) + i)] = xp(t + i, ch);
  }
  store_all(y, call.out[0]);
  store_all(next, call.out[1]);
}

void gated_delta_rule_kernel(const Operands& call) {
  const h0p::GatedDeltaRule rule = h0p::gated_delta_rule_operands(call);
  const hb_tensor &q_t = call.in[0], &k_t = call.in[1], &v_t = call.in[2], &g_t = call.in[3],
                  &beta_t = call.in[4], &state_t = call.in[5];
  const int64_t t = rule.t, hk = rule.hk, dk = rule.dk, hv = rule.hv, dv = rule.dv;
  const float scale = rule.scale, eps = rule.eps;
  const bool l2 = rule.l2norm;

  // q and k as f32, normalized (and q scaled) once per key head.
  std::vector<float> q(size_t(t * hk * dk)), k(size_t(t * hk * dk));
  load_f32(q_t, 0, q.size(), q.data());
  load_f32(k_t, 0, k.size(), k.data());
  base::parallel_for(size_t(t * hk), row_grain(2 * dk), [&](size_t, size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      float* qr = q.data() + r * size_t(dk);
      float* kr = k.data() + r * size_t(dk);
      const float qs = l2 ? scale / std::sqrt(dot(qr, qr, dk) + eps) : scale;
      const float ks = l2 ? 1.0f / std::sqrt(dot(kr, kr, dk) + eps) : 1.0f;
      for (int64_t i = 0; i < dk; ++i) qr[i] *= qs, kr[i] *= ks;
    }
  });
  const F32View v(v_t), beta(beta_t);
  const Delta d{
      t,          hk, dk, hv, dv, q.data(), k.data(), v.data(), static_cast<const float*>(g_t.data),
      beta.data()};
  // The state is updated in place in state_out.
  float* s = static_cast<float*>(call.out[1].data);
  if (s != state_t.data) std::copy_n(static_cast<const float*>(state_t.data), hv * dk * dv, s);
  std::vector<float> o(size_t(hv * t * dv));  // [Hv, T, Dv]
  base::parallel_for(size_t(hv), 1, [&](size_t, size_t b, size_t e) {
    for (size_t h = b; h < e; ++h) {
      float* sh = s + h * size_t(dk * dv);
      float* oh = o.data() + h * size_t(t * dv);
      delta_recurrent(d, int64_t(h), sh, oh);
    }
  });
  std::vector<float> out(size_t(t * hv * dv));
  for (int64_t h = 0; h < hv; ++h) {
    for (int64_t r = 0; r < t; ++r)
      std::copy_n(o.data() + (h * t + r) * dv, dv, out.data() + (r * hv + h) * dv);
  }
  store_all(out, call.out[0]);
}

// g = -e^A_log · softplus(a + dt_bias) (torch's threshold 20), beta = sigmoid(b), in f32.
void gdn_gating_kernel(const Operands& call) {
  const hb_tensor &a_t = call.in[0], &b_t = call.in[1], &alog_t = call.in[2], &dt_t = call.in[3];
  const h0p::GdnGating gg = h0p::gdn_gating_operands(call);
  const int64_t t = gg.t, hv = gg.hv;
  const F32View a(a_t), b(b_t), a_log(alog_t), dt_bias(dt_t);
  float* g = static_cast<float*>(call.out[0].data);
  std::vector<float> beta(size_t(t * hv));
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t h = 0; h < hv; ++h) {
      const int64_t i = r * hv + h;
      const float x = a.data()[i] + dt_bias.data()[h];
      g[i] = -std::exp(a_log.data()[h]) * (x > 20.0f ? x : std::log1p(std::exp(x)));
      beta[size_t(i)] = 1.0f / (1.0f + std::exp(-b.data()[i]));
    }
  }
  store_all(beta, call.out[1]);
}

}  // namespace h0::backends::cpu
