// 10,000 random mutations of a valid header: every one parses or is rejected with an
// InputError; none crashes, hangs or reads out of bounds (run under ASan to see the last).
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "io/safetensors_reader.h"
#include "tensor/philox.h"

namespace h0::io {
namespace {

std::string valid_file() {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
      R"("b":{"dtype":"F32","shape":[3],"data_offsets":[12,24]},"i":{"dtype":"I64","shape":[],"data_offsets":[24,32]}})";
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(header.size() >> (8 * i));
  return out + header + std::string(32, '\x11');
}

TEST(SafetensorsFuzz, TenThousandMutationsNeverCrash) {
  const std::string base = valid_file();
  const tensor::Philox rng(2024, 0);
  uint64_t draw = 0;
  auto next = [&](uint32_t bound) {
    return static_cast<uint32_t>((uint64_t{rng.word(draw++)} * bound) >> 32);
  };
  const char kTokens[] = "{}[]\",:0123456789-.eE \\u\x00\xff";
  int accepted = 0, rejected = 0;
  for (int trial = 0; trial < 10000; ++trial) {
    std::string s = base;
    const uint32_t edits = 1 + next(4);
    for (uint32_t k = 0; k < edits; ++k) {
      const uint32_t pos = next(static_cast<uint32_t>(s.size()));
      switch (next(6)) {
        case 0:
          s[pos] = static_cast<char>(next(256));
          break;  // random byte
        case 1:
          s[pos] = kTokens[next(sizeof kTokens - 1)];
          break;  // JSON token
        case 2:
          s.erase(pos, 1 + next(8));
          break;  // deletion
        case 3:
          s.insert(pos, 1, kTokens[next(sizeof kTokens - 1)]);
          break;  // insertion
        case 4:
          s.resize(next(static_cast<uint32_t>(s.size()) + 1));
          break;  // truncation
        default:
          s[next(8) % s.size()] = static_cast<char>(next(256));
          break;  // length field
      }
      if (s.empty()) s.push_back('x');
    }
    try {
      const auto f = SafetensorsFile::parse(reinterpret_cast<const std::byte*>(s.data()), s.size(),
                                            "fuzz", nullptr);
      for (const auto& e : f.entries()) {
        const auto t = f.get(e.name);  // a view must lie inside the buffer
        ASSERT_LE(e.end + 8 + f.header_bytes(), s.size());
        ASSERT_EQ(t.nbytes(), e.nbytes());
      }
      ++accepted;
    } catch (const InputError&) {
      ++rejected;
    }
  }
  EXPECT_EQ(accepted + rejected, 10000);
  EXPECT_GT(rejected, 5000);  // the mutations do break things
}

}  // namespace
}  // namespace h0::io
