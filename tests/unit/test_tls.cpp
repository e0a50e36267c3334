// TLS for the daemon (net/tls.hpp): the context refuses unusable files with one line, and a
// TlsStream does the handshake, reads, writes and closes over a real socket against a client
// made with OpenSSL here, within its deadlines.
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "net/tls.hpp"
#include "temp_dir.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_tls {

using idem::net::Stream;
using idem::net::TlsContext;
using idem::net::TlsError;
using idem::net::TlsFiles;
using idem::net::TlsVersion;

namespace {

// A self-signed P-256 certificate and its key, written as PEM to PREFIX.pem and PREFIX.key.
TlsFiles make_cert_files(const std::string& prefix) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("idem-test"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_sign(cert, key, EVP_sha256());
  TlsFiles files{prefix + ".pem", prefix + ".key", TlsVersion::v1_2};
  FILE* out = std::fopen(files.cert.c_str(), "w");
  PEM_write_X509(out, cert);
  std::fclose(out);
  out = std::fopen(files.key.c_str(), "w");
  PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(out);
  X509_free(cert);
  EVP_PKEY_free(key);
  return files;
}

std::string error_of(const TlsFiles& files) {
  try {
    TlsContext::load(files);
  } catch (const TlsError& e) {
    return e.what();
  }
  return "(loaded)";
}

// A blocking client on `fd`: handshake, send `message`, read the answer up to the server's
// close_notify, then its own close_notify. Returns what it read ("!" and a reason on failure).
std::string client(int fd, const std::string& message) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  std::string got;
  if (SSL_connect(ssl) != 1) {
    got = "!connect";
  } else {
    SSL_write(ssl, message.data(), int(message.size()));
    char buf[256];
    int n;
    while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) got.append(buf, size_t(n));
    SSL_shutdown(ssl);
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return got;
}

}  // namespace

TEST_CASE("tls: versions", "[tls]") {
  CHECK(idem::net::parse_tls_version("1.2") == TlsVersion::v1_2);
  CHECK(idem::net::parse_tls_version("1.3") == TlsVersion::v1_3);
  CHECK_FALSE(idem::net::parse_tls_version("1.1"));
  CHECK_FALSE(idem::net::parse_tls_version("tls1.3"));
}

TEST_CASE("tls: unusable files are refused with one line", "[tls]") {
  idem::test::TempDir dir;
  const TlsFiles first = make_cert_files(dir.path() + "/first");
  const TlsFiles second = make_cert_files(dir.path() + "/second");
  CHECK(error_of(first) == "(loaded)");
  CHECK(error_of({dir.path() + "/none.pem", first.key}) ==
        "--cert " + dir.path() + "/none.pem: cannot read it: no such file or directory");
  CHECK(error_of({first.cert, dir.path() + "/none.key"}) ==
        "--key " + dir.path() + "/none.key: cannot read it: no such file or directory");
  std::ofstream(dir.path() + "/garbage.pem") << "not a certificate\n";
  CHECK(error_of({dir.path() + "/garbage.pem", first.key})
            .starts_with("--cert " + dir.path() + "/garbage.pem: not a usable certificate: "));
  CHECK(error_of({first.cert, first.cert})
            .starts_with("--key " + first.cert + ": not a usable private key: "));
  CHECK(error_of({first.cert, second.key})
            .starts_with("--key " + second.key + ": not the key of the certificate in " +
                         first.cert + ": "));
}

TEST_CASE("tls: a handshake, a request and its answer, the close", "[tls]") {
  idem::test::TempDir dir;
  auto context = TlsContext::load(make_cert_files(dir.path() + "/cert"));
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  idem::util::Fd server_fd(fds[0]), client_fd(fds[1]);
  ::fcntl(server_fd.get(), F_SETFL, O_NONBLOCK);
  std::string answer;
  std::thread peer([&] { answer = client(client_fd.get(), "ping"); });
  std::unique_ptr<Stream> stream = context->accept(server_fd.get());
  const int64_t deadline = idem::util::monotonic_ms() + 10000;
  REQUIRE(stream->open(deadline));
  char buf[64];
  size_t got = 0;
  REQUIRE(stream->read(buf, sizeof buf, got, deadline, -1) == Stream::Read::data);
  CHECK(std::string(buf, got) == "ping");
  CHECK(stream->write("pong", deadline));
  stream->close_write(deadline);
  // The client's close_notify ends the stream.
  CHECK(stream->read(buf, sizeof buf, got, deadline, -1) == Stream::Read::eof);
  peer.join();
  CHECK(answer == "pong");
}

TEST_CASE("tls: a peer that never says hello is given up at the deadline", "[tls]") {
  idem::test::TempDir dir;
  auto context = TlsContext::load(make_cert_files(dir.path() + "/cert"));
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) == 0);
  idem::util::Fd server_fd(fds[0]), client_fd(fds[1]);
  std::unique_ptr<Stream> stream = context->accept(server_fd.get());
  const int64_t start = idem::util::monotonic_ms();
  CHECK_FALSE(stream->open(start + 50));
  CHECK(idem::util::monotonic_ms() - start >= 50);
}

TEST_CASE("tls: plain HTTP is not a handshake", "[tls]") {
  idem::test::TempDir dir;
  auto context = TlsContext::load(make_cert_files(dir.path() + "/cert"));
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) == 0);
  idem::util::Fd server_fd(fds[0]), client_fd(fds[1]);
  const std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::write(client_fd.get(), request.data(), request.size()) == ssize_t(request.size()));
  std::unique_ptr<Stream> stream = context->accept(server_fd.get());
  CHECK_FALSE(stream->open(idem::util::monotonic_ms() + 10000));
}

}  // namespace unit_tls
