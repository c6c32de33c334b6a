// Writing safetensors files with the same bytes the Python `safetensors` package writes for the
// same tensors: tensors laid out by descending dtype rank then name, a compact JSON header
// (`__metadata__` first, then each tensor as {"dtype","shape","data_offsets"}) padded with
// spaces to a multiple of 8 bytes. Files are written to a temporary name and renamed, so a
// failed write never leaves a truncated file behind.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace h0::io {

struct NamedTensor {
  std::string name;
  tensor::Tensor tensor;
};

// The header bytes (JSON + padding, without the 8-byte length) for `tensors`, which must
// already be in layout order (see layout_order).
std::string safetensors_header(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata);

// Sorts tensors into the layout order of the reference writer.
void layout_order(std::vector<NamedTensor>& tensors);

// Writes `tensors` to `path`. Throws InputError on a duplicate or reserved name, or if the
// file cannot be written.
void write_safetensors(const std::string& path, std::vector<NamedTensor> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace h0::io
