#pragma once
// A served connection's bytes, whatever carries them: a plain socket (TCP or Unix) or TLS over
// TCP (tls.hpp). The server's session reads, writes and closes through this alone, so plain and
// TLS connections share everything else: deadlines, keep-alive, pipelining, the cap. Every wait
// is a poll() bounded by a util::monotonic_ms() deadline (socket_io.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace idem::net {

class Stream {
 public:
  enum class Read { data, eof, timeout, woken, error };

  explicit Stream(int fd) : fd_(fd) {}
  virtual ~Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Whatever must happen before the first request can be read (TLS: the handshake), within the
  // deadline. False: the connection is unusable and is closed unanswered.
  virtual bool open(int64_t deadline_ms) = 0;
  // Reads at most `capacity` bytes into `out` (data: `got` says how many, at least one), waiting
  // until the deadline. While waiting, a readable `wake_fd` (>= 0) ends the wait (woken), but
  // bytes that are there already win.
  virtual Read read(char* out, size_t capacity, size_t& got, int64_t deadline_ms, int wake_fd) = 0;
  // Sends all of `bytes`, waiting for room until the deadline; false when the peer is gone or
  // the deadline passed.
  virtual bool write(std::string_view bytes, int64_t deadline_ms) = 0;
  // No more bytes from this side (TLS: close_notify first); the peer may still send.
  virtual void close_write(int64_t deadline_ms) = 0;
  // Where the bytes are read and written: the transport's own (lingering options, etc.).
  int fd() const { return fd_; }

 private:
  const int fd_;
};

// A socket's bytes as they are.
class PlainStream final : public Stream {
 public:
  using Stream::Stream;
  bool open(int64_t) override { return true; }
  Read read(char* out, size_t capacity, size_t& got, int64_t deadline_ms, int wake_fd) override;
  bool write(std::string_view bytes, int64_t deadline_ms) override;
  void close_write(int64_t deadline_ms) override;
};

}  // namespace idem::net
