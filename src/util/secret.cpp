#include "util/secret.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <climits>
#include <stdexcept>

#include "util/hex.hpp"

namespace idem::util {

bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string hmac(Digest digest, std::string_view key, std::string_view data) {
  if (key.size() > size_t(INT_MAX)) throw std::length_error("HMAC key is too long");
  // An empty string_view may hold a null pointer; OpenSSL is never handed one.
  static const unsigned char k_empty = 0;
  const void* key_bytes = key.empty() ? &k_empty : static_cast<const void*>(key.data());
  const unsigned char* data_bytes =
      data.empty() ? &k_empty : reinterpret_cast<const unsigned char*>(data.data());
  const EVP_MD* md = digest == Digest::sha1     ? EVP_sha1()
                     : digest == Digest::sha256 ? EVP_sha256()
                                                : EVP_sha512();
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  if (HMAC(md, key_bytes, int(key.size()), data_bytes, data.size(), mac, &mac_size) == nullptr)
    throw std::runtime_error("HMAC is unavailable");
  return std::string(reinterpret_cast<const char*>(mac), mac_size);
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  return hmac(Digest::sha256, key, data);
}

std::string hmac_hex(Digest digest, std::string_view key, std::string_view data) {
  return to_hex(hmac(digest, key, data));
}

}  // namespace idem::util
