#include "otel/exporter.hpp"

#include <algorithm>
#include <exception>
#include <iterator>

namespace idem::otel {

namespace {

// How long the thread sleeps with nothing to send before it looks again (it is woken sooner by
// a span or by shutdown; this bounds nothing).
constexpr int64_t k_idle_look_ms = 60 * 1000;

}  // namespace

Exporter::Exporter(std::unique_ptr<Transport> transport, core::TraceResource resource,
                   const util::Clock& clock, Options options)
    : transport_(std::move(transport)),
      resource_(std::move(resource)),
      clock_(clock),
      options_(std::move(options)) {}

Exporter::~Exporter() { shutdown(clock_.monotonic_ms()); }

void Exporter::add(core::Span span) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= options_.max_queue) {
      ++stats_.dropped;
      return;
    }
    const bool first = queue_.empty();
    if (first) oldest_ms_ = clock_.monotonic_ms();
    queue_.push_back(std::move(span));
    if (!options_.background) return;  // shutdown() sends it
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    // The thread idles until a first span starts its linger, or a batch is full.
    if (first || queue_.size() >= options_.max_batch) wake_.notify_all();
  } catch (const std::exception&) {
    // No memory or no thread for it: the span is lost, the attempt goes on.
    std::lock_guard lock(mutex_);
    ++stats_.dropped;
  }
}

void Exporter::shutdown(int64_t deadline_ms) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      stop_by_ms_ = deadline_ms;
    }
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::unique_lock lock(mutex_);
  if (!options_.background) drain(lock);
  stats_.dropped += int64_t(queue_.size());  // spans left unsent by the deadline
  queue_.clear();
}

Exporter::Stats Exporter::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Exporter::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    const int64_t now_ms = clock_.monotonic_ms();
    if (stopping_ && now_ms >= stop_by_ms_) return;  // shutdown drops what is left
    if (queue_.empty()) {
      if (stopping_) return;
      clock_.wait_until(wake_, lock, now_ms + k_idle_look_ms);
      continue;
    }
    const int64_t due_ms = oldest_ms_ + options_.linger_ms;
    if (!stopping_ && queue_.size() < options_.max_batch && now_ms < due_ms) {
      clock_.wait_until(wake_, lock, due_ms);
      continue;
    }
    drain_batch(lock, now_ms);
  }
}

void Exporter::drain(std::unique_lock<std::mutex>& lock) {
  for (;;) {
    const int64_t now_ms = clock_.monotonic_ms();
    if (queue_.empty() || now_ms >= stop_by_ms_) return;
    drain_batch(lock, now_ms);
  }
}

void Exporter::drain_batch(std::unique_lock<std::mutex>& lock, int64_t now_ms) {
  const size_t n = std::min(queue_.size(), options_.max_batch);
  std::vector<core::Span> batch(std::make_move_iterator(queue_.begin()),
                                std::make_move_iterator(queue_.begin() + ptrdiff_t(n)));
  queue_.erase(queue_.begin(), queue_.begin() + ptrdiff_t(n));
  oldest_ms_ = now_ms;  // those left came before now: sent without another linger
  int64_t deadline_ms = now_ms + options_.timeout_ms;
  if (stopping_) deadline_ms = std::min(deadline_ms, stop_by_ms_);
  lock.unlock();
  const bool sent = send(batch, deadline_ms);
  lock.lock();
  if (sent) {
    stats_.exported += int64_t(n);
  } else {
    stats_.dropped += int64_t(n);
    ++stats_.failed_requests;
  }
}

bool Exporter::send(const std::vector<core::Span>& batch, int64_t deadline_ms) {
  std::string why;
  try {
    why = transport_->post(core::otlp_json(resource_, batch), deadline_ms, options_.await_answer);
  } catch (const std::exception& e) {  // no memory for the request
    why = e.what();
  }
  // Told once when exports start failing, once when they work again: a receiver down for an
  // hour is one line, not one per batch.
  const bool failed = !why.empty();
  bool changed = false;
  {
    std::lock_guard lock(mutex_);
    changed = failing_ != failed;
    failing_ = failed;
  }
  if (changed && options_.report)
    options_.report(failed ? "traces: export to " + transport_->where() + " failed (" + why +
                                 "); spans are dropped until it works again"
                           : "traces: export to " + transport_->where() + " works again");
  return !failed;
}

}  // namespace idem::otel
