#include "hooks/slots.hpp"

namespace idem::hooks {

bool HookSlots::reserve() {
  std::lock_guard lock(mutex_);
  if (reserved_ >= max_running_ + max_waiting_) return false;
  ++reserved_;
  return true;
}

bool HookSlots::has_room() {
  std::lock_guard lock(mutex_);
  return reserved_ < max_running_ + max_waiting_;
}

void HookSlots::force_reserve() {
  std::lock_guard lock(mutex_);
  ++reserved_;
}

void HookSlots::acquire() {
  std::unique_lock lock(mutex_);
  free_.wait(lock, [&] { return running_ < max_running_; });
  ++running_;
}

void HookSlots::release() {
  {
    std::lock_guard lock(mutex_);
    --running_;
    --reserved_;
  }
  free_.notify_one();
}

void HookSlots::cancel_reservation() {
  std::lock_guard lock(mutex_);
  --reserved_;
}

}  // namespace idem::hooks
