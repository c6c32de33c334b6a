#include "checks/input_synth.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "tensor/convert.h"
#include "tensor/philox.h"

namespace h0::checks {
namespace {

using nlohmann::json;
using tensor::DType;
using tensor::Tensor;

double param(const json& p, const char* key, double fallback) {
  return p.contains(key) ? p.at(key).get<double>() : fallback;
}

// Values [first, first + n) of a normal or uniform draw, each rounded to f32 (held as f64):
// every value depends on its index only, so a draw can be made in pieces.
void draw_real(const std::string& kind, const json& p, const tensor::Philox& rng, int64_t first,
               int64_t n, double* v) {
  if (kind == "normal") {
    const double mean = param(p, "mean", 0), std = param(p, "std", 1);
    rng.fill_normal(v, static_cast<size_t>(n), static_cast<uint64_t>(first));
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(mean + std * v[i]);
  } else {
    const double low = param(p, "low", 0), high = param(p, "high", 1);
    for (int64_t i = 0; i < n; ++i) {
      v[i] = static_cast<float>(
          low + (high - low) * static_cast<double>(rng.uniform(static_cast<uint64_t>(first + i))));
    }
  }
}

// Fills an f64 buffer of n values, then rounds once per the rules of the header.
std::vector<double> draw(const std::string& kind, const json& p, const tensor::Shape& shape,
                         int64_t n, const tensor::Philox& rng) {
  std::vector<double> v(static_cast<size_t>(n));
  if (kind == "normal" || kind == "uniform") {
    draw_real(kind, p, rng, 0, n, v.data());
  } else if (kind == "ints") {
    const int64_t low = static_cast<int64_t>(param(p, "low", 0)),
                  high = static_cast<int64_t>(param(p, "high", 2));
    const uint64_t span = static_cast<uint64_t>(high - low);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t w = rng.word(static_cast<uint64_t>(i));
      v[static_cast<size_t>(i)] = static_cast<double>(low + static_cast<int64_t>((w * span) >> 32));
    }
  } else if (kind == "arange") {
    const double start = param(p, "start", 0), step = param(p, "step", 1), mod = param(p, "mod", 0);
    for (int64_t i = 0; i < n; ++i) {
      const double x = start + static_cast<double>(i) * step;
      v[static_cast<size_t>(i)] = mod > 0 ? std::fmod(x, mod) : x;
    }
  } else if (kind == "permutation") {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      return rng.word(static_cast<uint64_t>(a)) < rng.word(static_cast<uint64_t>(b));
    });
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = static_cast<double>(idx[static_cast<size_t>(i)]);
  } else if (kind == "topk_ids") {
    const int64_t experts = static_cast<int64_t>(param(p, "experts", 0));
    const int64_t k = shape.empty() ? 1 : shape.back();
    if (k > experts)
      throw InputError("inputs", "topk_ids: k = " + std::to_string(k) +
                                     " exceeds experts = " + std::to_string(experts));
    const int64_t rows = k == 0 ? 0 : n / k;
    for (int64_t t = 0; t < rows; ++t) {
      std::vector<int64_t> e(static_cast<size_t>(experts));
      std::iota(e.begin(), e.end(), 0);
      std::stable_sort(e.begin(), e.end(), [&](int64_t a, int64_t b) {
        return rng.word(static_cast<uint64_t>(t * experts + a)) <
               rng.word(static_cast<uint64_t>(t * experts + b));
      });
      for (int64_t j = 0; j < k; ++j)
        v[static_cast<size_t>(t * k + j)] = static_cast<double>(e[static_cast<size_t>(j)]);
    }
  } else if (kind == "constant") {
    std::fill(v.begin(), v.end(), static_cast<double>(static_cast<float>(param(p, "value", 0))));
  }
  return v;
}

}  // namespace

std::string check_distribution(const json& dist) {
  static const char* kKinds[] = {"normal",      "uniform",  "ints",    "arange",
                                 "permutation", "topk_ids", "constant"};
  if (!dist.is_object() || dist.size() != 1) {
    return "a distribution is a mapping with one key: normal, uniform, ints, arange, permutation, "
           "topk_ids or constant";
  }
  const std::string kind = dist.begin().key();
  if (std::find_if(std::begin(kKinds), std::end(kKinds),
                   [&](const char* k) { return kind == k; }) == std::end(kKinds)) {
    return "unknown distribution '" + kind +
           "' (expected normal, uniform, ints, arange, permutation, topk_ids or constant)";
  }
  const json& p = dist.begin().value();
  if (!p.is_object() && !p.is_null()) return "the parameters of '" + kind + "' must be a mapping";
  if (p.is_object()) {
    for (const auto& [key, value] : p.items()) {
      if (!value.is_number()) return "parameter '" + key + "' of '" + kind + "' must be a number";
    }
  }
  if (kind == "ints" && param(p, "high", 2) <= param(p, "low", 0)) return "ints needs high > low";
  if (kind == "uniform" && param(p, "high", 1) < param(p, "low", 0))
    return "uniform needs high >= low";
  if (kind == "topk_ids" && param(p, "experts", 0) <= 0) return "topk_ids needs experts > 0";
  return "";
}

Tensor synthesize(const json& dist, DType dtype, const tensor::Shape& shape, uint64_t seed,
                  uint64_t stream) {
  if (const std::string err = check_distribution(dist); !err.empty())
    throw InputError("inputs", err);
  const int64_t n = tensor::numel(shape);
  const tensor::Philox rng(seed, stream);
  const json params = dist.begin().value().is_null() ? json::object() : dist.begin().value();
  const std::string kind = dist.begin().key();
  if (tensor::is_float(dtype) && (kind == "normal" || kind == "uniform")) {
    // Drawn in pieces straight into the tensor: draw()'s values, without its n-sized f64 copies
    // (a vocabulary-wide table of a real model's op case is 128M values).
    constexpr int64_t kPiece = int64_t{1} << 20;
    Tensor out = Tensor::empty(dtype, shape);
    const size_t size = tensor::dtype_size(dtype);
    std::vector<double> piece(static_cast<size_t>(std::min(n, kPiece)));
    std::vector<float> values(piece.size());
    for (int64_t first = 0; first < n; first += kPiece) {
      const int64_t m = std::min(kPiece, n - first);
      draw_real(kind, params, rng, first, m, piece.data());
      // f64 (already f32 values) -> f32 exactly -> the dtype once, as below.
      tensor::convert(piece.data(), DType::kF64, values.data(), DType::kF32,
                      static_cast<size_t>(m));
      tensor::convert(
          values.data(), DType::kF32,
          static_cast<std::byte*>(out.mutable_data()) + static_cast<size_t>(first) * size, dtype,
          static_cast<size_t>(m));
    }
    return out;
  }
  const std::vector<double> values = draw(kind, params, shape, n, rng);
  // f64 values -> f32 already (normal/uniform) -> the dtype once; integers are exact.
  Tensor f64 = Tensor::copy_of(DType::kF64, shape, values.data());
  return tensor::is_float(dtype) ? f64.to(DType::kF32).to(dtype) : f64.to(dtype);
}

}  // namespace h0::checks
