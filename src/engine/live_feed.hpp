#pragma once
// Publishes a running attempt's output to the store as it comes (Store::append_live, SPEC §10),
// so that followers anywhere see it live. The runner hands it each piece its capture kept
// (push, on the running thread); a thread of the feed's own, started by the first piece (a
// command that writes nothing costs nothing), writes what has come as one segment, at most one
// write every k_live_interval_ms unless k_live_max_pending bytes wait (then at once). Bounded: push
// waits while k_live_max_pending bytes wait to be written (the command then waits on its pipe, as
// for a slow terminal), and a store that fails or stays busy past k_live_stall_ms ends the
// publishing: followers then get the rest from the stored output once the attempt ends, at the same
// offsets.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/live.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

namespace idem::engine {

inline constexpr int64_t k_live_interval_ms = 20;
inline constexpr int64_t k_live_max_pending = 256 * 1024;
inline constexpr int64_t k_live_stall_ms = 5000;

class LiveFeed {
 public:
  // Writes through `store` with `store_mutex` held (the attempt's engine shares its connection
  // with its lease keeper), for attempt `attempt` of `key`.
  LiveFeed(store::Store& store, std::mutex& store_mutex, const util::Clock& clock, std::string key,
           int64_t attempt);
  ~LiveFeed();  // stop()s
  LiveFeed(const LiveFeed&) = delete;
  LiveFeed& operator=(const LiveFeed&) = delete;

  void push(core::Stream stream, std::string_view bytes);
  // Ends the feed: what waits unwritten is dropped (the outcome's output holds it). Joins the
  // thread. Safe to call twice.
  void stop();
  // Bytes written to the store so far (after stop(): in all).
  int64_t published() const;

 private:
  void loop();

  store::Store& store_;
  std::mutex& store_mutex_;
  const util::Clock& clock_;
  const std::string key_;
  const int64_t attempt_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;   // the thread: bytes came, or stop
  std::condition_variable_any space_;  // push: the pending segment was taken
  core::LiveSegment pending_;
  core::LiveSegment spare_;  // the last segment written, its buffer kept for the next one
  int64_t offset_ = 0;       // bytes pushed
  int64_t published_ = 0;    // bytes written
  bool stopping_ = false;
  bool broken_ = false;  // the store failed: push drops everything from now on
  std::thread thread_;
};

}  // namespace idem::engine
