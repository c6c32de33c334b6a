// Mixture-of-experts routing and expert FFNs.
//   moe_gate(logits[T,E], bias[E]?) -> weights[T,k] f32, ids[T,k] i32
//     scores = softmax(logits) or sigmoid(logits); sel = scores + bias (selection only);
//     n_group > 1: keep the topk_group groups with the largest sum of their top-2 sel values;
//     pick top_k by sel (descending, ties -> lower id); weights = scores of the picks,
//     / their sum if normalize, · routed_scaling_factor.
//   moe_experts(x[T,D], weights[T,k], ids[T,k], w_gate[E,F,D], w_up[E,F,D], w_down[E,D,F])
//     y[t] = Σ_j weights[t,j] · down_e(silu(gate_e x_t) · up_e x_t), e = ids[t,j]
//     optional b_gate[E,F], b_up[E,F], b_down[E,D] (all three) add to the projections; attr
//     activation clamped_swiglu (GPT-OSS): (clamp(u, ±limit) + 1) · g'·sigmoid(alpha·g'), g' =
//     min(g, limit)
// moe_experts groups the tokens routed to each expert and runs the three projections as
// sgemms over that group, experts in id order, so y accumulates in a fixed order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"

namespace h0::backends::cpu {
namespace {

// Orders indices by value descending, ties to the lower index; NaN ranks last, so the order
// stays a strict weak ordering (std::sort's requirement) on any input.
struct Descending {
  const float* v;
  float key(int64_t i) const {
    return std::isnan(v[i]) ? -std::numeric_limits<float>::infinity() : v[i];
  }
  bool operator()(int64_t a, int64_t b) const {
    const float ka = key(a), kb = key(b);
    return ka > kb || (ka == kb && a < b);
  }
};

}  // namespace

void moe_gate_kernel(const Operands& call) {
  const h0p::MoeGate gate = h0p::moe_gate_operands(call);
  const hb_tensor& logits = call.in[0];
  const int64_t t = gate.t, e = gate.e, k = gate.k, n_group = gate.n_group,
                topk_group = gate.topk_group, group_size = e / n_group;
  const bool grouped = n_group > 1, normalize = gate.normalize, sigmoid = gate.sigmoid;
  const float routed_scale = gate.routed_scale;

  std::vector<float> bias(static_cast<size_t>(e), 0.0f);
  if (gate.bias != nullptr) load_f32(*gate.bias, 0, static_cast<size_t>(e), bias.data());
  auto* weights = static_cast<float*>(call.out[0].data);
  auto* ids = static_cast<int32_t*>(call.out[1].data);
  base::parallel_for(static_cast<size_t>(t), row_grain(e * 4), [&](size_t, size_t b, size_t end) {
    std::vector<float> score(static_cast<size_t>(e)), sel(static_cast<size_t>(e)),
        gscore(static_cast<size_t>(n_group));
    std::vector<int64_t> order(static_cast<size_t>(e)), gorder(static_cast<size_t>(n_group));
    for (size_t r = b; r < end; ++r) {
      load_f32(logits, r * static_cast<size_t>(e), static_cast<size_t>(e), score.data());
      if (!sigmoid) {
        const float mx = *std::max_element(score.begin(), score.end());
        float sum = 0;
        for (float& s : score) sum += (s = std::exp(s - mx));
        for (float& s : score) s /= sum;
      } else {
        for (float& s : score) s = 1.0f / (1.0f + std::exp(-s));
      }
      for (int64_t i = 0; i < e; ++i)
        sel[static_cast<size_t>(i)] = score[static_cast<size_t>(i)] + bias[static_cast<size_t>(i)];
      // Candidates: every expert, or those of the best topk_group groups.
      int64_t n_cand = e;
      std::iota(order.begin(), order.end(), 0);
      if (grouped) {
        for (int64_t g = 0; g < n_group; ++g) {
          float* first = sel.data() + g * group_size;
          float top1 = first[0], top2 = -std::numeric_limits<float>::infinity();
          for (int64_t i = 1; i < group_size; ++i) {
            if (first[i] > top1) {
              top2 = top1;
              top1 = first[i];
            } else if (first[i] > top2) {
              top2 = first[i];
            }
          }
          gscore[static_cast<size_t>(g)] = group_size >= 2 ? top1 + top2 : top1;
        }
        std::iota(gorder.begin(), gorder.end(), 0);
        std::sort(gorder.begin(), gorder.end(), Descending{gscore.data()});
        std::sort(gorder.begin(), gorder.begin() + topk_group);
        n_cand = 0;
        for (int64_t gi = 0; gi < topk_group; ++gi) {
          for (int64_t i = 0; i < group_size; ++i)
            order[static_cast<size_t>(n_cand++)] = gorder[static_cast<size_t>(gi)] * group_size + i;
        }
      }
      std::partial_sort(order.begin(), order.begin() + k, order.begin() + n_cand,
                        Descending{sel.data()});
      float* w = weights + r * static_cast<size_t>(k);
      float total = 0;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t id = order[static_cast<size_t>(j)];
        ids[r * static_cast<size_t>(k) + static_cast<size_t>(j)] = static_cast<int32_t>(id);
        w[j] = score[static_cast<size_t>(id)];
        total += w[j];
      }
      for (int64_t j = 0; j < k; ++j) w[j] = (normalize ? w[j] / total : w[j]) * routed_scale;
    }
  });
}

