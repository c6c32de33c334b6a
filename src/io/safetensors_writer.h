// Writing safetensors files with the same bytes the Python `safetensors` package writes for the
// same tensors: tensors laid out by descending dtype rank then name, a compact JSON header
// (`__metadata__` first, then each tensor as {"dtype","shape","data_offsets"}) padded with
// spaces to a multiple of 8 bytes. Files are written to a temporary name and renamed, so a
// failed write never leaves a truncated file behind.
#pragma once

#include <functional>
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

// The same file written one tensor at a time, so that no more than the tensor being made is held
// in memory: the header is written first from `specs` (each a NamedTensor whose tensor is a view
// with no data: name, dtype and shape), then, in layout order, `produce(spec, write)` is called
// once per tensor and must pass exactly its nbytes() to `write`, in as many pieces as it likes.
// The same bytes as write_safetensors for the same tensors. Tensors for which `later(spec)` is
// true are produced after all the others (their bytes left as a hole, then written in place), for
// a tensor computed along with another that the layout puts after it (an fp8 weight's f32 scales,
// laid out first, come out of quantizing the weight).
using ByteSink = std::function<void(const void* data, size_t bytes)>;
void write_safetensors_streamed(
    const std::string& path, std::vector<NamedTensor> specs,
    const std::map<std::string, std::string>& metadata,
    const std::function<void(const NamedTensor&, const ByteSink&)>& produce,
    const std::function<bool(const NamedTensor&)>& later = nullptr);

}  // namespace h0::io
