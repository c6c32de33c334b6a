// Deterministic operand synthesis: every element is a pure function of (case seed, operand
// index, element index) through Philox (tensor/philox.h), so inputs are identical on every
// platform and can be regenerated anywhere.
//
// Distribution language (JSON/YAML, one key):
//   {normal: {mean: 0, std: 1}}      mean + std * normal(i), in f64, rounded to f32, then to dtype
//   {uniform: {low: 0, high: 1}}     low + (high - low) * uniform(i), same rounding
//   {ints: {low: 0, high: 100}}      low + floor(word(i) * (high - low) / 2^32): integers in
//                                    [low, high), stored in the operand's dtype (float operands
//                                    get integral values: ties for argmax / top-k)
//   {arange: {start: 0, step: 1, mod: 0}}  start + i * step (flat index i), modulo `mod` if > 0
//   {permutation: {}}                a permutation of 0..numel-1: indices sorted by word(i),
//                                    ties by index (a shuffled block table)
//   {topk_ids: {experts: E}}         for shape [T, k]: row t holds the k indices of [0, E) with
//                                    the smallest words among word(t*E .. t*E+E-1), in that
//                                    order (distinct expert ids per token)
//   {constant: {value: 1.0}}
// Stream = operand index; seed = the case's seed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "tensor/tensor.h"

namespace h0::checks {

// Fills a tensor of `dtype` and `shape` from `dist` (see above). Throws InputError("inputs",
// ...) for an unknown distribution or bad parameters.
tensor::Tensor synthesize(const nlohmann::json& dist, tensor::DType dtype,
                          const tensor::Shape& shape, uint64_t seed, uint64_t stream);

// Checks a distribution's form without drawing; returns an error message or "".
std::string check_distribution(const nlohmann::json& dist);

}  // namespace h0::checks
