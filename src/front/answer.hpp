#pragma once
// What a front answers a request with, before the daemon makes it a Response: the status and
// body, and what its log line and metrics say of it. Shared by every front.
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "net/server.hpp"

namespace idem::front {

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
// The problem answering `e`, thrown by a store call (front/store_failure.hpp); `key` for the log.
Answer store_failure(const std::exception& e, const std::string& key);

// Sets a header as Go's Header().Set does: replacing one of the same name (any case).
void set_header(std::vector<std::pair<std::string, std::string>>& headers, const std::string& name,
                const std::string& value);

// The Response of an Answer, with its key, outcome and error as log fields (and `hook`'s name,
// when it is one). A Content-Type among the headers is the one sent; else the Answer's, if any.
// Every answer carries X-Content-Type-Options: nosniff: a handler's output is answered as what
// it is, never sniffed into a page by a browser.
net::Response to_response(Answer a, const std::string& hook = "");

}  // namespace idem::front
