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
  std::set<std::string> names;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__") throw InputError(path, "'__metadata__' is not a tensor name");
    if (!names.insert(t.name).second)
      throw InputError(path, "duplicate tensor name '" + t.name + "'");
  }
  layout_order(tensors);
  const std::string header = safetensors_header(tensors, metadata);

  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) throw InputError(path, std::string("cannot write: ") + std::strerror(errno));
  bool ok = true;
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header.size() >> (8 * i));
  ok = ok && std::fwrite(length, 1, 8, f) == 8;
  ok = ok && std::fwrite(header.data(), 1, header.size(), f) == header.size();
  for (const auto& t : tensors) {
    if (!ok) break;
    const size_t bytes = t.tensor.nbytes();
    ok = bytes == 0 || std::fwrite(t.tensor.data(), 1, bytes, f) == bytes;
  }
  const int saved_errno = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw InputError(
        path, std::string("cannot write: ") + std::strerror(saved_errno ? saved_errno : errno));
  }
}

}  // namespace h0::io
