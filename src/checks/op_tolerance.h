// The tolerance an op check applies to one output: the user's `tolerance:` if it sets rtol/atol
// or a preset, else one derived from the op's tolerance class, the output dtype and the length
// of the op's longest accumulation (an f32-accumulating backend may drift ~sqrt(K) ulps).
#pragma once

#include <nlohmann/json.hpp>

#include "compare/tolerance.h"
#include "ops/op.h"

namespace h0::checks {

// `user`: the merged tolerance mapping as JSON ({} if none): preset, rtol, atol and metric
// bounds. `golden_rms`: the RMS of the golden output, the scale a reduction's absolute error is
// measured against. Integer outputs compare exactly (quantized codes: within one step).
// Throws InputError for an unknown preset or bound (the caller adds the location).
compare::Tolerance op_tolerance(const ops::OpDef& op, tensor::DType output_dtype,
                                const ops::Cost& cost, const nlohmann::json& user,
                                double golden_rms);

}  // namespace h0::checks
