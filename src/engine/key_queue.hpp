#pragma once
// A work queue that keeps the items of one key in order (per-key FIFO): an item is handed out only
// once every earlier item of its key has been handed out and finished, so several workers never
// run two items of one key at once nor a later one first, while items of other keys go to
// whichever worker is free. `idem each --jobs N` feeds it its input's lines: a redelivered line
// must find the outcome of the earlier one, never run before it.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/key.hpp"

namespace idem::engine {

// Item: movable, with a member `key`: a core::Key (or a plain std::string).
template <typename Item>
class KeyQueue {
 public:
  // Holds at most `max_held` items not yet handed out (ready, or waiting behind their key). Once
  // `stop` is non-zero, push returns false and pop nothing (they look at it whenever they wake).
  KeyQueue(size_t max_held, const std::atomic<int>& stop) : max_held_(max_held), stop_(stop) {}

  // Waits for room; false when a stop came first.
  bool push(Item item) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return held_ < max_held_ || stop_ != 0; });
    if (stop_ != 0) return false;
    ++held_;
    // A key with an entry has an earlier item ready or out: this one waits behind it.
    auto [entry, fresh] = waiting_.try_emplace(text_of(item.key));
    if (fresh)
      ready_.push_back(std::move(item));
    else
      entry->second.push_back(std::move(item));
    lock.unlock();
    changed_.notify_all();
    return true;
  }

  // Waits for an item that may run now; nothing once closed with nothing left to hand out (every
  // key finished), or when a stop came. The caller calls finish(item.key) when done with it.
  std::optional<Item> pop() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock,
                  [&] { return !ready_.empty() || stop_ != 0 || (closed_ && waiting_.empty()); });
    if (ready_.empty() || stop_ != 0) {
      lock.unlock();
      changed_.notify_all();  // the reader may be waiting for room
      return std::nullopt;
    }
    std::optional<Item> item(std::move(ready_.front()));
    ready_.pop_front();
    --held_;
    lock.unlock();
    changed_.notify_all();
    return item;
  }

  // The item of `key` handed out last is done: the next one of that key, if any, is ready.
  void finish(const std::string& key) {
    {
      std::lock_guard lock(mutex_);
      auto entry = waiting_.find(key);
      if (entry == waiting_.end()) return;
      if (entry->second.empty()) {
        waiting_.erase(entry);
      } else {
        ready_.push_back(std::move(entry->second.front()));
        entry->second.pop_front();
      }
    }
    changed_.notify_all();
  }

  // No more pushes: pop returns nothing once everything was handed out and finished.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
  }

 private:
  static const std::string& text_of(const std::string& key) { return key; }
  static const std::string& text_of(const core::Key& key) { return key.str(); }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> ready_;
  // A key with an item ready or out, and the items of that key behind it, in input order.
  std::unordered_map<std::string, std::deque<Item>> waiting_;
  size_t held_ = 0;  // ready_ and every waiting deque
  size_t max_held_;
  const std::atomic<int>& stop_;
  bool closed_ = false;
};

}  // namespace idem::engine
