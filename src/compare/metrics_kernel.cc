#include "compare/metrics_kernel.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tensor/float_bits.h"

namespace h0::compare::detail {
namespace {

using tensor::bf16_t;
using tensor::DType;
using tensor::f16_t;

// Vectors of four lanes (GCC vector extensions): native ymm on AVX2 and AVX-512, pairs of xmm
// on baseline x86-64. Each ISA performs the same IEEE operations lane by lane, so every
// variant computes the same bits.
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int64_t v4l __attribute__((vector_size(32)));
typedef uint64_t v4q __attribute__((vector_size(32)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef uint16_t v4h __attribute__((vector_size(8)));
typedef uint8_t v4b __attribute__((vector_size(4)));

constexpr int kWidth = 4;              // lanes per vector
constexpr int kSets = 2;               // independent lane sets, to shorten loop-carried chains
constexpr int kStep = kWidth * kSets;  // elements per iteration; element i -> set (i/4)%2, lane i%4

template <typename V, typename T>
[[gnu::always_inline]] inline V load_vec(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Four elements upcast to f64.
[[gnu::always_inline]] inline v4d load4(const double* p) { return load_vec<v4d>(p); }
[[gnu::always_inline]] inline v4d load4(const float* p) {
  return __builtin_convertvector(load_vec<v4f>(p), v4d);
}
[[gnu::always_inline]] inline v4d load4(const bf16_t* p) {
  const v4u w = __builtin_convertvector(load_vec<v4h>(p), v4u) << 16;
  return __builtin_convertvector((v4f)w, v4d);
}
// f16 -> f32 without branches: normals rebias by a multiply, subnormals by a subtraction.
[[gnu::always_inline]] inline v4d load4(const f16_t* p) {
  const v4u w = __builtin_convertvector(load_vec<v4h>(p), v4u) << 16;
  const v4u sign = w & 0x80000000u;
  const v4u two_w = w + w;
  const v4f normal = (v4f)((two_w >> 4) + (0xE0u << 23)) * 0x1p-112f;
  const v4f subnormal = (v4f)((two_w >> 17) | (126u << 23)) - 0.5f;
  const v4u magnitude = two_w < (1u << 27) ? (v4u)subnormal : (v4u)normal;
  return __builtin_convertvector((v4f)(sign | magnitude), v4d);
}

// ULP distances of same-dtype elements, folded into a running per-lane maximum. The
// sign-magnitude bits become ordered integers (negated by xor-and-subtract) and the distance
// is taken in wrapping unsigned arithmetic: distances below 2^32 are exact in 32-bit lanes,
// so only f64 needs 64-bit ones.
template <typename Bits>
struct UlpLanes {
  static constexpr int kBits = 8 * sizeof(Bits);
  using Wide = std::conditional_t<(kBits <= 32), v4u, v4q>;
  using WideSigned = std::conditional_t<(kBits <= 32), v4i, v4l>;
  using Scalar = std::conditional_t<(kBits <= 32), uint32_t, uint64_t>;
  typedef Bits vbits __attribute__((vector_size(kWidth * sizeof(Bits))));
  Wide best{};

  [[gnu::always_inline]] static Wide ordered(Wide b) {
    const Wide magnitude = b & ((Scalar{1} << (kBits - 1)) - 1);
    const Wide negative = Wide{} - (b >> (kBits - 1));  // all ones for a set sign bit
    return (magnitude ^ negative) - negative;
  }
  [[gnu::always_inline]] void step(const void* a, const void* e) {
    const Wide oa =
        ordered(__builtin_convertvector(load_vec<vbits>(static_cast<const Bits*>(a)), Wide));
    const Wide oe =
        ordered(__builtin_convertvector(load_vec<vbits>(static_cast<const Bits*>(e)), Wide));
    const Wide diff = oa - oe;
    const Wide dist = (WideSigned)oa > (WideSigned)oe ? diff : Wide{} - diff;
    best = dist > best ? dist : best;
  }
  uint64_t max() const {
    uint64_t out = 0;
    for (int j = 0; j < kWidth; ++j) out = best[j] > out ? best[j] : out;
    return out;
  }
};

// The storage bits of a float type, for ULP distances.
template <typename T>
struct BitsOf;
template <>
struct BitsOf<double> {
  using type = uint64_t;
};
template <>
struct BitsOf<float> {
  using type = uint32_t;
};
template <>
struct BitsOf<bf16_t> {
  using type = uint16_t;
};
template <>
struct BitsOf<f16_t> {
  using type = uint16_t;
};

// Per-lane state of one set. Counts are integer lanes (a true comparison is -1: they subtract).
struct Lanes {
  v4d sd{}, sd2{}, saa{}, see{}, sae{}, md{}, rn{},
      rd = v4d{} + 1.0, mx = v4d{} - std::numeric_limits<double>::infinity();
  v4l l1{}, l5{}, vi{};
};

// One step on four elements. max_rel = max d/den is kept without dividing: each lane holds its
// best (num, den) and a candidate wins when d * den_best > num_best * den.
[[gnu::always_inline]] inline void step(Lanes& s, v4d a, v4d e, const KernelParams& p) {
  const v4l abs_mask = v4l{} + INT64_MAX;
  const v4d d = (v4d)((v4l)(a - e) & abs_mask);
  const v4d ae = (v4d)((v4l)e & abs_mask);
  s.sd += d;
  s.sd2 += d * d;
  s.saa += a * a;
  s.see += e * e;
  s.sae += a * e;
  s.md = d > s.md ? d : s.md;
  const v4d den = e != 0.0 ? ae : v4d{} + p.eps_e;
  const v4l better = d * s.rd > s.rn * den;
  s.rn = better ? d : s.rn;
  s.rd = better ? den : s.rd;
  s.l1 -= d < 1e-3 * den;
  s.l5 -= d < 5e-3 * den;
  const v4d excess = d - (p.atol + p.rtol * ae);
  s.vi -= excess > 0.0;
  s.mx = excess > s.mx ? excess : s.mx;
}

// Keeps lanes of `t` where `live`, else those of `s` (for the ragged tail).
[[gnu::always_inline]] inline void select(Lanes& s, const Lanes& t, v4l live) {
  s.sd = live ? t.sd : s.sd, s.sd2 = live ? t.sd2 : s.sd2, s.saa = live ? t.saa : s.saa;
  s.see = live ? t.see : s.see, s.sae = live ? t.sae : s.sae, s.md = live ? t.md : s.md;
  s.rn = live ? t.rn : s.rn, s.rd = live ? t.rd : s.rd, s.mx = live ? t.mx : s.mx;
  s.l1 = live ? t.l1 : s.l1, s.l5 = live ? t.l5 : s.l5, s.vi = live ? t.vi : s.vi;
}

// The body every ISA variant inlines. kUlp (same dtype only) adds the ULP distance on the
// elements already loaded.
template <typename TA, typename TE, bool kUlp>
[[gnu::always_inline]] inline BlockSums body(const void* a_raw, const void* e_raw, size_t n,
                                             const KernelParams& p) {
  const TA* a = static_cast<const TA*>(a_raw);
  const TE* e = static_cast<const TE*>(e_raw);
  Lanes s[kSets];
  UlpLanes<typename BitsOf<TA>::type> ulp;
  size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    for (int k = 0; k < kSets; ++k) {
      step(s[k], load4(a + i + k * kWidth), load4(e + i + k * kWidth), p);
      if constexpr (kUlp) ulp.step(a + i + k * kWidth, e + i + k * kWidth);
    }
  }
  // The tail, as if the loop had continued over zero padding, keeping only live lanes.
  if (i < n) {
    TA ta[kStep] = {};
    TE te[kStep] = {};  // zero pads are 0 ULP apart
    const size_t rest = n - i;
    for (size_t j = 0; j < rest; ++j) ta[j] = a[i + j], te[j] = e[i + j];
    for (int k = 0; k < kSets; ++k) {
      Lanes t = s[k];
      step(t, load4(ta + k * kWidth), load4(te + k * kWidth), p);
      if constexpr (kUlp) ulp.step(ta + k * kWidth, te + k * kWidth);
      select(s[k], t, v4l{0, 1, 2, 3} + k * kWidth < static_cast<int64_t>(rest));
    }
  }

  // Lanes reduce in a fixed order: set 0 lanes 0..3, then set 1.
  BlockSums out;
  double best_num = 0, best_den = 1;
  out.max_excess = -std::numeric_limits<double>::infinity();
  for (int k = 0; k < kSets; ++k) {
    for (int j = 0; j < kWidth; ++j) {
      const Lanes& l = s[k];
      out.sum_d += l.sd[j], out.sum_d2 += l.sd2[j];
      out.sum_aa += l.saa[j], out.sum_ee += l.see[j], out.sum_ae += l.sae[j];
      out.lt_1e3 += static_cast<double>(l.l1[j]);
      out.lt_5e3 += static_cast<double>(l.l5[j]);
      out.violations += static_cast<double>(l.vi[j]);
      out.max_d = l.md[j] > out.max_d ? l.md[j] : out.max_d;
      out.max_excess = l.mx[j] > out.max_excess ? l.mx[j] : out.max_excess;
      if (l.rn[j] * best_den > best_num * l.rd[j]) best_num = l.rn[j], best_den = l.rd[j];
    }
  }
  out.max_rel = best_num / best_den;
  if constexpr (kUlp) out.max_ulp = ulp.max();
  return out;
}

template <typename Bits>
[[gnu::always_inline]] inline uint64_t ulp_only(const void* a_raw, const void* e_raw, size_t n) {
  const Bits* a = static_cast<const Bits*>(a_raw);
  const Bits* e = static_cast<const Bits*>(e_raw);
  UlpLanes<Bits> ulp;
  size_t i = 0;
  for (; i + kWidth <= n; i += kWidth) ulp.step(a + i, e + i);
  if (i < n) {
    Bits ta[kWidth] = {}, te[kWidth] = {};
    for (size_t j = 0; i + j < n; ++j) ta[j] = a[i + j], te[j] = e[i + j];
    ulp.step(ta, te);
  }
  return ulp.max();
}

// One instantiation per ISA: the target attribute lets the inlined body use that ISA.
#define H0_AVX512 gnu::target("avx512f,avx512dq,avx512bw,avx512vl,avx2,f16c")
#define H0_AVX2 gnu::target("avx2,f16c")

template <typename TA, typename TE, bool kUlp>
[[H0_AVX512]] BlockSums body_avx512(const void* a, const void* e, size_t n, const KernelParams& p) {
  return body<TA, TE, kUlp>(a, e, n, p);
}
template <typename TA, typename TE, bool kUlp>
[[H0_AVX2]] BlockSums body_avx2(const void* a, const void* e, size_t n, const KernelParams& p) {
  return body<TA, TE, kUlp>(a, e, n, p);
}
template <typename TA, typename TE, bool kUlp>
BlockSums body_baseline(const void* a, const void* e, size_t n, const KernelParams& p) {
  return body<TA, TE, kUlp>(a, e, n, p);
}
template <typename Bits>
[[H0_AVX512]] uint64_t ulp_avx512(const void* a, const void* e, size_t n) {
  return ulp_only<Bits>(a, e, n);
}
template <typename Bits>
[[H0_AVX2]] uint64_t ulp_avx2(const void* a, const void* e, size_t n) {
  return ulp_only<Bits>(a, e, n);
}
template <typename Bits>
uint64_t ulp_baseline(const void* a, const void* e, size_t n) {
  return ulp_only<Bits>(a, e, n);
}

template <typename TA, typename TE, bool kUlp>
BlockKernel pick(int level) {
  return level >= 2   ? &body_avx512<TA, TE, kUlp>
         : level == 1 ? &body_avx2<TA, TE, kUlp>
                      : &body_baseline<TA, TE, kUlp>;
}

template <typename TA>
BlockKernel pick_expected(DType e, bool same, int level) {
  switch (e) {
    case DType::kF64:
      return pick<TA, double, false>(level);
    case DType::kF32:
      return pick<TA, float, false>(level);
    case DType::kBF16:
      return pick<TA, bf16_t, false>(level);
    case DType::kF16:
      return pick<TA, f16_t, false>(level);
    default:
      return nullptr;
  }
}

template <typename Bits>
UlpKernel pick_ulp(int level) {
  return level >= 2 ? &ulp_avx512<Bits> : level == 1 ? &ulp_avx2<Bits> : &ulp_baseline<Bits>;
}

int detect_level() {
  __builtin_cpu_init();
  int level = 0;
#if defined(__clang__)
  // clang's builtin knows no "f16c"; every AVX2 CPU (Haswell, Zen and later) has it.
  if (__builtin_cpu_supports("avx2")) level = 1;
#else
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) level = 1;
#endif
  if (level == 1 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    level = 2;
  }
  if (const char* isa = std::getenv("HARNESS_ISA")) {
    if (std::strcmp(isa, "baseline") == 0)
      level = 0;
    else if (std::strcmp(isa, "avx2") == 0 && level > 1)
      level = 1;
  }
  return level;
}

int& level_ref() {
  static int level = detect_level();
  return level;
}

}  // namespace

int isa_level() { return level_ref(); }
void force_isa_level(int level) { level_ref() = level; }

BlockKernel block_kernel(DType a, DType e, bool with_ulp) {
  const int level = isa_level();
  if (with_ulp && a == e) {
    switch (a) {
      case DType::kF64:
        return pick<double, double, true>(level);
      case DType::kF32:
        return pick<float, float, true>(level);
      case DType::kBF16:
        return pick<bf16_t, bf16_t, true>(level);
      case DType::kF16:
        return pick<f16_t, f16_t, true>(level);
      default:
        return nullptr;
    }
  }
  switch (a) {
    case DType::kF64:
      return pick_expected<double>(e, false, level);
    case DType::kF32:
      return pick_expected<float>(e, false, level);
    case DType::kBF16:
      return pick_expected<bf16_t>(e, false, level);
    case DType::kF16:
      return pick_expected<f16_t>(e, false, level);
    default:
      return nullptr;
  }
}

UlpKernel ulp_kernel(DType dtype) {
  const int level = isa_level();
  switch (tensor::dtype_size(dtype)) {
    case 1:
      return pick_ulp<uint8_t>(level);
    case 2:
      return pick_ulp<uint16_t>(level);
    case 4:
      return pick_ulp<uint32_t>(level);
    default:
      return pick_ulp<uint64_t>(level);
  }
}

}  // namespace h0::compare::detail
