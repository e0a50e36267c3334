#include "core/duration.hpp"

#include <algorithm>
#include <cctype>

#include "core/errors.hpp"

namespace idem::core {

namespace {

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

// Past the largest duration, every value is the same: one more than it. So a number of any
// length, and products and sums of such, never overflow, and a well-formed duration too long is
// told from a malformed one.
constexpr int64_t k_too_long = k_max_duration_ms + 1;

// Like take_number, but a number past the largest duration is k_too_long.
std::optional<int64_t> take_duration_number(std::string_view text, size_t& pos) {
  size_t start = pos;
  int64_t value = 0;
  for (; pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])); ++pos)
    value = std::min(k_too_long, value * 10 + (text[pos] - '0'));
  if (pos == start) return std::nullopt;
  return value;
}

int64_t saturated_product(int64_t number, int64_t scale) {
  return number > k_max_duration_ms / scale ? k_too_long : number * scale;
}

}  // namespace

ParsedDuration parse_duration(std::string_view text) {
  constexpr ParsedDuration k_malformed{0, DurationProblem::malformed};
  size_t pos = 0;
  auto number = take_duration_number(text, pos);
  if (!number) return k_malformed;
  int64_t total = 0;
  if (pos == text.size()) {
    total = saturated_product(*number, 1000);  // a bare number is seconds
  } else {
    int64_t last_unit = INT64_MAX;
    for (;;) {
      size_t unit_start = pos;
      while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) ++pos;
      std::string_view unit = text.substr(unit_start, pos - unit_start);
      int64_t scale;
      if (unit == "ms")
        scale = 1;
      else if (unit == "s")
        scale = 1000;
      else if (unit == "m")
        scale = 60 * 1000;
      else if (unit == "h")
        scale = 3600 * 1000;
      else if (unit == "d")
        scale = 24 * 3600 * 1000;
      else if (unit == "w")
        scale = 7 * 24 * 3600 * 1000LL;
      else
        return k_malformed;
      // Units must be given largest first, each once: "1h30m", not "30m1h".
      if (scale >= last_unit) return k_malformed;
      last_unit = scale;
      total = std::min(k_too_long, total + saturated_product(*number, scale));
      if (pos == text.size()) break;
      number = take_duration_number(text, pos);
      if (!number || pos == text.size()) return k_malformed;
    }
  }
  if (total > k_max_duration_ms) return {0, DurationProblem::too_long};
  return {total, DurationProblem::none};
}

std::optional<int64_t> parse_duration_ms(std::string_view text) {
  ParsedDuration parsed = parse_duration(text);
  if (parsed.problem != DurationProblem::none) return std::nullopt;
  return parsed.ms;
}

int64_t duration_arg(std::string_view flag, std::string_view text) {
  ParsedDuration parsed = parse_duration(text);
  if (parsed.problem == DurationProblem::too_long)
    throw UsageError("duration for " + std::string(flag) + " is too large: '" + std::string(text) +
                     "' (at most 100 years: 36500d)");
  if (parsed.problem != DurationProblem::none)
    throw UsageError("bad duration for " + std::string(flag) + ": '" + std::string(text) +
                     "' (use e.g. 90s, 15m, 24h, 7d or seconds)");
  return parsed.ms;
}

int64_t positive_duration_arg(std::string_view flag, std::string_view text) {
  const int64_t ms = duration_arg(flag, text);
  if (ms == 0) throw UsageError(std::string(flag) + " must be above zero");
  return ms;
}

std::optional<int64_t> parse_size(std::string_view text) {
  size_t pos = 0;
  auto number = take_number(text, pos, k_max_size);
  if (!number) return std::nullopt;
  std::string_view unit = text.substr(pos);
  int64_t scale;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "k" || unit == "KiB")
    scale = 1024;
  else if (unit == "M" || unit == "MiB")
    scale = 1024 * 1024;
  else if (unit == "G" || unit == "GiB")
    scale = 1024 * 1024 * 1024;
  else if (unit == "kB" || unit == "KB")
    scale = 1000;
  else if (unit == "MB")
    scale = 1000 * 1000;
  else if (unit == "GB")
    scale = 1000 * 1000 * 1000;
  else
    return std::nullopt;
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
