// Running one catalogue op on a backend, with the fallback of DESIGN.md: natively when the
// backend supports it at the call's dtype; else, if allowed, through a decomposition into ops
// it does support (decompositions.cc); else, if allowed, the host reference kernel with copies.
// Every call reports the route it took, so a result can say which ops fell back and how.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "ops/op.h"

namespace h0::backend {

enum class FallbackMode {
  kNone,       // unsupported -> not run
  kDecompose,  // may decompose into natively supported ops
  kHost,       // may decompose, else run the host reference with copies
};
// "none", "decompose", "host"; parse returns false for anything else.
const char* fallback_name(FallbackMode mode);
bool parse_fallback(const std::string& text, FallbackMode* mode);

enum class Route { kNative, kDecomposed, kHost, kUnsupported };
// "native", "decomposed", "host", "unsupported" (reach the store; never renamed).
const char* route_name(Route route);

struct Outcome {
  Route route = Route::kUnsupported;
  std::string detail;  // e.g. "swiglu -> silu, mul"; why unsupported
};

// The dtype a backend's supports() is asked about for a call: the first float input's dtype,
// else the first float output's (dequantize).
tensor::DType call_dtype(const ops::OpDef& op, const std::vector<ops::TensorDesc>& inputs,
                         const std::vector<ops::TensorDesc>& outputs);

// How a call would run, without running it.
Outcome plan(const Backend& backend, const ops::OpDef& op, tensor::DType dtype, FallbackMode mode);

// Runs the op on device tensors (outputs preallocated with the inferred descs; attrs
// validated). Returns the route; kUnsupported means nothing ran. Throws BackendError if the
// backend fails.
Outcome execute(Backend& backend, const ops::OpDef& op,
                const std::vector<const DeviceTensor*>& inputs,
                const std::vector<DeviceTensor*>& outputs, const ops::Json& attrs,
                FallbackMode mode);

// A decomposition of one op into others (decompositions.cc). `needs` must all be native at the
// call's dtype for it to apply.
struct Decomposition {
  const char* op;
  std::vector<const char*> needs;
  void (*run)(Backend& backend, const std::vector<const DeviceTensor*>& inputs,
              const std::vector<DeviceTensor*>& outputs, const ops::Json& attrs);
};
const std::vector<Decomposition>& decompositions();

}  // namespace h0::backend
