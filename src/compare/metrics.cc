#include "compare/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/parallel.h"
#include "compare/metrics_kernel.h"
#include "tensor/convert.h"

namespace h0::compare {
namespace {

using tensor::DType;

constexpr size_t kBlock = 2048;     // elements per kernel call (and per f64 buffer: L1)
constexpr size_t kChunk = 1 << 18;  // elements per parallel task; fixes the summation order
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxFinite = std::numeric_limits<double>::max();

// Sums and extremes of one chunk; merged in chunk order.
struct Partial {
  double finite = 0, lt_1e3 = 0, lt_5e3 = 0, violations = 0;
  double nan_a = 0, nan_e = 0, inf_a = 0, inf_e = 0, nan_mismatch = 0, inf_mismatch = 0;
  double sum_d = 0, sum_d2 = 0, sum_aa = 0, sum_ee = 0, sum_ae = 0;
  double max_d = -1, max_rel = 0, max_excess = -kInf;
  int64_t max_d_index = -1, max_excess_index = -1;
  uint64_t max_ulp = 0;
  double bias_n = 0, bias_sum = 0, bias_sum2 = 0, mag_sum = 0, mag_sum2 = 0, rel_sum = 0;
};

// Adds one block's rounding bias (metrics.h) to `p`: `a` and `e` upcast, the ULP of the actual
// dtype (`mantissa` bits <= 10, smallest normal exponent `emin` >= -126, so 2^(mantissa -
// exponent) is always a normal f64, built from its bits). Branch-free, so the loop vectorizes.
void accumulate_bias(const double* a, const double* e, size_t n, int mantissa, int emin,
                     Partial& p) {
  double count = 0, sum = 0, sum2 = 0, mag = 0, mag2 = 0, rel = 0;
  for (size_t i = 0; i < n; ++i) {
    const double av = a[i], ev = e[i];
    const bool counted = std::fabs(av) <= kMaxFinite && std::fabs(ev) <= kMaxFinite && ev != 0.0;
    uint64_t bits;
    std::memcpy(&bits, &ev, sizeof bits);
    const int64_t exponent =
        std::max<int64_t>(static_cast<int64_t>((bits >> 52) & 0x7ff) - 1023, emin);
    const uint64_t pow2 = static_cast<uint64_t>(mantissa - exponent + 1023) << 52;
    double inv_ulp;
    std::memcpy(&inv_ulp, &pow2, sizeof inv_ulp);
    const double d = counted ? av - ev : 0.0;
    const double u = std::min(2.0, std::max(-2.0, d * inv_ulp));
    const double m = ev > 0 ? u : -u;
    count += counted ? 1.0 : 0.0;
    sum += u, sum2 += u * u, mag += m, mag2 += m * m;
    rel += counted ? d / std::fabs(ev) : 0.0;
  }
  p.bias_n += count, p.bias_sum += sum, p.bias_sum2 += sum2;
  p.mag_sum += mag, p.mag_sum2 += mag2, p.rel_sum += rel;
}

// The sample standard deviation from a count, a sum and a sum of squares.
double sample_sd(double n, double sum, double sum2) {
  if (n < 2) return 0;
  return std::sqrt(std::max(0.0, (sum2 - sum * sum / n) / (n - 1)));
}

// The general path, for blocks holding a NaN or an infinity (and for the rare f64 squares that
// overflow): n upcast elements, every case handled. Returns the block's max |a-e| and max
// excess over the tolerance, for locate_maxima.
std::pair<double, double> accumulate(const double* a, const double* e, size_t n, double eps_e,
                                     double rtol, double atol, Partial& p) {
  double finite = 0, lt_1e3 = 0, lt_5e3 = 0, violations = 0;
  double nan_a = 0, nan_e = 0, inf_a = 0, inf_e = 0, nan_mismatch = 0, inf_mismatch = 0;
  double sum_d = 0, sum_d2 = 0, sum_aa = 0, sum_ee = 0, sum_ae = 0;
  double max_d = -1, max_rel = 0, max_excess = -kInf;
  for (size_t i = 0; i < n; ++i) {
    const double av = a[i], ev = e[i];
    const double abs_a = std::fabs(av), abs_e = std::fabs(ev);
    const bool na = av != av, ne = ev != ev;
    const bool ia = abs_a == kInf, ie = abs_e == kInf;
    const bool both = abs_a <= kMaxFinite && abs_e <= kMaxFinite;
    const double d = both ? std::fabs(av - ev) : 0.0;
    const double rel = both ? d / (ev != 0.0 ? abs_e : eps_e) : 0.0;
    finite += both ? 1.0 : 0.0;
    lt_1e3 += both && rel < 1e-3 ? 1.0 : 0.0;
    lt_5e3 += both && rel < 5e-3 ? 1.0 : 0.0;
    nan_a += na ? 1.0 : 0.0;
    nan_e += ne ? 1.0 : 0.0;
    inf_a += ia ? 1.0 : 0.0;
    inf_e += ie ? 1.0 : 0.0;
    nan_mismatch += na != ne ? 1.0 : 0.0;
    inf_mismatch += !(na || ne) && (ia || ie) && av != ev ? 1.0 : 0.0;
    sum_d += d;
    sum_d2 += d * d;
    sum_aa += both ? av * av : 0.0;
    sum_ee += both ? ev * ev : 0.0;
    sum_ae += both ? av * ev : 0.0;
    max_d = std::max(max_d, both ? d : -1.0);
    max_rel = std::max(max_rel, rel);
    const double excess = both ? d - (atol + rtol * abs_e) : -kInf;
    violations += excess > 0.0 ? 1.0 : 0.0;
    max_excess = std::max(max_excess, excess);
  }
  p.finite += finite, p.lt_1e3 += lt_1e3, p.lt_5e3 += lt_5e3, p.violations += violations;
  p.nan_a += nan_a, p.nan_e += nan_e, p.inf_a += inf_a, p.inf_e += inf_e;
  p.nan_mismatch += nan_mismatch, p.inf_mismatch += inf_mismatch;
  p.sum_d += sum_d, p.sum_d2 += sum_d2, p.sum_aa += sum_aa, p.sum_ee += sum_ee, p.sum_ae += sum_ae;
  p.max_rel = std::max(p.max_rel, max_rel);
  return {max_d, max_excess};
}

// Records the first position of a block's maxima when they beat the chunk's so far. Only
// called when they do, so the second look at the block is rare.
void locate_maxima(const double* a, const double* e, size_t n, int64_t base, double block_max_d,
                   double block_max_excess, double rtol, double atol, Partial& p) {
  bool new_d = block_max_d > p.max_d, new_excess = block_max_excess > p.max_excess;
  for (size_t i = 0; i < n && (new_d || new_excess); ++i) {
    if (!(std::fabs(a[i]) <= kMaxFinite && std::fabs(e[i]) <= kMaxFinite)) continue;
    const double d = std::fabs(a[i] - e[i]);
    if (new_d && d == block_max_d) {
      p.max_d = d, p.max_d_index = base + static_cast<int64_t>(i);
      new_d = false;
    }
    if (new_excess && d - (atol + rtol * std::fabs(e[i])) == block_max_excess) {
      p.max_excess = block_max_excess, p.max_excess_index = base + static_cast<int64_t>(i);
      new_excess = false;
    }
  }
}

// Max ULP distance over one block of same-dtype raw elements that may hold NaNs (`a`/`e` are
// the same elements upcast): NaN positions are skipped.
uint64_t ulp_block_with_nans(detail::UlpKernel ulp, size_t size, const std::byte* a_raw,
                             const std::byte* e_raw, const double* a, const double* e, size_t n) {
  uint64_t best = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isnan(a[i]) && !std::isnan(e[i])) {
      best = std::max(best, ulp(a_raw + i * size, e_raw + i * size, 1));
    }
  }
  return best;
}

