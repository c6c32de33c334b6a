// Bit-exact scalar conversions between f32 and the narrow float formats, as PyTorch 2.x does
// them (checked against torch-generated vectors in tests/tensor/convert_test.cc):
//   f32 -> f16, bf16, f8_e5m2: round to nearest even; overflow -> inf.
//   f32 -> f8_e4m3 (e4m3fn): round to nearest even; anything beyond 448, inf included,
//     saturates to +-448 (torch >= 2.x); NaN -> S.1111.111.
//   NaN -> f16/bf16 keeps the sign and the payload's top bits (a NaN whose kept payload would be
//     zero gets the quiet bit), so every f16/bf16 pattern survives a trip through f32. PyTorch's
//     own NaN bits differ between its code paths (bf16 gives 0xffff, f16 quiets), so only
//     NaN-ness is comparable with it. NaN -> f8 is the format's canonical NaN with the sign.
//   narrow -> f32 is exact.
// Rounding is done in integers, so it does not depend on the FPU's rounding mode.
#pragma once

#include <bit>
#include <cstdint>

namespace h0::tensor {

// Storage types of the narrow formats: the bits, nothing else.
struct f16_t {
  uint16_t bits;
};
struct bf16_t {
  uint16_t bits;
};
struct f8e4m3_t {
  uint8_t bits;
};
struct f8e5m2_t {
  uint8_t bits;
};

namespace detail {

// Rounds a finite f32 magnitude (bits without the sign) to a format with M mantissa bits and
// exponent bias B, round-to-nearest-even, subnormals included. Returns the magnitude bits of the
// result; a value beyond the format's range comes back as a pattern with an all-ones exponent
// or above, for the caller's overflow policy.
template <int M, int B>
constexpr uint32_t round_magnitude(uint32_t abs) {
  const int exp = static_cast<int>(abs >> 23);
  const uint32_t mant = abs & 0x7FFFFFu;
  const uint64_t m = exp != 0 ? (mant | 0x800000u) : mant;  // significand with its implicit bit
  const int e = exp != 0 ? exp - 127 : -126;                // unbiased exponent
  const int e_min = 1 - B;                                  // smallest normal exponent
  const int shift = (23 - M) + (e < e_min ? e_min - e : 0);
  if (shift >= 25) return 0;  // below half the smallest subnormal
  uint64_t q = m >> shift;
  const uint64_t rest = m & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (q & 1))) ++q;
  // q holds the implicit bit at 2^M for normals, so adding the exponent offset lands the carry
  // of a rounding overflow in the exponent field.
  if (e >= e_min) return static_cast<uint32_t>((static_cast<uint64_t>(e - e_min) << M) + q);
  return static_cast<uint32_t>(q);
}

// f32 -> an 8-bit format: NaN -> S.1111111 (the NaN of both formats), anything that rounds
// beyond the largest pattern kTop (an infinity included) -> kTop.
template <int M, int B, uint8_t kTop>
constexpr uint8_t f32_to_f8_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7Fu;
  const uint32_t r = round_magnitude<M, B>(abs);
  return sign | static_cast<uint8_t>(r < kTop ? r : kTop);
}

}  // namespace detail

constexpr float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    const float magnitude = static_cast<float>(mant) * 0x1p-24f;  // exact
    return sign ? -magnitude : magnitude;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

constexpr uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) {
    const uint16_t payload = static_cast<uint16_t>((abs >> 13) & 0x3FFu);
    return sign | 0x7C00u | (payload != 0 ? payload : 0x200u);
  }
  if (abs == 0x7F800000u) return sign | 0x7C00u;
  const uint32_t r = detail::round_magnitude<10, 15>(abs);
  return sign | static_cast<uint16_t>(r >= 0x7C00u ? 0x7C00u : r);
}

constexpr float bf16_bits_to_f32(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

constexpr uint16_t f32_to_bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
    const uint16_t top = static_cast<uint16_t>(x >> 16);
    return (top & 0x7Fu) != 0 ? top : static_cast<uint16_t>(top | 0x40u);
  }
  // Same exponent range as f32: rounding the low 16 bits away is the whole conversion, and a
  // carry out of the mantissa correctly reaches the exponent (up to infinity).
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

constexpr float f8e4m3_bits_to_f32(uint8_t v) {
  const uint32_t sign = static_cast<uint32_t>(v & 0x80u) << 24;
  const uint32_t exp = (v >> 3) & 0xFu;
  const uint32_t mant = v & 0x7u;
  if (exp == 15 && mant == 7) return std::bit_cast<float>(sign | 0x7FC00000u);
  if (exp == 0) {
    const float magnitude = static_cast<float>(mant) * 0x1p-9f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exp + 120) << 23) | (mant << 20));
}

// e4m3fn saturates at 448 (0x7E; 0x7F is NaN), infinity included, as torch 2.x does.
constexpr uint8_t f32_to_f8e4m3_bits(float f) { return detail::f32_to_f8_bits<3, 7, 0x7E>(f); }

constexpr float f8e5m2_bits_to_f32(uint8_t v) {
  return f16_bits_to_f32(static_cast<uint16_t>(v << 8));  // e5m2 is the top byte of an f16
}

// e5m2 overflows to infinity (0x7C) like any IEEE format.
constexpr uint8_t f32_to_f8e5m2_bits(float f) { return detail::f32_to_f8_bits<2, 15, 0x7C>(f); }

// Conversions of the storage types, for templates that treat every float alike.
constexpr float to_f32(f16_t v) { return f16_bits_to_f32(v.bits); }
constexpr float to_f32(bf16_t v) { return bf16_bits_to_f32(v.bits); }
constexpr float to_f32(f8e4m3_t v) { return f8e4m3_bits_to_f32(v.bits); }
constexpr float to_f32(f8e5m2_t v) { return f8e5m2_bits_to_f32(v.bits); }

}  // namespace h0::tensor
