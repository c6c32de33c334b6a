#include "tensor/convert.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/check.h"
#include "tensor/float_bits.h"

namespace h0::tensor {
namespace {

// A bool element: one byte, any nonzero byte reads as true (files may hold other than 0/1).
struct bool8_t {
  uint8_t v;
};

// The C++ type of each dtype's storage.
template <DType D>
struct Storage;
template <>
struct Storage<DType::kF64> {
  using type = double;
};
template <>
struct Storage<DType::kF32> {
  using type = float;
};
template <>
struct Storage<DType::kF16> {
  using type = f16_t;
};
template <>
struct Storage<DType::kBF16> {
  using type = bf16_t;
};
template <>
struct Storage<DType::kF8E4M3> {
  using type = f8e4m3_t;
};
template <>
struct Storage<DType::kF8E5M2> {
  using type = f8e5m2_t;
};
template <>
struct Storage<DType::kI64> {
  using type = int64_t;
};
template <>
struct Storage<DType::kI32> {
  using type = int32_t;
};
template <>
struct Storage<DType::kI8> {
  using type = int8_t;
};
template <>
struct Storage<DType::kU8> {
  using type = uint8_t;
};
template <>
struct Storage<DType::kBool> {
  using type = bool8_t;
};

template <typename T>
constexpr bool kNarrowFloat = std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t> ||
                              std::is_same_v<T, f8e4m3_t> || std::is_same_v<T, f8e5m2_t>;

template <typename T>
T narrow_from_f32(float f) {
  if constexpr (std::is_same_v<T, f16_t>) return {f32_to_f16_bits(f)};
  if constexpr (std::is_same_v<T, bf16_t>) return {f32_to_bf16_bits(f)};
  if constexpr (std::is_same_v<T, f8e4m3_t>) return {f32_to_f8e4m3_bits(f)};
  if constexpr (std::is_same_v<T, f8e5m2_t>) return {f32_to_f8e5m2_bits(f)};
}

template <typename I, typename F>
I float_to_int(F f) {
  if (std::isnan(f)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<I>::max());
  const double t = std::trunc(static_cast<double>(f));
  if (t <= lo) return std::numeric_limits<I>::min();
  if (t >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

// One element from S to D.
template <typename S, typename D>
D convert_one(S s) {
  if constexpr (std::is_same_v<S, D>) {
    return s;
  } else if constexpr (std::is_same_v<S, bool8_t>) {
    return convert_one<uint8_t, D>(s.v != 0 ? 1 : 0);
  } else if constexpr (std::is_same_v<D, bool8_t>) {
    if constexpr (kNarrowFloat<S>)
      return {static_cast<uint8_t>(to_f32(s) != 0.0f || std::isnan(to_f32(s)))};
    else if constexpr (std::is_floating_point_v<S>)
      return {static_cast<uint8_t>(s != 0 || std::isnan(s))};
    else
      return {static_cast<uint8_t>(s != 0)};
  } else if constexpr (kNarrowFloat<S>) {
    return convert_one<float, D>(to_f32(s));
  } else if constexpr (kNarrowFloat<D>) {
    return narrow_from_f32<D>(static_cast<float>(s));
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    return float_to_int<D>(s);
  } else {
    return static_cast<D>(s);  // float <-> float, int -> float, int -> int (wraps, as torch)
  }
}

template <DType From, DType To>
void convert_loop(const void* src, void* dst, size_t n) {
  using S = typename Storage<From>::type;
  using D = typename Storage<To>::type;
  const S* in = static_cast<const S*>(src);
  D* out = static_cast<D*>(dst);
  for (size_t i = 0; i < n; ++i) out[i] = convert_one<S, D>(in[i]);
}

using ConvertFn = void (*)(const void*, void*, size_t);

template <size_t F, size_t... T>
constexpr std::array<ConvertFn, sizeof...(T)> row(std::index_sequence<T...>) {
  return {&convert_loop<static_cast<DType>(F), static_cast<DType>(T)>...};
}

template <size_t... F>
constexpr std::array<std::array<ConvertFn, kNumDTypes>, kNumDTypes> table(
    std::index_sequence<F...>) {
  return {row<F>(std::make_index_sequence<kNumDTypes>())...};
}

constexpr auto kTable = table(std::make_index_sequence<kNumDTypes>());

}  // namespace

void convert(const void* src, DType from, void* dst, DType to, size_t n) {
  if (n == 0) return;
  if (from == to) {
    if (src != dst) std::memmove(dst, src, n * dtype_size(from));
    return;
  }
  auto f = static_cast<size_t>(from), t = static_cast<size_t>(to);
  H0_CHECK(f < kNumDTypes && t < kNumDTypes) << "bad dtype " << f << " -> " << t;
  kTable[f][t](src, dst, n);
}

}  // namespace h0::tensor
