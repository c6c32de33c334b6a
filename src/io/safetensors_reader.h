// Reading safetensors files (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, optional
// "__metadata__": {str: str}}, then the data section. The file is memory-mapped: opening reads
// only the header (cost independent of the file size), tensors are zero-copy views, and slice
// reads touch only the bytes they return.
//
// Validation is strict, as the format specifies; each error names the file and the tensor:
// header length beyond the file, header not JSON, unknown dtype, offsets out of range,
// overlapping or leaving holes, shape x dtype size != byte length, duplicate names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "tensor/tensor.h"

namespace h0::io {

// One tensor of a safetensors header. Offsets are relative to the start of the data section.
struct TensorEntry {
  std::string name;
  tensor::DType dtype = tensor::DType::kF32;
  tensor::Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;

  uint64_t nbytes() const { return end - begin; }
};

// Largest header accepted, as the reference implementation (100 MB).
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

class SafetensorsFile {
 public:
  // Maps and validates `path`. Throws InputError naming the file and the problem.
  static SafetensorsFile open(const std::string& path);
  // Validates an in-memory image of a file; `label` names it in errors. `keepalive` owns `data`.
  static SafetensorsFile parse(const std::byte* data, size_t size, std::string label,
                               std::shared_ptr<const void> keepalive);

  const std::string& path() const { return label_; }
  // Tensors in data order (ascending offsets).
  const std::vector<TensorEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  size_t file_size() const { return size_; }
  size_t header_bytes() const { return data_offset_ - 8; }
  // Returns nullptr if the tensor is absent. O(log n).
  const TensorEntry* find(std::string_view name) const;

  // The whole tensor as a zero-copy view (an aligned copy if the file's data is misaligned).
  // Throws InputError if absent.
  tensor::Tensor get(std::string_view name) const;
  // Indices [begin, end) of dimension `axis`. Along dim 0 this is a zero-copy view; along
  // another axis an owned copy that reads only the selected bytes (for a 2-D weight: a row
  // range or a column range). Throws InputError for an absent tensor or a bad range.
  tensor::Tensor slice(std::string_view name, int axis, int64_t begin, int64_t end) const;
  // Drops the process's resident pages of a tensor's bytes when the file is memory-mapped
  // (MappedFile::release), after a caller has copied it out; no-op for an in-memory image.
  void release(std::string_view name) const;
  // The same for any bytes of the file's data: [p, p + bytes) if it lies in this file's map.
  // Returns whether it does.
  bool release_range(const void* p, size_t bytes) const;
  // The raw bytes of a tensor (for hashing). Zero-copy.
  const std::byte* tensor_bytes(const TensorEntry& entry) const {
    return data_ + data_offset_ + entry.begin;
  }

 private:
  const TensorEntry& require(std::string_view name) const;

  std::string label_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t data_offset_ = 0;
  std::shared_ptr<const void> keepalive_;
  std::shared_ptr<const base::MappedFile> mapped_;  // the file's map when opened from a file
  std::vector<TensorEntry> entries_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace h0::io
