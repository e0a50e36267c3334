#include "util/sha256.hpp"

// OpenSSL's SHA-256 without its EVP layer: EVP fetches the digest from a provider, which first
// loads and parses openssl.cnf and initialises the provider machinery, about a millisecond on
// every `idem run` for one short hash. The one-shot SHA256_* functions are the same
// implementation without that set-up; OpenSSL 3 marks them deprecated in favour of EVP, for
// applications that want to swap providers, which idem does not.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "util/hex.hpp"

namespace idem::util {

struct Sha256::Impl {
  SHA256_CTX ctx;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) { SHA256_Init(&impl_->ctx); }

Sha256::~Sha256() = default;

void Sha256::update(std::string_view bytes) {
  SHA256_Update(&impl_->ctx, bytes.data(), bytes.size());
}

std::string Sha256::finish() {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_Final(digest, &impl_->ctx);
  return std::string(reinterpret_cast<char*>(digest), sizeof digest);
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return to_hex(h.finish());
}

}  // namespace idem::util
