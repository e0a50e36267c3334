#include "core/duration.hpp"

#include <cctype>

#include "core/errors.hpp"

namespace idem::core {

namespace {

constexpr int64_t k_max_duration_ms = int64_t(100) * 365 * 24 * 3600 * 1000;
constexpr int64_t k_max_size = int64_t(1) << 40;

// Parses a run of decimal digits (no sign), rejecting overflow past `limit`.
std::optional<int64_t> take_number(std::string_view text, size_t& pos, int64_t limit) {
  size_t start = pos;
  int64_t value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    value = value * 10 + (text[pos] - '0');
    if (value > limit) return std::nullopt;
    ++pos;
  }
  if (pos == start) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int64_t> parse_duration_ms(std::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t pos = 0;
  auto first = take_number(text, pos, k_max_duration_ms);
  if (!first) return std::nullopt;
  if (pos == text.size()) {
    // A bare number is seconds.
    if (*first > k_max_duration_ms / 1000) return std::nullopt;
    return *first * 1000;
  }
  int64_t total = 0;
  std::optional<int64_t> number = first;
  int64_t last_unit = INT64_MAX;
  for (;;) {
    size_t unit_start = pos;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    int64_t scale;
    if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1000;
    else if (unit == "m") scale = 60 * 1000;
    else if (unit == "h") scale = 3600 * 1000;
    else if (unit == "d") scale = 24 * 3600 * 1000;
    else if (unit == "w") scale = 7 * 24 * 3600 * 1000LL;
    else return std::nullopt;
    // Units must be given largest first, each once: "1h30m", not "30m1h".
    if (scale >= last_unit) return std::nullopt;
    last_unit = scale;
    if (*number > k_max_duration_ms / scale) return std::nullopt;
    total += *number * scale;
    if (total > k_max_duration_ms) return std::nullopt;
    if (pos == text.size()) return total;
    number = take_number(text, pos, k_max_duration_ms);
    if (!number || pos == text.size()) return std::nullopt;
  }
}

int64_t duration_arg(std::string_view flag, std::string_view text) {
  auto ms = parse_duration_ms(text);
  if (!ms)
    throw UsageError("bad duration for " + std::string(flag) + ": '" + std::string(text) +
                     "' (use e.g. 90s, 15m, 24h, 7d or seconds)");
  return *ms;
}

std::optional<int64_t> parse_size(std::string_view text) {
  size_t pos = 0;
  auto number = take_number(text, pos, k_max_size);
  if (!number) return std::nullopt;
  std::string_view unit = text.substr(pos);
  int64_t scale;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "k" || unit == "KiB") scale = 1024;
  else if (unit == "M" || unit == "MiB") scale = 1024 * 1024;
  else if (unit == "G" || unit == "GiB") scale = 1024 * 1024 * 1024;
  else if (unit == "kB" || unit == "KB") scale = 1000;
  else if (unit == "MB") scale = 1000 * 1000;
  else if (unit == "GB") scale = 1000 * 1000 * 1000;
  else return std::nullopt;
  if (*number > k_max_size / scale) return std::nullopt;
  return *number * scale;
}

int64_t size_arg(std::string_view flag, std::string_view text) {
  auto bytes = parse_size(text);
  if (!bytes)
    throw UsageError("bad size for " + std::string(flag) + ": '" + std::string(text) +
                     "' (use e.g. 16MiB, 512KiB or bytes)");
  return *bytes;
}

std::string format_size(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = double(bytes);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == double(int64_t(v)))
    std::snprintf(buf, sizeof buf, "%lld%s", static_cast<long long>(v), units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f%s", v, units[u]);
  return buf;
}

}  // namespace idem::core
