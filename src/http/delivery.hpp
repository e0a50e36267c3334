#pragma once
// One webhook delivery, from verified request to answer, independent of the HTTP library: SPEC
// §6's table, row by row.
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http/config.hpp"
#include "store/store.hpp"

namespace idem::http {

struct Delivery {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;  // as received
  std::string body;
  std::optional<std::string> header(std::string_view name) const;  // case-insensitive
};

struct Answer {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // For the log line and metrics: the key (if known) and what happened.
  std::string key;
  std::string outcome;  // ran, replayed, conflict, running, abandoned, rejected, bad_request, ...
  std::string error;    // for the log only, never sent: what failed inside (it may name files)
};

// RFC 9457 problem details.
Answer problem(int status, const std::string& title, const std::string& detail);

// Limits how many handlers of one hook run at once; further deliveries wait in a bounded queue.
class HookSlots {
 public:
  HookSlots(int max_running, int max_waiting) : max_running_(max_running), max_waiting_(max_waiting) {}
  // Reserves a place (running or waiting); false when both are full (answer 503).
  bool reserve();
  void force_reserve();  // a reservation past the limits, for a claim that must run
  // Waits for a running slot for a reservation.
  void acquire();
  void release();           // after acquire()
  void cancel_reservation();  // a reservation that never ran
 private:
  std::mutex mutex_;
  std::condition_variable free_;
  int max_running_;
  int max_waiting_;
  int running_ = 0;
  int reserved_ = 0;  // running + waiting
};

struct DeliveryServices {
  std::string db_path;
  core::Owner owner;  // the daemon
  std::optional<int64_t> busy_timeout_ms;  // how long a locked store is waited for
  // Runs `fn` in the background and counts it as in flight (for the SIGTERM drain).
  std::function<void(std::function<void()>)> spawn;
};

// Decides and answers one delivery for `hook` (path and method already matched, body within the
// hook's limit). May block while the handler runs, unless the hook is async.
Answer deliver(const Hook& hook, HookSlots& slots, const Delivery& delivery,
               const DeliveryServices& services);

}  // namespace idem::http
