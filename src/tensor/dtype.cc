#include "tensor/dtype.h"

#include <array>

#include "base/check.h"

namespace h0::tensor {
namespace {

// safetensors_rank follows the order of the safetensors crate's Dtype enum (BOOL < U8 < I8 <
// F8_E5M2 < F8_E4M3 < ... < F16 < BF16 < I32 < F32 < F64 < I64); its writer lays tensors out
// by descending rank, then name, and so does ours, so the bytes match.
constexpr std::array<DTypeInfo, kNumDTypes> kInfos = {{
    {DType::kF64, "f64", "F64", 8, true, 52, 0x1p-52, 17},
    {DType::kF32, "f32", "F32", 4, true, 23, 0x1p-23, 16},
    {DType::kF16, "f16", "F16", 2, true, 10, 0x1p-10, 11},
    {DType::kBF16, "bf16", "BF16", 2, true, 7, 0x1p-7, 12},
    {DType::kF8E4M3, "f8_e4m3", "F8_E4M3", 1, true, 3, 0x1p-3, 7},
    {DType::kF8E5M2, "f8_e5m2", "F8_E5M2", 1, true, 2, 0x1p-2, 6},
    {DType::kI64, "i64", "I64", 8, false, 0, 0, 18},
    {DType::kI32, "i32", "I32", 4, false, 0, 0, 14},
    {DType::kI8, "i8", "I8", 1, false, 0, 0, 3},
    {DType::kU8, "u8", "U8", 1, false, 0, 0, 2},
    {DType::kBool, "bool", "BOOL", 1, false, 0, 0, 1},
}};

struct Alias {
  std::string_view name;
  DType dtype;
};
constexpr Alias kAliases[] = {
    {"float64", DType::kF64},
    {"double", DType::kF64},
    {"fp64", DType::kF64},
    {"float32", DType::kF32},
    {"float", DType::kF32},
    {"fp32", DType::kF32},
    {"float16", DType::kF16},
    {"half", DType::kF16},
    {"fp16", DType::kF16},
    {"bfloat16", DType::kBF16},
    {"float8_e4m3fn", DType::kF8E4M3},
    {"fp8_e4m3", DType::kF8E4M3},
    {"f8_e4m3fn", DType::kF8E4M3},
    {"float8_e5m2", DType::kF8E5M2},
    {"fp8_e5m2", DType::kF8E5M2},
    {"int64", DType::kI64},
    {"int32", DType::kI32},
    {"int8", DType::kI8},
    {"uint8", DType::kU8},
};

}  // namespace

const DTypeInfo& info(DType dtype) {
  auto index = static_cast<size_t>(dtype);
  H0_CHECK(index < kInfos.size()) << "bad dtype value " << index;
  return kInfos[index];
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& row : kInfos) {
    if (name == row.name) return row.dtype;
  }
  for (const auto& alias : kAliases) {
    if (name == alias.name) return alias.dtype;
  }
  return std::nullopt;
}

std::optional<DType> parse_safetensors_dtype(std::string_view name) {
  for (const auto& row : kInfos) {
    if (name == row.safetensors_name) return row.dtype;
  }
  return std::nullopt;
}

std::string dtype_names() {
  std::string out;
  for (const auto& row : kInfos) {
    if (!out.empty()) out += ", ";
    out += row.name;
  }
  return out;
}

int min_normal_exponent(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return -1022;
    case DType::kF32:
    case DType::kBF16:
      return -126;
    case DType::kF16:
    case DType::kF8E5M2:
      return -14;
    case DType::kF8E4M3:
      return -6;
    default:
      return 0;
  }
}

}  // namespace h0::tensor
