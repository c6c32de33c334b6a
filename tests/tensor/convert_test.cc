// Conversions against PyTorch (golden/foundation/conversions.safetensors, written by
// golden/tools/gen_foundation.py with torch 2.15) and exhaustive round trips.
#include "tensor/convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "io/safetensors_reader.h"
#include "tensor/float_bits.h"
#include "test_util.h"

namespace h0::tensor {
namespace {

io::SafetensorsFile& conversions() {
  static io::SafetensorsFile f =
      io::SafetensorsFile::open(test::golden_path("foundation/conversions.safetensors"));
  return f;
}

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }

TEST(Convert, EveryF16PatternSurvivesF32RoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(b));
    ASSERT_EQ(f32_to_f16_bits(f), b) << std::hex << "f16 0x" << b;
  }
}

TEST(Convert, EveryBf16PatternSurvivesF32RoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_bits_to_f32(static_cast<uint16_t>(b));
    ASSERT_EQ(f32_to_bf16_bits(f), b) << std::hex << "bf16 0x" << b;
  }
}

// Narrow -> f32 for every bit pattern, against torch. NaNs compare as NaN (torch's NaN payload
// bits depend on its code path; see float_bits.h).
template <typename Fn>
void expect_all_patterns(const char* golden, int patterns, Fn to_f32) {
  const Tensor expected = conversions().get(golden);
  ASSERT_EQ(expected.numel(), patterns);
  const float* e = expected.data_as<float>();
  for (int b = 0; b < patterns; ++b) {
    const float got = to_f32(b);
    if (std::isnan(e[b])) {
      ASSERT_TRUE(std::isnan(got)) << golden << " pattern 0x" << std::hex << b;
    } else {
      ASSERT_EQ(bits_of(got), bits_of(e[b])) << golden << " pattern 0x" << std::hex << b;
    }
  }
}

TEST(Convert, F16ToF32MatchesTorchForAllPatterns) {
  expect_all_patterns("f16_to_f32", 65536, [](int b) { return f16_bits_to_f32(uint16_t(b)); });
}
TEST(Convert, Bf16ToF32MatchesTorchForAllPatterns) {
  expect_all_patterns("bf16_to_f32", 65536, [](int b) { return bf16_bits_to_f32(uint16_t(b)); });
}
TEST(Convert, F8E4M3ToF32MatchesTorchForAllPatterns) {
  expect_all_patterns("f8_e4m3_to_f32", 256, [](int b) { return f8e4m3_bits_to_f32(uint8_t(b)); });
}
TEST(Convert, F8E5M2ToF32MatchesTorchForAllPatterns) {
  expect_all_patterns("f8_e5m2_to_f32", 256, [](int b) { return f8e5m2_bits_to_f32(uint8_t(b)); });
}

// f32 -> narrow over torch's vectors (rounding edges, ties, subnormals, overflow, random bits),
// through the bulk convert() so the dispatch table is covered too.
template <typename Bits>
void expect_f32_to(DType dtype, const char* golden, bool nan_keeps_sign) {
  const Tensor inputs = conversions().get("f32_inputs");
  const Tensor expected = conversions().get(golden);
  ASSERT_EQ(expected.dtype(), dtype);
  ASSERT_EQ(inputs.numel(), expected.numel());
  const Tensor got = inputs.to(dtype);
  const float* in = inputs.data_as<float>();
  const Bits* g = got.data_as<Bits>();
  const Bits* e = expected.data_as<Bits>();
  int64_t checked = 0;
  for (int64_t i = 0; i < inputs.numel(); ++i) {
    if (std::isnan(in[i])) {
      ASSERT_TRUE(std::isnan(got.at(i))) << golden << " input 0x" << std::hex << bits_of(in[i]);
      if (nan_keeps_sign) {
        ASSERT_EQ(g[i], e[i]) << golden << " NaN 0x" << std::hex << bits_of(in[i]);
      }
      continue;
    }
    ASSERT_EQ(g[i], e[i]) << golden << " input " << in[i] << " (0x" << std::hex << bits_of(in[i])
                          << "): got 0x" << unsigned(g[i]) << ", torch 0x" << unsigned(e[i]);
    ++checked;
  }
  EXPECT_GT(checked, 50000);
}

TEST(Convert, F32ToF16MatchesTorch) { expect_f32_to<uint16_t>(DType::kF16, "f32_to_f16", false); }
TEST(Convert, F32ToBf16MatchesTorch) {
  expect_f32_to<uint16_t>(DType::kBF16, "f32_to_bf16", false);
}
TEST(Convert, F32ToF8E4M3MatchesTorch) {
  expect_f32_to<uint8_t>(DType::kF8E4M3, "f32_to_f8_e4m3", true);
}
TEST(Convert, F32ToF8E5M2MatchesTorch) {
  expect_f32_to<uint8_t>(DType::kF8E5M2, "f32_to_f8_e5m2", true);
}

