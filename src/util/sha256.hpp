#pragma once
// Incremental SHA-256 (OpenSSL's implementation).
#include <memory>
#include <string>
#include <string_view>

namespace idem::util {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  // Raw 32-byte digest; the object cannot be updated afterwards.
  std::string finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view bytes);

}  // namespace idem::util
