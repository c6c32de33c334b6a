#include "tensor/philox.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace h0::tensor {
namespace {

constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

constexpr double kSqrtHalf = 0x1.6a09e667f3bcdp-1;
constexpr double kLn2 = 0x1.62e42fefa39efp-1;
constexpr double kHalfPi = 0x1.921fb54442d18p+0;

// Polynomial coefficients, computed by the same operation sequence as golden/tools/philox.py.
struct Coefficients {
  double log[13];  // 1 / (2k + 1)
  double sin[9];   // (-1)^k / (2k + 1)!
  double cos[9];   // (-1)^k / (2k)!
  Coefficients() {
    for (int k = 0; k <= 12; ++k) log[k] = 1.0 / static_cast<double>(2 * k + 1);
    double fact[18];
    fact[0] = 1.0;
    for (int n = 1; n <= 17; ++n) fact[n] = fact[n - 1] * static_cast<double>(n);
    for (int k = 0; k <= 8; ++k) {
      const double sign = k % 2 == 0 ? 1.0 : -1.0;
      sin[k] = sign / fact[2 * k + 1];
      cos[k] = sign / fact[2 * k];
    }
  }
};

const Coefficients& coefficients() {
  static const Coefficients c;
  return c;
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

double philox_log(double x) {
  const auto& c = coefficients();
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  if (m < kSqrtHalf) {
    m = m * 2.0;
    e = e - 1;
  }
  // log(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), |s| <= 0.172.
  const double s = (m - 1.0) / (m + 1.0);
  const double z = s * s;
  double p = c.log[12];
  for (int k = 11; k >= 0; --k) p = p * z + c.log[k];
  const double t1 = static_cast<double>(e) * kLn2;
  const double t2 = (2.0 * s) * p;
  return t1 + t2;
}

void philox_cos_sin_turns(uint32_t w, double* cos_out, double* sin_out) {
  const auto& c = coefficients();
  const uint32_t quadrant = w >> 30;
  double f = static_cast<double>(w & 0x3FFFFFFFu) * 0x1p-30;  // exact, in [0, 1)
  const bool flip = f > 0.5;
  if (flip) f = 1.0 - f;  // exact; keeps the Taylor argument within [0, pi/4]
  const double t = f * kHalfPi;
  const double z = t * t;
  double ps = c.sin[8];
  for (int k = 7; k >= 0; --k) ps = ps * z + c.sin[k];
  double pc = c.cos[8];
  for (int k = 7; k >= 0; --k) pc = pc * z + c.cos[k];
  double sin_t = t * ps, cos_t = pc;
  if (flip) std::swap(sin_t, cos_t);
  switch (quadrant) {
    case 0:
      *cos_out = cos_t;
      *sin_out = sin_t;
      break;
    case 1:
      *cos_out = -sin_t;
      *sin_out = cos_t;
      break;
    case 2:
      *cos_out = -cos_t;
      *sin_out = -sin_t;
      break;
    default:
      *cos_out = sin_t;
      *sin_out = -cos_t;
      break;
  }
}

namespace {

// Two standard normals from two words: radius from the first, angle from the second.
void box_muller(uint32_t w_radius, uint32_t w_angle, double* n0, double* n1) {
  const double u1 = (static_cast<double>(w_radius) + 0.5) * 0x1p-32;  // in (0, 1)
  const double r = std::sqrt(-2.0 * philox_log(u1));
  double c, s;
  philox_cos_sin_turns(w_angle, &c, &s);
  *n0 = r * c;
  *n1 = r * s;
}

}  // namespace

PhiloxCounter Philox::block(uint64_t b) const {
  return philox4x32_10({static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                        static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
                       {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)});
}

uint32_t Philox::word(uint64_t i) const { return block(i / 4)[i % 4]; }

float Philox::uniform(uint64_t i) const { return static_cast<float>(word(i) >> 8) * 0x1p-24f; }

double Philox::normal(uint64_t i) const {
  double out;
  fill_normal(&out, 1, i);
  return out;
}

void Philox::fill_uniform(float* out, size_t n, uint64_t first) const {
  for (size_t j = 0; j < n;) {
    const uint64_t i = first + j;
    const PhiloxCounter w = block(i / 4);
    for (unsigned lane = i % 4; lane < 4 && j < n; ++lane, ++j) {
      out[j] = static_cast<float>(w[lane] >> 8) * 0x1p-24f;
    }
  }
}

void Philox::fill_normal(double* out, size_t n, uint64_t first) const {
  for (size_t j = 0; j < n;) {
    const uint64_t i = first + j;
    const PhiloxCounter w = block(i / 4);
    double values[4];
    box_muller(w[0], w[1], &values[0], &values[1]);
    box_muller(w[2], w[3], &values[2], &values[3]);
    for (unsigned lane = i % 4; lane < 4 && j < n; ++lane, ++j) out[j] = values[lane];
  }
}

void Philox::fill_normal(float* out, size_t n, uint64_t first) const {
  constexpr size_t kBatch = 256;
  double buffer[kBatch];
  for (size_t j = 0; j < n; j += kBatch) {
    const size_t m = std::min(kBatch, n - j);
    fill_normal(buffer, m, first + j);
    for (size_t k = 0; k < m; ++k) out[j + k] = static_cast<float>(buffer[k]);
  }
}

}  // namespace h0::tensor
