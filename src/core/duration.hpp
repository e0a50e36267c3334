#pragma once
// Parsing of the durations and sizes users type.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idem::core {

// The longest duration idem takes: 100 years (36500d). Longer is refused as too large.
constexpr int64_t k_max_duration_ms = int64_t(100) * 365 * 24 * 3600 * 1000;

enum class DurationProblem { none, malformed, too_long };
struct ParsedDuration {
  int64_t ms = 0;
  DurationProblem problem = DurationProblem::none;
};

// "90s", "15m", "24h", "7d", "250ms", or a bare number of seconds; also compound forms such as
// "1h30m". A well-formed duration above k_max_duration_ms (however many digits) is too_long;
// anything else not of this form (a sign, an unknown unit) is malformed.
ParsedDuration parse_duration(std::string_view text);
// The same, nullopt for any problem.
std::optional<int64_t> parse_duration_ms(std::string_view text);
// Throws UsageError naming the flag and the text, and saying "too large" for a duration too long.
int64_t duration_arg(std::string_view flag, std::string_view text);
// The same, and a UsageError "FLAG must be above zero" for a zero duration (--ttl 0, --timeout 0).
int64_t positive_duration_arg(std::string_view flag, std::string_view text);

// "16MiB", "512KiB", "1GiB", "10MB", "100kB", "4096", "1M" (K/M/G alone mean KiB/MiB/GiB).
// Returns bytes, or nullopt for anything malformed or above 1 TiB.
std::optional<int64_t> parse_size(std::string_view text);
int64_t size_arg(std::string_view flag, std::string_view text);

// Human forms, the inverse of the parsers for display: 24h, 1h 30m; 16MiB.
std::string format_size(int64_t bytes);

}  // namespace idem::core
