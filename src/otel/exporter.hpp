#pragma once
// Sends the engine's spans to an OTLP/HTTP receiver (SPEC §12): a bounded queue, filled by
// add() without waiting, emptied in batches by a thread of the exporter's own, started by the
// first span (an exporter that gets none costs no thread), or without a thread by shutdown(). A
// receiver that is down, slow or refusing loses spans, counted, and never holds up an attempt:
// add() never waits for it, and shutdown() returns by its deadline whatever the receiver does.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/trace.hpp"
#include "engine/trace.hpp"
#include "util/clock.hpp"

namespace idem::otel {

// One export request's way to the receiver.
class Transport {
 public:
  virtual ~Transport() = default;
  // Posts `body` (an OTLP/HTTP JSON export request), done by `deadline_ms` (the monotonic
  // clock); with `await_answer` false, done once it is written (the answer is not read).
  // Returns "" when it was accepted, else why not.
  virtual std::string post(const std::string& body, int64_t deadline_ms, bool await_answer) = 0;
  // The receiver, for messages.
  virtual std::string where() const = 0;
};

class Exporter final : public engine::SpanSink {
 public:
  struct Options {
    size_t max_queue = 2048;  // spans waiting at most; add() drops any further one
    size_t max_batch = 512;   // spans per export request at most
    // How long a span waits for others to share its request (what is sent together costs one
    // request); a full batch, or shutdown(), sends at once.
    int64_t linger_ms = 200;
    int64_t timeout_ms = 10000;  // each request's (OTEL_EXPORTER_OTLP_TIMEOUT)
    // false: no thread; what waits is sent by shutdown(), on its caller's thread (a CLI command
    // whose one span comes at its end: a thread would cost more than it overlaps).
    bool background = true;
    // false: each request is written and its connection closed, the answer not read (a CLI
    // command about to exit would not act on it; the receiver's work is not waited for). A
    // request written whole counts as exported.
    bool await_answer = true;
    // With await_answer false: takes over a connection whose request is written, and keeps it
    // open until the receiver answers or `timeout_ms` passes, so that this process may exit now
    // (a receiver in Go cancels the request of a client that went away, and may drop its spans).
    // False when it cannot: the exporter then waits for the answer to begin. Unset: the same.
    std::function<bool(int fd, int timeout_ms)> hold_connection;
    // Told when exports start failing and when they work again (not of every failure): the
    // daemon's log. Called on the exporter's thread.
    std::function<void(const std::string& line)> report;
  };
  struct Stats {
    int64_t exported = 0;  // spans the receiver accepted
    // Spans lost: the queue was full, their request failed, or shutdown's deadline came first.
    int64_t dropped = 0;
    int64_t failed_requests = 0;
  };

  Exporter(std::unique_ptr<Transport> transport, core::TraceResource resource,
           const util::Clock& clock, Options options);
  ~Exporter() override;  // shutdown(now): what waits is dropped
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  void add(core::Span span) noexcept override;
  // Sends what waits and stops the thread, by `deadline_ms` (monotonic) whatever the receiver
  // does: a request still under way then is cut off, and what is left is dropped. Spans added
  // later are dropped. Safe to call twice.
  void shutdown(int64_t deadline_ms);
  Stats stats() const;
  const Options& options() const { return options_; }

 private:
  void loop();
  // Without a thread (Options::background false): sends what waits, batch after batch, until
  // the queue is empty or shutdown's deadline has passed.
  void drain(std::unique_lock<std::mutex>& lock);
  // Sends the next batch (`lock` held on the queue, released for the request) and counts it.
  void drain_batch(std::unique_lock<std::mutex>& lock, int64_t now_ms);
  // Sends `batch`, without the lock; whether the receiver took it.
  bool send(const std::vector<core::Span>& batch, int64_t deadline_ms);

  const std::unique_ptr<Transport> transport_;
  const core::TraceResource resource_;
  const util::Clock& clock_;
  const Options options_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;  // the thread: spans came, or shutdown
  std::deque<core::Span> queue_;
  int64_t oldest_ms_ = 0;  // when the oldest waiting span came (monotonic)
  bool stopping_ = false;
  int64_t stop_by_ms_ = 0;  // shutdown's deadline
  bool failing_ = false;    // the last request failed (reported once)
  Stats stats_;
  std::thread thread_;
};

}  // namespace idem::otel
