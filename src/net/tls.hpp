#pragma once
// TLS for the daemon's TCP listener (OpenSSL): a context made from a certificate chain and its
// private key, and the Stream a served connection reads and writes through. Non-blocking: every
// SSL_ERROR_WANT_READ / WANT_WRITE is a poll() bounded by the caller's deadline, so the
// handshake counts against the first request's deadline as its bytes do.
#include <memory>
#include <optional>
#include <string>

#include "core/errors.hpp"
#include "net/stream.hpp"

struct ssl_ctx_st;

namespace idem::net {

enum class TlsVersion { v1_2, v1_3 };

struct TlsFiles {
  std::string cert;  // PEM: the certificate, then any intermediates
  std::string key;   // PEM: its private key
  TlsVersion min_version = TlsVersion::v1_2;
};

// "1.2" or "1.3"; nullopt otherwise.
std::optional<TlsVersion> parse_tls_version(const std::string& text);

// The files could not be used: one line naming the file and OpenSSL's reason.
class TlsError : public UsageError {
 public:
  using UsageError::UsageError;
};

// A server context: immutable once made, shared by every connection accepted while it is in
// force (a reload makes a new one; connections keep the one they started with).
class TlsContext {
 public:
  // Reads and checks the certificate chain and the key (that they match). Throws TlsError.
  static std::shared_ptr<const TlsContext> load(const TlsFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // The stream of an accepted connection on `fd` (non-blocking); its open() is the handshake.
  std::unique_ptr<Stream> accept(int fd) const;

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

}  // namespace idem::net
