// The element types of DESIGN.md. Values equal hb_dtype's in harness_backend.h, so a DType
// crosses the plugin ABI by a cast. Names reach the store and never change once released.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace h0::tensor {

enum class DType : int32_t {
  kF64 = 0,
  kF32 = 1,
  kF16 = 2,
  kBF16 = 3,
  kF8E4M3 = 4,  // e4m3fn: no infinities, NaN = S.1111.111, max 448
  kF8E5M2 = 5,  // IEEE-like: infinities, max 57344
  kI64 = 6,
  kI32 = 7,
  kI8 = 8,
  kU8 = 9,
  kBool = 10,
};

inline constexpr int kNumDTypes = 11;

// Facts about one dtype; one row per dtype in dtype.cc.
struct DTypeInfo {
  DType dtype;
  const char* name;              // harness name: "f32", "bf16", "f8_e4m3", ...
  const char* safetensors_name;  // "F32", "BF16", "F8_E4M3", ...
  size_t size;                   // bytes per element
  bool is_float;
  int mantissa_bits;     // explicit mantissa bits of float types; 0 otherwise
  double epsilon;        // 2^-mantissa_bits for floats; 0 otherwise
  int safetensors_rank;  // the safetensors crate's Dtype order; its files sort by it
};

const DTypeInfo& info(DType dtype);
inline size_t dtype_size(DType dtype) { return info(dtype).size; }
inline const char* dtype_name(DType dtype) { return info(dtype).name; }
inline bool is_float(DType dtype) { return info(dtype).is_float; }
// An 8-bit float (an fp8 checkpoint's weights).
inline bool is_fp8(DType dtype) { return dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2; }
// The exponent of a float dtype's smallest normal value (f32 and bf16 -126, f16 -14, f8_e4m3
// -6, f64 -1022): below it the ULP stays 2^(that - mantissa_bits). 0 for other dtypes.
int min_normal_exponent(DType dtype);

// Parses a harness name ("bf16") or a common alias ("bfloat16", "float32", "fp8_e4m3").
std::optional<DType> parse_dtype(std::string_view name);
// Parses a safetensors dtype string ("BF16"). Only the dtypes above are accepted.
std::optional<DType> parse_safetensors_dtype(std::string_view name);

// The list of harness names, for error messages: "f64, f32, f16, ...".
std::string dtype_names();

}  // namespace h0::tensor