// What every block of one comparison shares: the tensors' raw bytes and dtypes, the kernels
// chosen for the dtype pair, the tolerance and whether the rounding bias is measured.
struct BlockContext {
  const std::byte* a_raw;
  const std::byte* e_raw;
  DType da, de;
  size_t sa, se;               // element sizes in bytes
  detail::BlockKernel direct;  // nullptr: upcast to f64 and use `upcast`
  detail::BlockKernel upcast;
  detail::UlpKernel ulp;  // nullptr unless both sides are the same float dtype
  detail::KernelParams params;
  bool bias;
  int mantissa, emin;  // of the actual dtype, for accumulate_bias
};

// Adds the fast kernel's sums over `m` all-finite elements to `p`.
void add_block_sums(const detail::BlockSums& s, size_t m, Partial& p) {
  p.finite += static_cast<double>(m);
  p.lt_1e3 += s.lt_1e3, p.lt_5e3 += s.lt_5e3, p.violations += s.violations;
  p.sum_d += s.sum_d, p.sum_d2 += s.sum_d2;
  p.sum_aa += s.sum_aa, p.sum_ee += s.sum_ee, p.sum_ae += s.sum_ae;
  p.max_rel = std::max(p.max_rel, s.max_rel);
}

// Adds the `m` elements from element `off` to `p`. a_buf and e_buf (kBlock each) receive the
// block upcast to f64, done only where a path needs it.
void scan_block(const BlockContext& c, size_t off, size_t m, double* a_buf, double* e_buf,
                Partial& p) {
  const double eps_e = c.params.eps_e, rtol = c.params.rtol, atol = c.params.atol;
  const std::byte* a_blk = c.a_raw + off * c.sa;
  const std::byte* e_blk = c.e_raw + off * c.se;
  bool upcast_done = false;
  auto upcast_block = [&] {
    if (upcast_done) return;
    tensor::convert(a_blk, c.da, a_buf, DType::kF64, m);
    tensor::convert(e_blk, c.de, e_buf, DType::kF64, m);
    upcast_done = true;
  };
  detail::BlockSums s;
  if (c.direct != nullptr) {
    s = c.direct(a_blk, e_blk, m, c.params);
  } else {
    upcast_block();
    s = c.upcast(a_buf, e_buf, m, c.params);
  }
  const int64_t base = static_cast<int64_t>(off);
  const double nan_count = p.nan_a + p.nan_e;
  double block_max_d = s.max_d, block_max_excess = s.max_excess;
  if (!std::isfinite(s.sum_aa) || !std::isfinite(s.sum_ee)) {
    upcast_block();
    std::tie(block_max_d, block_max_excess) = accumulate(a_buf, e_buf, m, eps_e, rtol, atol, p);
  } else {
    add_block_sums(s, m, p);
  }
  if (block_max_d > p.max_d || block_max_excess > p.max_excess) {
    upcast_block();
    locate_maxima(a_buf, e_buf, m, base, block_max_d, block_max_excess, rtol, atol, p);
  }
  if (c.bias) {
    upcast_block();
    accumulate_bias(a_buf, e_buf, m, c.mantissa, c.emin, p);
  }
  if (c.ulp != nullptr) {
    if (nan_count != p.nan_a + p.nan_e) {
      p.max_ulp =
          std::max(p.max_ulp, ulp_block_with_nans(c.ulp, c.sa, a_blk, e_blk, a_buf, e_buf, m));
    } else {
      p.max_ulp = std::max(p.max_ulp, c.direct != nullptr ? s.max_ulp : c.ulp(a_blk, e_blk, m));
    }
  }
}

