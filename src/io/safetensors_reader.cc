#include "io/safetensors_reader.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"
#include "base/json_depth.h"
#include "base/mapped_file.h"

namespace h0::io {
namespace {

using nlohmann::json;
using tensor::DType;

std::string tensor_label(std::string_view name) { return "tensor '" + std::string(name) + "'"; }

// Reads a JSON array of non-negative integers that fit in int64.
std::vector<int64_t> read_int_array(const json& value, const std::string& label,
                                    const std::string& what) {
  if (!value.is_array()) throw InputError(label, what + " must be an array of integers");
  std::vector<int64_t> out;
  out.reserve(value.size());
  for (const auto& v : value) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      throw InputError(label, what + " must hold non-negative integers, found " + v.dump());
    }
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) throw InputError(label, what + " value too large");
    out.push_back(static_cast<int64_t>(u));
  }
  return out;
}

TensorEntry read_entry(const std::string& name, const json& info, const std::string& label) {
  const std::string who = tensor_label(name);
  if (!info.is_object())
    throw InputError(label, who + ": expected an object, found " + info.dump());
  TensorEntry entry;
  entry.name = name;
  for (const auto& [key, value] : info.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      throw InputError(label,
                       who + ": unknown field '" + key + "' (expected dtype, shape, data_offsets)");
    }
  }
  if (!info.contains("dtype") || !info["dtype"].is_string()) {
    throw InputError(label, who + ": missing string field 'dtype'");
  }
  const auto dtype_str = info["dtype"].get<std::string>();
  auto dtype = tensor::parse_safetensors_dtype(dtype_str);
  if (!dtype) {
    throw InputError(label, who + ": unknown dtype '" + dtype_str +
                                "' (supported: F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, "
                                "I32, I8, U8, BOOL)");
  }
  entry.dtype = *dtype;
  if (!info.contains("shape")) throw InputError(label, who + ": missing field 'shape'");
  entry.shape = read_int_array(info["shape"], label, who + ": shape");
  if (!info.contains("data_offsets"))
    throw InputError(label, who + ": missing field 'data_offsets'");
  auto offsets = read_int_array(info["data_offsets"], label, who + ": data_offsets");
  if (offsets.size() != 2) throw InputError(label, who + ": data_offsets must be [begin, end]");
  entry.begin = static_cast<uint64_t>(offsets[0]);
  entry.end = static_cast<uint64_t>(offsets[1]);
  if (entry.begin > entry.end) {
    throw InputError(label, who + ": data_offsets [" + std::to_string(entry.begin) + ", " +
                                std::to_string(entry.end) + "] end before they begin");
  }
  uint64_t bytes = tensor::dtype_size(entry.dtype);
  for (int64_t d : entry.shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
      throw InputError(label, who + ": shape " + tensor::shape_string(entry.shape) + " overflows");
    }
  }
  if (bytes != entry.nbytes()) {
    throw InputError(label, who + ": shape " + tensor::shape_string(entry.shape) + " of " +
                                tensor::dtype_name(entry.dtype) + " needs " +
                                std::to_string(bytes) + " bytes but data_offsets span " +
                                std::to_string(entry.nbytes()));
  }
  return entry;
}

// Finds the first key repeated at the top level of a JSON object, without building a DOM.
class DuplicateKeyFinder : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth_, true; }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return ++depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    if (depth_ == 1 && !seen_.insert(k).second) {
      duplicate_ = k;
      return false;  // stop at the first one
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;  // the DOM parse reports syntax errors
  }
  const std::string& duplicate() const { return duplicate_; }

 private:
  int depth_ = 0;
  std::set<std::string> seen_;
  std::string duplicate_;
};

std::string first_duplicate_key(const char* text, size_t length) {
  DuplicateKeyFinder finder;
  json::sax_parse(text, text + length, &finder, json::input_format_t::json, false);
  return finder.duplicate();
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  auto file = base::MappedFile::open(path);
  SafetensorsFile f = parse(file->data(), file->size(), path, file);
  f.mapped_ = file;
  return f;
}

bool SafetensorsFile::release_range(const void* p, size_t bytes) const {
  const auto* b = static_cast<const std::byte*>(p);
  if (mapped_ == nullptr || b < data_ || b + bytes > data_ + size_) return false;
  mapped_->release(size_t(b - data_), bytes);
  return true;
}

void SafetensorsFile::release(std::string_view name) const {
  const TensorEntry* e = find(name);
  if (mapped_ == nullptr || e == nullptr) return;
  mapped_->release(data_offset_ + e->begin, e->end - e->begin);
}

