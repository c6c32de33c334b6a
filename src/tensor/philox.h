// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// counter-based generator behind every synthesized input. Draws are a pure function of
// (seed, stream, index), so any element can be computed alone, in any order, on any thread,
// and golden/tools/philox.py reproduces them bit for bit in numpy.
//
// Element i of (seed, stream): block b = i / 4, lane i % 4 of
//   philox4x32_10(counter = {b lo, b hi, stream lo, stream hi}, key = {seed lo, seed hi}).
// uniform: (word >> 8) * 2^-24, in [0, 1), exact in f32.
// normal: Box-Muller on the block's word pairs (w0, w1) -> elements 0, 1 and (w2, w3) -> 2, 3,
//   with u1 = (w + 0.5) * 2^-32 and log, cos, sin evaluated by fixed polynomials in f64 using
//   only + - * / sqrt, so the result does not depend on the platform's libm.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace h0::tensor {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The raw generator: 10 rounds, the key bumped by the Weyl constants between rounds.
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

class Philox {
 public:
  Philox(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}

  // The 32-bit word of element i.
  uint32_t word(uint64_t i) const;
  // Uniform in [0, 1) (24-bit resolution) of element i.
  float uniform(uint64_t i) const;
  // Standard normal of element i, in f64 (round to f32 for f32 draws).
  double normal(uint64_t i) const;

  // Bulk draws of elements [first, first + n).
  void fill_uniform(float* out, size_t n, uint64_t first = 0) const;
  void fill_normal(double* out, size_t n, uint64_t first = 0) const;
  void fill_normal(float* out, size_t n, uint64_t first = 0) const;

 private:
  PhiloxCounter block(uint64_t b) const;

  uint64_t seed_;
  uint64_t stream_;
};

// The deterministic math used by the normal transform; exposed for tests.
// log(x) for x in (0, 1], relative error ~1e-16.
double philox_log(double x);
// cos and sin of 2*pi*w/2^32.
void philox_cos_sin_turns(uint32_t w, double* c, double* s);

}  // namespace h0::tensor
