// Opening a safetensors file is zero-copy: the cost is parsing the header, independent of the
// file size. Target: a 1 GiB file with a realistic header (1,000 tensors) opens in < 5 ms.
// Baseline in the same run: the same header in a file with a tiny data section.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "io/safetensors_reader.h"

namespace h0 {
namespace {

// Writes (once) a sparse file: a header of `tensors` f32 tensors covering `data_bytes`.
std::string make_file(size_t tensors, uint64_t data_bytes) {
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("h0bench-" + std::to_string(tensors) + "-" + std::to_string(data_bytes) + ".safetensors"))
          .string();
  if (std::filesystem::exists(path)) return path;
  const uint64_t per = data_bytes / tensors / 4 * 4;
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors; ++i) {
    const uint64_t bytes = i + 1 == tensors ? data_bytes - offset : per;
    header += ",\"model.layers." + std::to_string(i) +
              ".mlp.down_proj.weight\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(bytes / 4) +
              "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string temp = path + ".tmp";
  const int fd = ::open(temp.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(header.size() >> (8 * i));
  if (::write(fd, len, 8) != 8 ||
      ::write(fd, header.data(), header.size()) != ssize_t(header.size()) ||
      ::ftruncate(fd, static_cast<off_t>(8 + header.size() + data_bytes)) != 0) {
    std::abort();
  }
  ::close(fd);
  std::filesystem::rename(temp, path);
  return path;
}

void BM_OpenSafetensors(benchmark::State& state, size_t tensors, uint64_t data_bytes) {
  const std::string path = make_file(tensors, data_bytes);
  for (auto _ : state) benchmark::DoNotOptimize(io::SafetensorsFile::open(path));
  state.counters["file_GiB"] = static_cast<double>(data_bytes) / (1 << 30);
}

BENCHMARK_CAPTURE(BM_OpenSafetensors, 1GiB_1000_tensors, 1000, uint64_t{1} << 30)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenSafetensors, 4MiB_1000_tensors_baseline, 1000, uint64_t{4} << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OpenSafetensors, Small_1KiB_4_tensors, 4, 1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace h0