SafetensorsFile SafetensorsFile::parse(const std::byte* data, size_t size, std::string label,
                                       std::shared_ptr<const void> keepalive) {
  SafetensorsFile f;
  f.label_ = std::move(label);
  f.data_ = data;
  f.size_ = size;
  f.keepalive_ = std::move(keepalive);
  const std::string& where = f.label_;

  if (size < 8) {
    throw InputError(where, "file is " + std::to_string(size) +
                                " bytes, too short for the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(data[i]);
  if (header_len > size - 8) {
    throw InputError(where, "header length " + std::to_string(header_len) +
                                " is beyond the file (" + std::to_string(size - 8) +
                                " bytes follow the length field)");
  }
  if (header_len > kMaxHeaderBytes) {
    throw InputError(where, "header length " + std::to_string(header_len) +
                                " exceeds the 100 MB limit of the format");
  }
  f.data_offset_ = 8 + header_len;
  const char* text = reinterpret_cast<const char*>(data + 8);
  if (header_len == 0 || text[0] != '{') {
    throw InputError(where, "header is not JSON: it must start with '{'");
  }

  if (base::json_depth(std::string_view(text, header_len), base::kMaxJsonDepth) >
      base::kMaxJsonDepth) {
    throw InputError(
        where, "header JSON nested deeper than " + std::to_string(base::kMaxJsonDepth) + " levels");
  }
  // Parse, refusing duplicate top-level names (a JSON object may repeat keys; the format may
  // not). A SAX pass finds them; nlohmann's callback parser would, but in quadratic time.
  const std::string duplicate = first_duplicate_key(text, header_len);
  json header;
  try {
    header = json::parse(text, text + header_len);
  } catch (const json::exception& e) {
    throw InputError(where, std::string("header is not JSON: ") + e.what());
  }
  if (!duplicate.empty()) throw InputError(where, "duplicate tensor name '" + duplicate + "'");
  if (!header.is_object()) throw InputError(where, "header must be a JSON object");

  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) throw InputError(where, "__metadata__ must be an object of strings");
      for (const auto& [key, value] : info.items()) {
        if (!value.is_string()) {
          throw InputError(where,
                           "__metadata__ '" + key + "' must be a string, found " + value.dump());
        }
        f.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    f.entries_.push_back(read_entry(name, info, where));
  }

  // The data section must be covered exactly: sorted by offset, each tensor starts where the
  // previous one ended and the last one ends at the end of the file.
  std::sort(f.entries_.begin(), f.entries_.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const uint64_t data_bytes = size - f.data_offset_;
  uint64_t expected_begin = 0;
  const TensorEntry* previous = nullptr;
  for (const auto& e : f.entries_) {
    if (e.end > data_bytes) {
      throw InputError(where, tensor_label(e.name) + ": data_offsets [" + std::to_string(e.begin) +
                                  ", " + std::to_string(e.end) + "] are beyond the data section (" +
                                  std::to_string(data_bytes) + " bytes)");
    }
    if (e.begin < expected_begin) {
      throw InputError(
          where, tensor_label(e.name) + " [" + std::to_string(e.begin) + ", " +
                     std::to_string(e.end) + ") overlaps " + tensor_label(previous->name) + " [" +
                     std::to_string(previous->begin) + ", " + std::to_string(previous->end) + ")");
    }
    if (e.begin > expected_begin) {
      throw InputError(where, "bytes [" + std::to_string(expected_begin) + ", " +
                                  std::to_string(e.begin) + ") of the data section belong to no " +
                                  "tensor (before " + tensor_label(e.name) + ")");
    }
    expected_begin = e.end;
    previous = &e;
  }
  if (expected_begin != data_bytes) {
    throw InputError(where, "the data section has " + std::to_string(data_bytes - expected_begin) +
                                " trailing bytes that belong to no tensor");
  }
  for (size_t i = 0; i < f.entries_.size(); ++i) f.index_.emplace(f.entries_[i].name, i);
  return f;
}

const TensorEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const TensorEntry& SafetensorsFile::require(std::string_view name) const {
  const TensorEntry* e = find(name);
  if (e == nullptr) throw InputError(label_, "no " + tensor_label(name) + " in this file");
  return *e;
}

tensor::Tensor SafetensorsFile::get(std::string_view name) const {
  const TensorEntry& e = require(name);
  const std::byte* p = tensor_bytes(e);
  if (reinterpret_cast<uintptr_t>(p) % tensor::dtype_size(e.dtype) != 0) {
    return tensor::Tensor::copy_of(e.dtype, e.shape, p);  // misaligned data section
  }
  return tensor::Tensor::view(e.dtype, e.shape, p, keepalive_);
}

tensor::Tensor SafetensorsFile::slice(std::string_view name, int axis, int64_t begin,
                                      int64_t end) const {
  const TensorEntry& e = require(name);
  const int ndim = static_cast<int>(e.shape.size());
  if (axis < 0 || axis >= ndim) {
    throw InputError(label_, tensor_label(name) + ": cannot slice axis " + std::to_string(axis) +
                                 " of shape " + tensor::shape_string(e.shape));
  }
  const int64_t extent = e.shape[static_cast<size_t>(axis)];
  if (begin < 0 || begin > end || end > extent) {
    throw InputError(label_, tensor_label(name) + ": range [" + std::to_string(begin) + ", " +
                                 std::to_string(end) + ") is outside axis " + std::to_string(axis) +
                                 " of size " + std::to_string(extent));
  }
  if (axis == 0) return get(name).slice_rows(begin, end);
  tensor::Shape out_shape = e.shape;
  out_shape[static_cast<size_t>(axis)] = end - begin;
  int64_t outer = 1, inner = static_cast<int64_t>(tensor::dtype_size(e.dtype));
  for (int i = 0; i < axis; ++i) outer *= e.shape[static_cast<size_t>(i)];
  for (int i = axis + 1; i < ndim; ++i) inner *= e.shape[static_cast<size_t>(i)];
  tensor::Tensor out = tensor::Tensor::zeros(e.dtype, out_shape);
  auto* dst = static_cast<std::byte*>(out.mutable_data());
  const std::byte* src = tensor_bytes(e);
  const size_t piece = static_cast<size_t>((end - begin) * inner);
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + static_cast<size_t>(o) * piece,
                src + static_cast<size_t>((o * extent + begin) * inner), piece);
  }
  return out;
}

}  // namespace h0::io
