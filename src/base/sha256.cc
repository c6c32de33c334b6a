#include "base/sha256.h"

#include <openssl/evp.h>

#include "base/check.h"
#include "base/mapped_file.h"

namespace h0::base {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  H0_CHECK(impl_->ctx != nullptr && EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::update(const void* data, size_t bytes) {
  H0_CHECK(EVP_DigestUpdate(impl_->ctx, data, bytes) == 1);
}

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  H0_CHECK(EVP_DigestFinal_ex(impl_->ctx, digest, &length) == 1);
  static const char kHex[] = "0123456789abcdef";
  std::string out(2 * length, '0');
  for (unsigned int i = 0; i < length; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(const void* data, size_t bytes) {
  Sha256 hash;
  hash.update(data, bytes);
  return hash.hex_digest();
}

std::string sha256_file(const std::string& path) {
  auto file = MappedFile::open(path);
  return sha256_hex(file->data(), file->size());
}

}  // namespace h0::base