// The chunks' partials merged in chunk order (so the sums do not depend on the thread count).
Partial merge_partials(const std::vector<Partial>& partials) {
  Partial t;
  for (const Partial& p : partials) {
    t.finite += p.finite, t.lt_1e3 += p.lt_1e3, t.lt_5e3 += p.lt_5e3, t.violations += p.violations;
    t.nan_a += p.nan_a, t.nan_e += p.nan_e, t.inf_a += p.inf_a, t.inf_e += p.inf_e;
    t.nan_mismatch += p.nan_mismatch, t.inf_mismatch += p.inf_mismatch;
    t.sum_d += p.sum_d, t.sum_d2 += p.sum_d2;
    t.sum_aa += p.sum_aa, t.sum_ee += p.sum_ee, t.sum_ae += p.sum_ae;
    t.max_rel = std::max(t.max_rel, p.max_rel);
    t.max_ulp = std::max(t.max_ulp, p.max_ulp);
    t.bias_n += p.bias_n, t.bias_sum += p.bias_sum, t.bias_sum2 += p.bias_sum2;
    t.mag_sum += p.mag_sum, t.mag_sum2 += p.mag_sum2, t.rel_sum += p.rel_sum;
    if (p.max_d > t.max_d) t.max_d = p.max_d, t.max_d_index = p.max_d_index;
    if (p.max_excess > t.max_excess)
      t.max_excess = p.max_excess, t.max_excess_index = p.max_excess_index;
  }
  return t;
}

