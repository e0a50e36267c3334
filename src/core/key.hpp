#pragma once
// Idempotency keys: 1-255 bytes of printable UTF-8, exact (never trimmed or normalised), without
// Unicode's bidirectional controls or a byte order mark (they make one key look like another).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::core {

constexpr size_t k_max_key_bytes = 255;
// `idem serve` names each record PATH#KEY (keys are scoped per hook); a hook's path is at most
// this long, so a record name is at most k_max_record_name_bytes.
constexpr size_t k_max_hook_path_bytes = 255;
constexpr size_t k_max_record_name_bytes = k_max_hook_path_bytes + 1 + k_max_key_bytes;

// Returns why the key is invalid, or nullopt when it is valid.
std::optional<std::string> key_problem(std::string_view key);

// A key that passed key_problem. It is made only here, checked once where a front reads it (an
// argument, a header, a field), so what takes a Key (the engine's request) checks nothing again.
class Key {
 public:
  // `text` as a key; nullopt, with `why` set to key_problem's words, when it is not one.
  static std::optional<Key> parse(std::string_view text, std::string& why);
  // A command-line argument as a key; throws UsageError ("bad key: ...") when it is not one.
  static Key of_argument(std::string_view text);

  const std::string& str() const { return text_; }
  bool operator==(const Key& other) const { return text_ == other.text_; }
  bool operator==(std::string_view text) const { return text_ == text; }

 private:
  explicit Key(std::string_view text) : text_(text) {}
  std::string text_;
};

// What the inspecting commands (show, status, rm) accept: a key, or the name of a record that
// `idem serve` wrote, HOOKPATH#KEY, where HOOKPATH starts with '/', is at most
// k_max_hook_path_bytes of printable ASCII without '?' or '#' (as the config requires) and KEY is
// a valid key; or the name of a proxy's record, proxy#SCOPE#KEY (SCOPE "-" or 16 hex digits).
// Returns why the name is none of these, or nullopt.
std::optional<std::string> record_name_problem(std::string_view name);
// Throws UsageError naming the problem.
void validate_record_name(std::string_view name);

// Whether a key has the shape of a record that `idem serve` names for one of its fronts, and
// which: "hooks" for PATH#KEY (a key that starts with '/' and holds '#'), "proxy" for one that
// starts with "proxy#"; nothing for any other key. The ledger refuses such keys, so that its
// clients cannot read, finish or remove a hook's or the proxy's records.
std::optional<std::string_view> served_front_of(std::string_view key);

// The key used when `run` is given no -k: "cmd:" + hex SHA-256 over the working directory and
// argv with argument boundaries, so a bare `idem run -- ./backup.sh` in cron runs once per TTL.
std::string derived_key(std::string_view cwd, const std::vector<std::string>& argv);

// Renders a key for messages and tables: printable as is, truncated to `max` with an ellipsis.
std::string display_key(std::string_view key, size_t max = 255);

}  // namespace idem::core
