// SHA-256 through OpenSSL (hardware-accelerated where the CPU has SHA extensions).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace h0::base {

// Returns the lowercase hex SHA-256 of `bytes` bytes at `data`.
std::string sha256_hex(const void* data, size_t bytes);

// Returns the lowercase hex SHA-256 of a file's contents. Throws InputError if unreadable.
std::string sha256_file(const std::string& path);

// Incremental hashing, for data that arrives in pieces.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t bytes);
  std::string hex_digest();  // finishes the hash; the object may not be updated afterwards

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace h0::base