// The cosine similarity of the two tensors from their sums of products; 1 when both are zero.
double cosine_of(const Partial& t) {
  if (t.sum_aa == 0 && t.sum_ee == 0) return 1;
  if (t.sum_aa == 0 || t.sum_ee == 0) return 0;
  return std::clamp(t.sum_ae / (std::sqrt(t.sum_aa) * std::sqrt(t.sum_ee)), -1.0, 1.0);
}

// The metrics of `n` compared elements from their merged partial `t`.
Metrics metrics_from(const Partial& t, size_t n, const tensor::Tensor& actual,
                     const tensor::Tensor& expected, const ElementTolerance& tolerance,
                     bool same_dtype) {
  Metrics m;
  m.count = static_cast<int64_t>(n);
  m.finite_count = static_cast<int64_t>(t.finite);
  if (m.finite_count > 0) {
    const double nf = t.finite;
    m.max_abs_err = t.max_d;
    m.max_rel_err = t.max_rel;
    m.mean_abs_err = t.sum_d / nf;
    m.rmse = std::sqrt(t.sum_d2 / nf);
    m.ratio_rel_lt_1e3 = t.lt_1e3 / nf;
    m.ratio_rel_lt_5e3 = t.lt_5e3 / nf;
    m.worst_index = t.max_d_index;
    m.worst_actual = actual.at(t.max_d_index);
    m.worst_expected = expected.at(t.max_d_index);
  }
  m.cosine = cosine_of(t);
  m.rel_l2 = t.sum_ee > 0 ? std::sqrt(t.sum_d2) / std::sqrt(t.sum_ee) : std::sqrt(t.sum_d2);
  if (same_dtype) m.max_ulp = t.max_ulp;
  m.nan_actual = static_cast<int64_t>(t.nan_a);
  m.nan_expected = static_cast<int64_t>(t.nan_e);
  m.inf_actual = static_cast<int64_t>(t.inf_a);
  m.inf_expected = static_cast<int64_t>(t.inf_e);
  m.nan_mismatch = static_cast<int64_t>(t.nan_mismatch);
  m.inf_mismatch = static_cast<int64_t>(t.inf_mismatch);
  m.bias_count = static_cast<int64_t>(t.bias_n);
  if (t.bias_n > 0) {
    m.bias_ulp = t.bias_sum / t.bias_n;
    m.magnitude_bias_ulp = t.mag_sum / t.bias_n;
    m.bias_rel = t.rel_sum / t.bias_n;
    m.bias_sd_ulp = sample_sd(t.bias_n, t.bias_sum, t.bias_sum2);
    m.magnitude_bias_sd_ulp = sample_sd(t.bias_n, t.mag_sum, t.mag_sum2);
  }
  if (tolerance.enabled) {
    m.mismatch_count = static_cast<int64_t>(t.violations) + m.nan_mismatch + m.inf_mismatch;
    if (t.max_excess > 0) {
      m.worst_excess_index = t.max_excess_index;
      m.worst_excess = t.max_excess;
    }
  } else {
    m.mismatch_count = m.nan_mismatch + m.inf_mismatch;
  }
  return m;
}

}  // namespace

