#pragma once
// Limits on connections for the daemon that Debian's cpp-httplib (0.11) does not have: a cap on
// connections being served or waiting (further ones are closed at once), and a deadline for
// reading a whole request (a client that trickles bytes is cut off, not just one that stalls).
#include <httplib.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace idem::http {

class ConnectionGuard : public httplib::TaskQueue {
 public:
  ConnectionGuard(int workers, int max_waiting, int64_t request_deadline_ms);
  ~ConnectionGuard() override;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

  // Called on the worker thread serving a connection: the request has been read and is being
  // handled (the deadline pauses), or its answer has been written (a new request may follow).
  static void request_read();
  static void response_written();
  static int64_t shed_count();

 private:
  struct Connection {
    int fd;
    std::string inode;  // "socket:[N]", tells a reused fd number from the connection it was
    int64_t phase_start_ms;
    bool handling = false;
  };
  std::string accepted_socket(int& fd);
  void watch();
  void work();

  std::mutex mutex_;
  std::condition_variable ready_;     // workers: a connection is waiting, or stop
  std::condition_variable watch_stop_;  // the watchdog: stop (it must never take a worker's wakeup)
  std::deque<std::pair<uint64_t, std::function<void()>>> waiting_;
  std::map<uint64_t, Connection> connections_;
  std::vector<std::thread> workers_;
  std::thread watchdog_;
  uint64_t next_id_ = 1;
  int active_ = 0;
  const int max_connections_;
  const int64_t deadline_ms_;
  bool stopping_ = false;
};

}  // namespace idem::http