TEST(Convert, F64ToF32MatchesTorch) {
  const Tensor inputs = conversions().get("f64_inputs");
  const Tensor expected = conversions().get("f64_to_f32");
  const Tensor got = inputs.to(DType::kF32);
  for (int64_t i = 0; i < inputs.numel(); ++i) {
    const float e = expected.data_as<float>()[i], g = got.data_as<float>()[i];
    if (std::isnan(e)) {
      ASSERT_TRUE(std::isnan(g));
    } else {
      ASSERT_EQ(bits_of(g), bits_of(e)) << "input " << inputs.data_as<double>()[i];
    }
  }
}

// The edges spelled out, so a failure reads as the rule that broke.
TEST(Convert, NamedEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFF);    // f16 max
  EXPECT_EQ(f32_to_f16_bits(65519.996f), 0x7BFF);  // below the overflow midpoint
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);    // the midpoint ties to even: infinity
  EXPECT_EQ(f32_to_f16_bits(0x1p-25f), 0x0000);    // half the smallest subnormal: ties to 0
  EXPECT_EQ(f32_to_f16_bits(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16_bits(1.00390625f), 0x3F80);  // 1 + 2^-8: tie to even (down)
  EXPECT_EQ(f32_to_bf16_bits(1.01171875f), 0x3F82);  // 1 + 3*2^-8: tie to even (up)
  EXPECT_EQ(f32_to_bf16_bits(3.4e38f), 0x7F80);      // rounds past bf16 max: infinity
  EXPECT_EQ(f32_to_f8e4m3_bits(448.0f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3_bits(470.0f), 0x7E);  // torch saturates, never NaN
  EXPECT_EQ(f32_to_f8e4m3_bits(1e30f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3_bits(inf), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3_bits(-inf), 0xFE);
  EXPECT_EQ(f32_to_f8e4m3_bits(0x1p-9f), 0x01);   // smallest subnormal
  EXPECT_EQ(f32_to_f8e4m3_bits(0x1p-10f), 0x00);  // half of it ties to 0
  EXPECT_EQ(f32_to_f8e5m2_bits(57344.0f), 0x7B);  // e5m2 max
  EXPECT_EQ(f32_to_f8e5m2_bits(61440.0f), 0x7C);  // midpoint to infinity ties to even: inf
  EXPECT_EQ(f32_to_f8e5m2_bits(inf), 0x7C);
  EXPECT_EQ(f32_to_f8e5m2_bits(std::nanf("")), 0x7F);
  EXPECT_EQ(f32_to_f8e4m3_bits(-std::nanf("")), 0xFF);
  EXPECT_TRUE(std::isnan(f8e4m3_bits_to_f32(0x7F)));
  EXPECT_EQ(f8e4m3_bits_to_f32(0x7E), 448.0f);
  EXPECT_EQ(f8e4m3_bits_to_f32(0x80), -0.0f);
  EXPECT_TRUE(std::signbit(f8e4m3_bits_to_f32(0x80)));
}

TEST(Convert, NaNWhosePayloadWouldVanishStaysNaN) {
  // 0x7F800001 keeps no payload bits in f16 or bf16; the quiet bit makes it a NaN still.
  const float snan = std::bit_cast<float>(0x7F800001u);
  EXPECT_EQ(f32_to_f16_bits(snan), 0x7E00);
  EXPECT_EQ(f32_to_bf16_bits(snan), 0x7FC0);
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0xFFC00000u)), 0xFFC0);  // sign kept
}

TEST(Convert, FloatToIntTruncatesSaturatesAndZeroesNaN) {
  const float in[] = {2.9f, -2.9f, 1e10f, -1e10f, std::nanf(""), 127.5f, -128.5f, 0.0f};
  int32_t i32[8];
  convert(in, DType::kF32, i32, DType::kI32, 8);
  EXPECT_EQ(i32[0], 2);
  EXPECT_EQ(i32[1], -2);
  EXPECT_EQ(i32[2], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(i32[3], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i32[4], 0);
  int8_t i8[8];
  convert(in, DType::kF32, i8, DType::kI8, 8);
  EXPECT_EQ(i8[5], 127);
  EXPECT_EQ(i8[6], -128);
  uint8_t b[8];
  convert(in, DType::kF32, b, DType::kBool, 8);
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[4], 1);  // NaN is nonzero
  EXPECT_EQ(b[7], 0);
}

TEST(Convert, BoolReadsAnyNonzeroByteAsTrue) {
  const uint8_t in[] = {0, 1, 2, 255};
  float out[4];
  convert(in, DType::kBool, out, DType::kF32, 4);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_EQ(out[3], 1.0f);
}

TEST(Convert, IntToFloatRoundsToNearest) {
  const int64_t in[] = {16777217, -3, int64_t{1} << 62};
  float out[3];
  convert(in, DType::kI64, out, DType::kF32, 3);
  EXPECT_EQ(out[0], 16777216.0f);  // 2^24 + 1 ties to even
  EXPECT_EQ(out[1], -3.0f);
  EXPECT_EQ(out[2], 0x1p62f);
  uint16_t bf[1];
  convert(in + 1, DType::kI64, bf, DType::kBF16, 1);
  EXPECT_EQ(bf16_bits_to_f32(bf[0]), -3.0f);
}

}  // namespace
}  // namespace h0::tensor
