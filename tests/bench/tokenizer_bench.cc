// Tokenizer encode throughput (MB/s of UTF-8 text) on a mix of English, Chinese and code: the
// tiny models' training text repeated to 1 MiB. Baseline in the same run: decode of the same
// ids (a table lookup per id), the floor any encoder sits above.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tokenizer/tokenizer.h"

namespace h0 {
namespace {

std::string mixed_text(size_t bytes) {
  std::ifstream in(std::string(H0_SOURCE_DIR) + "/golden/tools/tokenizer_training.txt");
  std::ostringstream one;
  one << in.rdbuf();
  std::string text;
  while (text.size() < bytes) text += one.str();
  return text;
}

tokenizer::Tokenizer load(const std::string& name) {
  return tokenizer::Tokenizer::from_file(std::string(H0_SOURCE_DIR) + "/configs/models/" + name +
                                         "/tokenizer.json");
}

void BM_TokenizerEncode(benchmark::State& state, const char* name, size_t bytes) {
  const tokenizer::Tokenizer tok = load(name);
  const std::string text = mixed_text(bytes);
  size_t ids = 0;
  for (auto _ : state) ids = tok.encode(text).size();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["bytes_per_token"] = static_cast<double>(text.size()) / static_cast<double>(ids);
}

void BM_TokenizerDecodeBaseline(benchmark::State& state, const char* name, size_t bytes) {
  const tokenizer::Tokenizer tok = load(name);
  const std::string text = mixed_text(bytes);
  const auto ids = tok.encode(text);
  for (auto _ : state) benchmark::DoNotOptimize(tok.decode(ids));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

BENCHMARK_CAPTURE(BM_TokenizerEncode, llama_1MiB, "tiny-llama", size_t{1} << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TokenizerEncode, qwen3_nfc_1MiB, "tiny-qwen3-moe", size_t{1} << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TokenizerEncode, deepseek_v3_1MiB, "tiny-deepseek-v3", size_t{1} << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TokenizerDecodeBaseline, llama_1MiB, "tiny-llama", size_t{1} << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TokenizerEncode, Small_llama_10KiB, "tiny-llama", size_t{10} << 10)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace h0
