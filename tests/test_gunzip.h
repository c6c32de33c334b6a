// A gzipped (or plain) file's contents, for the tests that read committed .gz data (link
// ZLIB::ZLIB).
#pragma once

#include <zlib.h>

#include <string>

namespace h0::test {

// The whole decompressed contents of `path` ("" when it cannot be opened).
inline std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  gzclose(f);
  return out;
}

}  // namespace h0::test
