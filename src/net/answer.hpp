#pragma once
// What a front answers a request with, before the daemon makes it a Response: the status and
// body, and what its log line and metrics say of it. Shared by the hooks, the webhook hooks and
// the ledger.
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace idem::http {

struct Answer {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // For the log line and metrics: the key (if known) and what happened.
  std::string key;
  // ran, replayed, conflict, running, abandoned, rejected, bad_request, unkeyed (ran without a
  // key, under "no_key": "run"), ...
  std::string outcome;
  std::string error;  // for the log only, never sent: what failed inside (it may name files)
};

// RFC 9457 problem details.
Answer problem(int status, const std::string& title, const std::string& detail);
// The problem answering `e`, thrown by a store call (net/store_failure.hpp); `key` for the log.
Answer store_failure(const std::exception& e, const std::string& key);

}  // namespace idem::http
