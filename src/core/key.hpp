#pragma once
// Idempotency keys: 1-255 bytes of printable UTF-8, exact (never trimmed or normalised).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::core {

constexpr size_t k_max_key_bytes = 255;

// Returns why the key is invalid, or nullopt when it is valid.
std::optional<std::string> key_problem(std::string_view key);
// Throws UsageError naming the problem.
void validate_key(std::string_view key);

// The key used when `run` is given no -k: "cmd:" + hex SHA-256 over the working directory and
// argv with argument boundaries, so a bare `idem run -- ./backup.sh` in cron runs once per TTL.
std::string derived_key(std::string_view cwd, const std::vector<std::string>& argv);

// Renders a key for messages and tables: printable as is, truncated to `max` with an ellipsis.
std::string display_key(std::string_view key, size_t max = 255);

}  // namespace idem::core