void moe_experts_kernel(const Operands& call) {
  const h0p::MoeExperts m = h0p::moe_experts_operands(call);
  const hb_tensor &x = call.in[0], &wts = call.in[1], &ids_t = call.in[2];
  const hb_tensor &wg_t = call.in[3], &wu_t = call.in[4], &wd_t = call.in[5];
  const int64_t t = m.t, d = m.d, k = m.k, e = m.e, f = m.f;
  const bool biased = m.biased, clamped = m.clamped;
  const float alpha = m.alpha, limit = m.limit;
  std::vector<float> bg, bu, bd;  // this expert's biases
  const auto bias_row = [&](const hb_tensor& b, int64_t ex, int64_t n, std::vector<float>& buf) {
    buf.resize(static_cast<size_t>(n));
    load_f32(b, static_cast<size_t>(ex * n), static_cast<size_t>(n), buf.data());
  };

  // Routes of each expert: the (token, slot) pairs that picked it, in token order.
  const auto* ids = static_cast<const int32_t*>(ids_t.data);
  const auto* route_w = static_cast<const float*>(wts.data);
  std::vector<std::vector<int64_t>> routes(static_cast<size_t>(e));
  for (int64_t i = 0; i < t * k; ++i) routes[static_cast<size_t>(ids[i])].push_back(i);

  const F32View xf(x);
  std::vector<float> y(static_cast<size_t>(t * d), 0.0f);
  std::vector<float> wg, wu, wd, xe, gate, up, out;
  for (int64_t ex = 0; ex < e; ++ex) {
    const auto& route = routes[static_cast<size_t>(ex)];
    if (route.empty()) continue;
    const int64_t n = static_cast<int64_t>(route.size());
    // This expert's weights as f32: in place for f32, else widened slices.
    auto slice = [&](const hb_tensor& w, int64_t rows, int64_t cols,
                     std::vector<float>& buf) -> const float* {
      const size_t len = static_cast<size_t>(rows * cols), first = static_cast<size_t>(ex) * len;
      if (w.dtype == HB_F32) return static_cast<const float*>(w.data) + first;
      buf.resize(len);
      base::parallel_for(len, size_t{1} << 16, [&](size_t, size_t b, size_t end) {
        load_f32(w, first + b, end - b, buf.data() + b);
      });
      return buf.data();
    };
    const float* g = slice(wg_t, f, d, wg);
    const float* u = slice(wu_t, f, d, wu);
    const float* dn = slice(wd_t, d, f, wd);
    xe.resize(static_cast<size_t>(n * d));
    for (int64_t i = 0; i < n; ++i) {
      const float* src = xf.data() + (route[static_cast<size_t>(i)] / k) * d;
      std::copy(src, src + d, xe.data() + i * d);
    }
    gate.resize(static_cast<size_t>(n * f));
    up.resize(static_cast<size_t>(n * f));
    out.resize(static_cast<size_t>(n * d));
    sgemm(n, f, d, xe.data(), g, true, gate.data(), false);
    sgemm(n, f, d, xe.data(), u, true, up.data(), false);
    if (biased) {
      bias_row(call.in[6], ex, f, bg);
      bias_row(call.in[7], ex, f, bu);
      bias_row(call.in[8], ex, d, bd);
      for (size_t i = 0; i < gate.size(); ++i) {
        gate[i] += bg[i % static_cast<size_t>(f)];
        up[i] += bu[i % static_cast<size_t>(f)];
      }
    }
    if (clamped) {
      for (size_t i = 0; i < gate.size(); ++i) {
        const float gc = std::min(gate[i], limit), uc = std::clamp(up[i], -limit, limit);
        gate[i] = (uc + 1.0f) * gc / (1.0f + std::exp(-alpha * gc));
      }
    } else {
      for (size_t i = 0; i < gate.size(); ++i)
        gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
    }
    sgemm(n, d, f, gate.data(), dn, true, out.data(), false);
    if (biased) {
      for (size_t i = 0; i < out.size(); ++i) out[i] += bd[i % static_cast<size_t>(d)];
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t slot = route[static_cast<size_t>(i)];
      const float w = route_w[slot];
      float* yr = y.data() + (slot / k) * d;
      const float* o = out.data() + i * d;
#pragma omp simd
      for (int64_t c = 0; c < d; ++c) yr[c] += w * o[c];
    }
  }
  store_all(y, call.out[0]);
}

}  // namespace h0::backends::cpu
