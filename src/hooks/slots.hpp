#pragma once
// A hook's slots: how many of its handlers run at once, and how many deliveries may wait.
#include <condition_variable>
#include <mutex>

namespace idem::hooks {

// Limits how many handlers of one hook run at once; further deliveries wait in a bounded queue.
class HookSlots {
 public:
  HookSlots(int max_running, int max_waiting)
      : max_running_(max_running), max_waiting_(max_waiting) {}
  // Reserves a place (running or waiting); false when both are full (answer 503).
  bool reserve();
  void force_reserve();  // a reservation past the limits, for a claim that must run
  bool has_room();       // whether reserve() would succeed now
  // The limits it was made with (a reload keeps slots whose limits did not change).
  int max_running() const { return max_running_; }
  int max_waiting() const { return max_waiting_; }
  // Waits for a running slot for a reservation.
  void acquire();
  void release();             // after acquire()
  void cancel_reservation();  // a reservation that never ran

  // A running slot for a reservation, held for its scope: acquired (waiting for one) when made,
  // released when it goes, however the run ends.
  class Running {
   public:
    explicit Running(HookSlots& slots) : slots_(slots) { slots_.acquire(); }
    ~Running() { slots_.release(); }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;

   private:
    HookSlots& slots_;
  };

 private:
  std::mutex mutex_;
  std::condition_variable free_;
  const int max_running_;
  const int max_waiting_;
  int running_ = 0;
  int reserved_ = 0;  // running + waiting
};

}  // namespace idem::hooks
