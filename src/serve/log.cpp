#include "serve/log.hpp"

#include <iostream>
#include <mutex>

#include "util/clock.hpp"

namespace idem::http {

namespace {
std::mutex g_log_mutex;
}  // namespace

void log_line(const nlohmann::json& j) {
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  std::lock_guard lock(g_log_mutex);
  std::cerr << line << std::flush;
}

std::string now_iso() { return util::iso8601_utc(util::SystemClock().now_ms()); }

Response to_response(Answer a, const std::string& hook) {
  Response r;
  r.status = a.status;
  r.content_type = a.content_type.empty() ? "text/plain" : std::move(a.content_type);
  r.body = std::move(a.body);
  r.headers = std::move(a.headers);
  // A handler's stdout is answered as JSON or text, never sniffed into a page by a browser.
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (!hook.empty()) r.log_fields.emplace_back("hook", hook);
  if (!a.key.empty()) r.log_fields.emplace_back("key", a.key);
  if (!a.outcome.empty()) r.log_fields.emplace_back("outcome", a.outcome);
  if (!a.error.empty()) r.log_fields.emplace_back("error", a.error);
  return r;
}

}  // namespace idem::http
