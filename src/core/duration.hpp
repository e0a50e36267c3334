#pragma once
// Parsing of the durations and sizes users type.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idem::core {

// "90s", "15m", "24h", "7d", "250ms", or a bare number of seconds; also compound forms such as
// "1h30m". Returns milliseconds, or nullopt for anything malformed, negative or above 100 years.
std::optional<int64_t> parse_duration_ms(std::string_view text);
// Throws UsageError naming the flag and the text.
int64_t duration_arg(std::string_view flag, std::string_view text);

// "16MiB", "512KiB", "1GiB", "10MB", "100kB", "4096", "1M" (K/M/G alone mean KiB/MiB/GiB).
// Returns bytes, or nullopt for anything malformed or above 1 TiB.
std::optional<int64_t> parse_size(std::string_view text);
int64_t size_arg(std::string_view flag, std::string_view text);

// Human forms, the inverse of the parsers for display: 24h, 1h 30m; 16MiB.
std::string format_size(int64_t bytes);

}  // namespace idem::core
