// Philox4x32-10 against the Random123 known-answer vectors, and the uniform/normal draws against
// golden/tools/philox.py (numpy), bit for bit.
#include "tensor/philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/safetensors_reader.h"
#include "test_util.h"

namespace h0::tensor {
namespace {

// Random123's kat_vectors: counter, key -> output.
TEST(Philox, Random123KnownAnswers) {
  struct Kat {
    PhiloxCounter ctr;
    PhiloxKey key;
    PhiloxCounter out;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const auto& k : kats) EXPECT_EQ(philox4x32_10(k.ctr, k.key), k.out);
}

struct Case {
  uint64_t seed, stream;
};
const Case kCases[] = {{0, 0}, {7, 1}, {78187493520ull, 41490932481ull}, {~0ull, ~0ull}};

const io::SafetensorsFile& golden() {
  static io::SafetensorsFile f =
      io::SafetensorsFile::open(test::golden_path("foundation/philox.safetensors"));
  return f;
}

std::string key(const Case& c, const char* what) {
  return "philox." + std::to_string(c.seed) + "." + std::to_string(c.stream) + "." + what;
}

TEST(Philox, WordsMatchNumpyReference) {
  for (const auto& c : kCases) {
    const Tensor words = golden().get(key(c, "words"));
    const Philox rng(c.seed, c.stream);
    for (int64_t i = 0; i < words.numel(); ++i) {
      ASSERT_EQ(rng.word(static_cast<uint64_t>(i)),
                static_cast<uint32_t>(words.data_as<int64_t>()[i]))
          << key(c, "words") << "[" << i << "]";
    }
  }
}

TEST(Philox, UniformMatchesNumpyReferenceBitForBit) {
  for (const auto& c : kCases) {
    const Tensor expected = golden().get(key(c, "uniform"));
    std::vector<float> got(static_cast<size_t>(expected.numel()));
    Philox(c.seed, c.stream).fill_uniform(got.data(), got.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], expected.data_as<float>()[i]) << key(c, "uniform") << "[" << i << "]";
      ASSERT_EQ(Philox(c.seed, c.stream).uniform(i), got[i]);
    }
  }
}

TEST(Philox, NormalMatchesNumpyReferenceBitForBit) {
  for (const auto& c : kCases) {
    const Tensor e64 = golden().get(key(c, "normal_f64"));
    const Tensor e32 = golden().get(key(c, "normal_f32"));
    std::vector<double> got64(static_cast<size_t>(e64.numel()));
    std::vector<float> got32(got64.size());
    const Philox rng(c.seed, c.stream);
    rng.fill_normal(got64.data(), got64.size());
    rng.fill_normal(got32.data(), got32.size());
    for (size_t i = 0; i < got64.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint64_t>(got64[i]),
                std::bit_cast<uint64_t>(e64.data_as<double>()[i]))
          << key(c, "normal_f64") << "[" << i << "]: " << got64[i] << " vs "
          << e64.data_as<double>()[i];
      ASSERT_EQ(got32[i], e32.data_as<float>()[i]) << key(c, "normal_f32") << "[" << i << "]";
    }
  }
}

TEST(Philox, DrawsStartingMidBlockMatch) {
  const Philox rng(7, 1);
  const Tensor u = golden().get("philox.7.1.uniform_offset");
  const Tensor n = golden().get("philox.7.1.normal_offset");
  std::vector<float> got_u(37);
  std::vector<double> got_n(37);
  rng.fill_uniform(got_u.data(), 37, 1001);
  rng.fill_normal(got_n.data(), 37, 1001);
  for (size_t i = 0; i < 37; ++i) {
    EXPECT_EQ(got_u[i], u.data_as<float>()[i]) << i;
    EXPECT_EQ(got_n[i], n.data_as<double>()[i]) << i;
    EXPECT_EQ(rng.normal(1001 + i), got_n[i]) << i;
  }
}

TEST(Philox, DeterministicMathIsAccurate) {
  for (double x = 1e-300; x < 1.0; x *= 1.37) {
    EXPECT_NEAR(philox_log(x), std::log(x), 4e-16 * std::fabs(std::log(x)) + 1e-300) << x;
  }
  EXPECT_EQ(philox_log(1.0), 0.0);
  for (uint64_t w = 0; w < (uint64_t{1} << 32); w += 7919 * 4099) {
    double c, s;
    philox_cos_sin_turns(static_cast<uint32_t>(w), &c, &s);
    const double angle = 2 * M_PI * static_cast<double>(w) * 0x1p-32;
    EXPECT_NEAR(c, std::cos(angle), 2e-15) << w;
    EXPECT_NEAR(s, std::sin(angle), 2e-15) << w;
  }
}

TEST(Philox, NormalsLookNormalAndStreamsDiffer) {
  const size_t n = 200000;
  std::vector<double> a(n), b(n);
  Philox(3, 0).fill_normal(a.data(), n);
  Philox(3, 1).fill_normal(b.data(), n);
  double mean = 0, var = 0, cross = 0;
  for (size_t i = 0; i < n; ++i) mean += a[i];
  mean /= n;
  for (size_t i = 0; i < n; ++i) var += (a[i] - mean) * (a[i] - mean), cross += a[i] * b[i];
  var /= n;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
  EXPECT_NEAR(cross / n, 0.0, 0.01);  // independent streams are uncorrelated
  size_t beyond3 = 0;
  for (double v : a) beyond3 += std::fabs(v) > 3;
  EXPECT_NEAR(static_cast<double>(beyond3) / n, 0.0027, 0.0006);
}

}  // namespace
}  // namespace h0::tensor