Metrics compute_metrics(const tensor::Tensor& actual, const tensor::Tensor& expected,
                        const ElementTolerance& tolerance, bool with_bias) {
  const DType da = actual.dtype(), de = expected.dtype();
  if (actual.numel() != expected.numel()) {
    throw InputError("", "element counts differ: actual " + tensor::shape_string(actual.shape()) +
                             ", expected " + tensor::shape_string(expected.shape()));
  }
  const size_t n = static_cast<size_t>(actual.numel());
  // Integer expected values are exact: a zero there gets a unit denominator.
  const double eps_e = tensor::is_float(de) ? tensor::info(de).epsilon : 1.0;
  const bool same_dtype = da == de && tensor::is_float(da);
  // Disabled element-wise check: an infinite atol means no position ever exceeds it.
  const double rtol = tolerance.enabled ? tolerance.rtol : 0.0;
  const double atol = tolerance.enabled ? tolerance.atol : kInf;
  BlockContext c;
  c.a_raw = static_cast<const std::byte*>(actual.data());
  c.e_raw = static_cast<const std::byte*>(expected.data());
  c.da = da, c.de = de;
  c.sa = tensor::dtype_size(da), c.se = tensor::dtype_size(de);
  c.direct = detail::block_kernel(da, de, same_dtype);
  c.upcast = detail::block_kernel(DType::kF64, DType::kF64);
  c.ulp = same_dtype ? detail::ulp_kernel(da) : nullptr;
  c.params = detail::KernelParams{eps_e, rtol, atol};
  // The rounding bias of outputs of 16 bits or fewer (f16, bf16, f8), where it is judged.
  c.bias = with_bias && tensor::is_float(da) && tensor::is_float(de) &&
           tensor::info(da).mantissa_bits <= 10;
  c.mantissa = tensor::info(da).mantissa_bits, c.emin = tensor::min_normal_exponent(da);

  std::vector<Partial> partials((n + kChunk - 1) / kChunk);
  base::parallel_for(n, kChunk, [&](size_t chunk, size_t begin, size_t end) {
    alignas(64) double a_buf[kBlock], e_buf[kBlock];
    for (size_t off = begin; off < end; off += kBlock) {
      scan_block(c, off, std::min(kBlock, end - off), a_buf, e_buf, partials[chunk]);
    }
  });
  return metrics_from(merge_partials(partials), n, actual, expected, tolerance, same_dtype);
}

std::vector<std::pair<std::string, double>> metric_values(const Metrics& m) {
  std::vector<std::pair<std::string, double>> out = {
      {"max_abs_err", m.max_abs_err},
      {"max_rel_err", m.max_rel_err},
      {"mean_abs_err", m.mean_abs_err},
      {"rmse", m.rmse},
      {"cosine", m.cosine},
      {"ratio_rel_lt_1e-3", m.ratio_rel_lt_1e3},
      {"ratio_rel_lt_5e-3", m.ratio_rel_lt_5e3},
  };
  if (m.max_ulp) out.emplace_back("max_ulp", static_cast<double>(*m.max_ulp));
  out.emplace_back("nan_mismatch", static_cast<double>(m.nan_mismatch));
  out.emplace_back("inf_mismatch", static_cast<double>(m.inf_mismatch));
  out.emplace_back("mismatch_count", static_cast<double>(m.mismatch_count));
  if (m.bias_count > 0) {
    out.emplace_back("bias_ulp", m.bias_ulp);
    out.emplace_back("magnitude_bias_ulp", m.magnitude_bias_ulp);
    out.emplace_back("bias_rel", m.bias_rel);
  }
  return out;
}

}  // namespace h0::compare
