#include "engine/live_feed.hpp"

#include <utility>

#include "core/errors.hpp"

namespace idem::engine {

namespace {
// A wait with nothing to wait for: woken by notify alone.
constexpr int64_t k_idle_wait_ms = 60'000;
}  // namespace

LiveFeed::LiveFeed(store::Store& store, std::mutex& store_mutex, const util::Clock& clock,
                   std::string key, int64_t attempt)
    : store_(store),
      store_mutex_(store_mutex),
      clock_(clock),
      key_(std::move(key)),
      attempt_(attempt) {}

LiveFeed::~LiveFeed() { stop(); }

void LiveFeed::push(core::Stream stream, std::string_view bytes) {
  std::unique_lock lock(mutex_);
  if (broken_ || stopping_ || bytes.empty()) return;
  const int64_t stall_end = clock_.monotonic_ms() + k_live_stall_ms;
  while (pending_.size >= k_live_max_pending && !broken_ && !stopping_) {
    if (clock_.monotonic_ms() >= stall_end) {
      broken_ = true;  // the store keeps the command waiting: followers get the rest at the end
      break;
    }
    clock_.wait_until(space_, lock, stall_end);
  }
  if (broken_ || stopping_) return;
  try {
    if (pending_.size == 0) pending_.offset = offset_;
    core::add_frame(pending_, stream, bytes);
    offset_ += int64_t(bytes.size());
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  } catch (const std::exception&) {
    // No memory or no thread: the command runs on, unpublished (its outcome keeps its output).
    broken_ = true;
    pending_ = core::LiveSegment{};  // maybe a frame cut short: never written
    space_.notify_all();
    return;
  }
  wake_.notify_one();
}

void LiveFeed::loop() {
  std::unique_lock lock(mutex_);
  int64_t next_write_ms = 0;
  while (!stopping_) {
    if (pending_.size == 0) {
      clock_.wait_until(wake_, lock, clock_.monotonic_ms() + k_idle_wait_ms);
      continue;
    }
    // A full segment goes at once: the command waits for room, not for the interval.
    if (pending_.size < k_live_max_pending && clock_.monotonic_ms() < next_write_ms) {
      clock_.wait_until(wake_, lock, next_write_ms);
      continue;
    }
    // The spare's buffer becomes the pending one: a segment's memory is reused, not mapped and
    // faulted in anew each time (256 KiB is past malloc's mmap threshold).
    core::LiveSegment segment = std::move(pending_);
    pending_ = std::move(spare_);
    pending_.size = 0;
    pending_.frames.clear();
    space_.notify_all();
    lock.unlock();
    bool failed = false;
    try {
      std::lock_guard store_lock(store_mutex_);
      // False: the attempt no longer runs (its lease was lost): nothing more to show.
      failed = !store_.append_live(key_, attempt_, segment);
    } catch (const std::exception&) {
      failed = true;
    }
    lock.lock();
    if (failed) {
      broken_ = true;
      pending_ = core::LiveSegment{};
      space_.notify_all();
      return;
    }
    published_ = segment.end();
    spare_ = std::move(segment);
    next_write_ms = clock_.monotonic_ms() + k_live_interval_ms;
  }
}

void LiveFeed::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  space_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t LiveFeed::published() const {
  std::lock_guard lock(mutex_);
  return published_;
}

}  // namespace idem::engine
