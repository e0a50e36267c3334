#pragma once
// The ledger API's pure rules (contract §7b, ledger.hpp): its calls' bodies read and checked, keys
// and paths, the bearer token's header.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/key.hpp"
#include "core/record.hpp"

namespace idem::ledger {

inline constexpr int64_t k_ledger_default_lease_ms = 5 * 60 * 1000;
inline constexpr int64_t k_ledger_min_lease_ms = 1000;
inline constexpr int64_t k_ledger_default_ttl_ms = 24 * 60 * 60 * 1000;

// A request the ledger refuses with 400: the field at fault ("" for the body as a whole) and why.
struct BadField {
  std::string field;
  std::string detail;
};

struct ClaimCall {
  core::Key key;
  std::string fingerprint;  // the client's own description of what it is about to do
  int64_t ttl_ms = k_ledger_default_ttl_ms;
  int64_t lease_ms = k_ledger_default_lease_ms;
  bool retry_abandoned = false;
};

struct HeartbeatCall {
  std::string key;
  std::string attempt_token;
  std::optional<int64_t> lease_ms;  // nothing: the claim's lease
};

struct FinishCall {
  std::string key;
  std::string attempt_token;
  core::Status status = core::Status::succeeded;  // succeeded or failed
  int exit_code = 0;                              // default: 0 for succeeded, 1 for failed
  std::optional<int> http_status;                 // stored as the record's response status
  std::string stdout_bytes, stderr_bytes;
};

template <class Call>
using Parsed = std::variant<Call, BadField>;

// The bodies of the three POST calls. Refused: a body that is not a JSON object, an unknown
// member, a missing or wrongly typed one, a bad key (contract §1), a bad duration (contract §1's
// forms, or a number of seconds; a lease under 1 s), bad base64, an exit code outside 0-255 or one
// other than 0 for a success, an HTTP status outside 100-599.
Parsed<ClaimCall> parse_claim(std::string_view body);
Parsed<HeartbeatCall> parse_heartbeat(std::string_view body);
Parsed<FinishCall> parse_finish(std::string_view body);

// A path segment's percent-decoding (RFC 3986 §2.1): %XX is the byte XX, any other byte itself.
// nothing for a '%' not followed by two hex digits.
std::optional<std::string> percent_decode(std::string_view text);

// The token of an "Authorization: Bearer TOKEN" value (the scheme case-insensitive), or nothing.
std::optional<std::string_view> bearer_token(std::string_view authorization);

// Why a key is not one the ledger takes: an invalid key (contract §1), or one that names a record
// of another front of the daemon (core::served_front_of), which a ledger client could otherwise
// read, finish or remove. nothing for a key it takes.
std::optional<std::string> ledger_key_problem(const std::string& key);
// `text` as a key the ledger takes (ledger_key_problem's rules); nullopt with `why` set if not.
std::optional<core::Key> ledger_key(const std::string& text, std::string& why);

}  // namespace idem::ledger
