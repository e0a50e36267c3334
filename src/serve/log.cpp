#include "serve/log.hpp"

#include <iostream>
#include <mutex>

#include "util/clock.hpp"

namespace idem::serve {

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

}  // namespace idem::serve
