#include "io/safetensors_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"

namespace h0::io {
namespace {

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

void layout_order(std::vector<NamedTensor>& tensors) {
  std::stable_sort(tensors.begin(), tensors.end(), [](const NamedTensor& a, const NamedTensor& b) {
    const int ra = tensor::info(a.tensor.dtype()).safetensors_rank;
    const int rb = tensor::info(b.tensor.dtype()).safetensors_rank;
    return ra != rb ? ra > rb : a.name < b.name;
  });
}

std::string safetensors_header(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  std::string out = "{";
  if (!metadata.empty()) {
    out += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) out += ',';
      first = false;
      out += json_string(key) + ":" + json_string(value);
    }
    out += "}";
  }
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (out.size() > 1) out += ',';
    out += json_string(t.name) + ":{\"dtype\":\"" +
           tensor::info(t.tensor.dtype()).safetensors_name + "\",\"shape\":[";
    for (size_t i = 0; i < t.tensor.shape().size(); ++i) {
      if (i) out += ',';
      out += std::to_string(t.tensor.shape()[i]);
    }
    const uint64_t end = offset + t.tensor.nbytes();
    out += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  out += "}";
  out.append((8 - out.size() % 8) % 8, ' ');
  return out;
}

void write_safetensors(const std::string& path, std::vector<NamedTensor> tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_safetensors_streamed(path, std::move(tensors), metadata,
                             [](const NamedTensor& t, const ByteSink& write) {
                               write(t.tensor.data(), t.tensor.nbytes());
                             });
}

void write_safetensors_streamed(
    const std::string& path, std::vector<NamedTensor> specs,
    const std::map<std::string, std::string>& metadata,
    const std::function<void(const NamedTensor&, const ByteSink&)>& produce,
    const std::function<bool(const NamedTensor&)>& later) {
  std::set<std::string> names;
  for (const auto& t : specs) {
    if (t.name == "__metadata__") throw InputError(path, "'__metadata__' is not a tensor name");
    if (!names.insert(t.name).second)
      throw InputError(path, "duplicate tensor name '" + t.name + "'");
  }
  layout_order(specs);
  const std::string header = safetensors_header(specs, metadata);

  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) throw InputError(path, std::string("cannot write: ") + std::strerror(errno));
  bool ok = true;
  int saved_errno = 0;
  auto fail_with_errno = [&] {
    if (ok) saved_errno = errno;
    ok = false;
  };
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header.size() >> (8 * i));
  if (std::fwrite(length, 1, 8, f) != 8 ||
      std::fwrite(header.data(), 1, header.size(), f) != header.size())
    fail_with_errno();
  // Each tensor's offset in the file, then the tensors in layout order with the deferred ones
  // skipped over (a hole) and written in place after the rest.
  std::vector<long> offsets;
  long offset = 8 + static_cast<long>(header.size());
  for (const auto& t : specs) {
    offsets.push_back(offset);
    offset += static_cast<long>(t.tensor.nbytes());
  }
  auto emit = [&](const NamedTensor& t) {
    size_t written = 0;
    produce(t, [&](const void* data, size_t bytes) {
      if (!ok || bytes == 0) return;
      if (std::fwrite(data, 1, bytes, f) != bytes) fail_with_errno();
      written += bytes;
    });
    H0_CHECK(!ok || written == t.tensor.nbytes())
        << t.name << ": " << written << " bytes produced for " << t.tensor.nbytes();
  };
  try {
    std::vector<size_t> deferred;
    for (size_t i = 0; i < specs.size() && ok; ++i) {
      if (later && later(specs[i])) {
        deferred.push_back(i);
        if (std::fseek(f, offsets[i] + static_cast<long>(specs[i].tensor.nbytes()), SEEK_SET) != 0)
          fail_with_errno();
        continue;
      }
      emit(specs[i]);
    }
    for (size_t i : deferred) {
      if (!ok) break;
      if (std::fseek(f, offsets[i], SEEK_SET) != 0) fail_with_errno();
      emit(specs[i]);
    }
  } catch (...) {
    std::fclose(f);
    std::remove(temp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) fail_with_errno();
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    if (ok) saved_errno = errno;
    std::remove(temp.c_str());
    throw InputError(path, std::string("cannot write: ") + std::strerror(saved_errno));
  }
}

}  // namespace h0::io
