// The fuzz targets' main outside libFuzzer (the normal g++ build, ctest): runs every file of a
// seed corpus, then N mutations of them (bit flips, interesting bytes and tokens, cut, repeated
// and spliced ranges) from a fixed seed, so a failure replays. Usage:
//   fuzz_<target> [--smoke N] CORPUS_DIR_OR_FILE...
// A crash or an escaping exception ends the process (the test fails); a mutated input that
// fails is left in $TMPDIR/h0-fuzz-smoke-<target>.input, for `fuzz_<target> FILE` to replay.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Byte strings that take parsers to their edges: nesting, aliases, escapes, numbers at the
// ends of their ranges, invalid UTF-8.
const char* const kTokens[] = {"[",
                               "]",
                               "{",
                               "}",
                               "\"",
                               "\\",
                               ":",
                               ",",
                               "*a",
                               "&a ",
                               "<<: ",
                               "- ",
                               "\n  ",
                               "null",
                               "-1",
                               "0",
                               "1e999",
                               "2147483647",
                               "9223372036854775807",
                               "-9223372036854775808",
                               "\xff",
                               "\xc3",
                               "\xed\xa0\x80",
                               "\r\n",
                               "data: ",
                               "[DONE]",
                               "\n\n",
                               "NaN",
                               "Infinity",
                               "\"dtype\"",
                               "\"shape\"",
                               "\"data_offsets\"",
                               "\"F8_E4M3\"",
                               "\"num_hidden_layers\"",
                               "\x93NUMPY",
                               "PK\x03\x04"};

std::string mutate(const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  std::string s = seeds[pick(seeds.size())];
  const int rounds = 1 + static_cast<int>(pick(8));
  for (int r = 0; r < rounds; ++r) {
    switch (pick(7)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // an interesting byte
        if (!s.empty()) s[pick(s.size())] = "\x00\x01\x7f\x80\xff\"\\{["[pick(9)];
        break;
      case 2: {  // insert a token
        const char* t = kTokens[pick(std::size(kTokens))];
        s.insert(pick(s.size() + 1), t);
        break;
      }
      case 3: {  // cut a range
        const size_t at = pick(s.size() + 1), n = pick(std::min<size_t>(s.size() - at, 64) + 1);
        s.erase(at, n);
        break;
      }
      case 4: {  // repeat a range
        const size_t at = pick(s.size() + 1), n = pick(std::min<size_t>(s.size() - at, 64) + 1);
        const std::string piece = s.substr(at, n);
        const size_t times = 1 + pick(16);
        std::string rep;
        for (size_t k = 0; k < times; ++k) rep += piece;
        s.insert(at, rep);
        break;
      }
      case 5: {  // splice in part of another seed
        const std::string& other = seeds[pick(seeds.size())];
        const size_t at = pick(other.size() + 1);
        s.insert(pick(s.size() + 1), other.substr(at, pick(other.size() - at + 1)));
        break;
      }
      default:  // truncate
        s.resize(pick(s.size() + 1));
        break;
    }
  }
  return s;
}

int run_one(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 0;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0 && i + 1 < argc) {
      mutations = std::atol(argv[++i]);
      continue;
    }
    const fs::path p(argv[i]);
    if (fs::is_directory(p)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) seeds.push_back(read_all(f));
    } else if (fs::is_regular_file(p)) {
      seeds.push_back(read_all(p));
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 2;
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "usage: %s [--smoke N] CORPUS_DIR_OR_FILE...  (no seed inputs given)\n",
                 argv[0]);
    return 2;
  }
  const std::string target = fs::path(argv[0]).filename().string();
  const char* tmp = std::getenv("TMPDIR");
  const std::string failure = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                              "/h0-fuzz-smoke-" + target + ".input";
  const auto start = std::chrono::steady_clock::now();
  for (const auto& s : seeds) run_one(s);
  std::mt19937_64 rng(20261203);
  double slowest_s = 0;
  for (long i = 0; i < mutations; ++i) {
    const std::string input = mutate(seeds, rng);
    // Written before the run, so that a crash leaves the input behind; removed at the end.
    std::ofstream(failure, std::ios::binary | std::ios::trunc) << input;
    const auto t0 = std::chrono::steady_clock::now();
    run_one(input);
    slowest_s = std::max(
        slowest_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::error_code ec;
  fs::remove(failure, ec);
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %zu seeds and %ld mutations run in %.2f s (slowest mutation %.3f s), no crash\n",
              target.c_str(), seeds.size(), mutations, total_s, slowest_s);
  // An input that takes seconds is a hang-in-waiting (a quadratic parse, a huge allocation).
  if (slowest_s > 5.0) {
    std::fprintf(stderr, "%s: a mutation took %.1f s (over 5 s)\n", target.c_str(), slowest_s);
    return 1;
  }
  return 0;
}
