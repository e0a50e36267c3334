#include "net/tls.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "net/socket_io.hpp"
#include "util/clock.hpp"

namespace idem::net {

namespace {

// OpenSSL's reason for the last failure on this thread, and its queue emptied.
std::string openssl_reason() {
  unsigned long code = ERR_peek_last_error();
  const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  std::string text = reason ? reason : "unknown error";
  ERR_clear_error();
  return text;
}

// The file must be readable before OpenSSL's reason ("no start line", ...) is worth giving.
void check_readable(const std::string& option, const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw TlsError(option + " " + path + ": cannot read it: " + why(errno));
  ::close(fd);
}

// ALPN: HTTP/1.1 is all this server speaks. A client offering only other protocols gets no
// ALPN answer (RFC 7301 allows either), and then its first bytes show what it speaks.
int select_http11(SSL*, const unsigned char** out, unsigned char* out_length,
                  const unsigned char* in, unsigned int in_length, void*) {
  static constexpr unsigned char k_http11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};
  for (unsigned int i = 0; i < in_length;) {
    const unsigned int n = in[i];
    if (i + 1 + n > in_length) break;
    if (n == sizeof k_http11 && std::memcmp(in + i + 1, k_http11, n) == 0) {
      *out = in + i + 1;
      *out_length = static_cast<unsigned char>(n);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + n;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// A served connection over TLS. Each SSL call that cannot go on without the socket says which
// way it waits (WANT_READ or WANT_WRITE, either of which any call may need: TLS 1.3 sends
// tickets and key updates whenever), and the wait is a poll() against the caller's deadline.
class TlsStream final : public Stream {
 public:
  TlsStream(int fd, SSL* ssl) : Stream(fd), ssl_(ssl) {}
  ~TlsStream() override { SSL_free(ssl_); }

  bool open(int64_t deadline_ms) override {
    for (;;) {
      ERR_clear_error();
      const int rc = SSL_accept(ssl_);
      if (rc == 1) return true;
      if (!wait(SSL_get_error(ssl_, rc), deadline_ms, -1)) return false;
    }
  }

  Read read(char* out, size_t capacity, size_t& got, int64_t deadline_ms, int wake_fd) override {
    for (;;) {
      ERR_clear_error();
      if (SSL_read_ex(ssl_, out, capacity, &got) == 1) return Read::data;
      const int error = SSL_get_error(ssl_, 0);
      if (error == SSL_ERROR_ZERO_RETURN) return Read::eof;
      if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        return Read::error;
      }
      Ready r =
          wait_for(fd(), error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ms, wake_fd);
      if (r == Ready::timeout) return Read::timeout;
      if (r == Ready::woken) return Read::woken;
      if (r == Ready::error) return Read::error;
    }
  }

  bool write(std::string_view bytes, int64_t deadline_ms) override {
    while (!bytes.empty()) {
      ERR_clear_error();
      size_t n = 0;
      if (SSL_write_ex(ssl_, bytes.data(), bytes.size(), &n) == 1) {
        bytes.remove_prefix(n);
        continue;
      }
      if (!wait(SSL_get_error(ssl_, 0), deadline_ms, -1)) return false;
    }
    return true;
  }

  void close_write(int64_t deadline_ms) override {
    // close_notify, so the client knows the answer ended where it did (not a truncation).
    for (;;) {
      ERR_clear_error();
      const int rc = SSL_shutdown(ssl_);
      if (rc >= 0 || !wait(SSL_get_error(ssl_, rc), deadline_ms, -1)) break;
    }
    ERR_clear_error();
    ::shutdown(fd(), SHUT_WR);
  }

 private:
  // After a failed call: waits as `error` asks; false when it is not a wait, or the wait failed.
  bool wait(int error, int64_t deadline_ms, int wake_fd) {
    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
      ERR_clear_error();
      return false;
    }
    return wait_for(fd(), error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ms, wake_fd) ==
           Ready::ready;
  }

  SSL* const ssl_;
};

int openssl_version(TlsVersion v) {
  return v == TlsVersion::v1_3 ? TLS1_3_VERSION : TLS1_2_VERSION;
}

}  // namespace

std::optional<TlsVersion> parse_tls_version(const std::string& text) {
  if (text == "1.2") return TlsVersion::v1_2;
  if (text == "1.3") return TlsVersion::v1_3;
  return std::nullopt;
}

std::shared_ptr<const TlsContext> TlsContext::load(const TlsFiles& files) {
  check_readable("--cert", files.cert);
  check_readable("--key", files.key);
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) throw TlsError("cannot make a TLS context: " + openssl_reason());
  std::shared_ptr<const TlsContext> made(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, openssl_version(files.min_version));
  // A peer that closes without close_notify has ended its request stream all the same (the
  // request's own framing says whether it was whole).
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1)
    throw TlsError("--cert " + files.cert + ": not a usable certificate: " + openssl_reason());
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1 &&
      ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH)
    throw TlsError("--key " + files.key + ": not a usable private key: " + openssl_reason());
  // OpenSSL finds a mismatch when it loads the key or, for some key types, only here.
  if (ERR_peek_last_error() != 0 || SSL_CTX_check_private_key(ctx) != 1)
    throw TlsError("--key " + files.key + ": not the key of the certificate in " + files.cert +
                   ": " + openssl_reason());
  return made;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

std::unique_ptr<Stream> TlsContext::accept(int fd) const {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    throw Error(k_exit_internal, "cannot start a TLS connection: " + openssl_reason());
  }
  return std::make_unique<TlsStream>(fd, ssl);
}

}  // namespace idem::net
