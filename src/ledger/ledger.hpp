#pragma once
// The ledger API (SPEC §7b): the store offered over HTTP to programs in any language, with the
// claim / heartbeat / finish discipline of `idem begin` and `idem end`, but with leases, since
// the client is no local process whose pid could be checked:
//
//   POST /v1/claim      {"key", "fingerprint"?, "ttl"?, "lease"?, "retry_abandoned"?}
//   POST /v1/heartbeat  {"key", "attempt_token", "lease"?}
//   POST /v1/finish     {"key", "attempt_token", "status", "exit_code"?, "http_status"?,
//                        "stdout_b64"?, "stderr_b64"?}
//   GET    /v1/records/{key}            the record, as `idem show --json` prints it
//   DELETE /v1/records/{key}[?force=1]
//
// Keys are those of `idem run` (one namespace; kind "ledger"). The parsing and checking of
// requests is pure (tested without sockets); Ledger drives the attempt engine.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/record.hpp"
#include "hooks/delivery.hpp"
#include "net/routes.hpp"
#include "store/provider.hpp"
#include "util/clock.hpp"

namespace idem::http {

inline constexpr int64_t k_ledger_default_lease_ms = 5 * 60 * 1000;
inline constexpr int64_t k_ledger_min_lease_ms = 1000;
inline constexpr int64_t k_ledger_default_ttl_ms = 24 * 60 * 60 * 1000;

// A request the ledger refuses with 400: the field at fault ("" for the body as a whole) and why.
struct BadField {
  std::string field;
  std::string detail;
};

struct ClaimCall {
  std::string key;
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
  int exit_code = 0;                 // default: 0 for succeeded, 1 for failed
  std::optional<int> http_status;    // stored as the record's response status
  std::string stdout_bytes, stderr_bytes;
};

template <class Call>
using Parsed = std::variant<Call, BadField>;

// The bodies of the three POST calls. Refused: a body that is not a JSON object, an unknown
// member, a missing or wrongly typed one, a bad key (SPEC §1), a bad duration (SPEC §1's forms, or
// a number of seconds; a lease under 1 s), bad base64, an exit code outside 0-255 or one other
// than 0 for a success, an HTTP status outside 100-599.
Parsed<ClaimCall> parse_claim(std::string_view body);
Parsed<HeartbeatCall> parse_heartbeat(std::string_view body);
Parsed<FinishCall> parse_finish(std::string_view body);

// A path segment's percent-decoding (RFC 3986 §2.1): %XX is the byte XX, any other byte itself.
// nothing for a '%' not followed by two hex digits.
std::optional<std::string> percent_decode(std::string_view text);

// The token of an "Authorization: Bearer TOKEN" value (the scheme case-insensitive), or nothing.
std::optional<std::string_view> bearer_token(std::string_view authorization);

// Equality whose time depends on the lengths only, never on where the bytes first differ.
bool same_secret(std::string_view a, std::string_view b);

// The ledger's calls. Thread-safe: each call leases a store connection of its own.
class Ledger {
 public:
  // `owner` stands for every client: an owner no pid check applies to (pid 0, no boot id), so
  // the lease alone tells whether a client is gone.
  Ledger(std::shared_ptr<store::StoreProvider> stores, core::Owner owner, const util::Clock& clock)
      : stores_(std::move(stores)), owner_(std::move(owner)), clock_(clock) {}

  Answer claim(std::string_view body) const;
  Answer heartbeat(std::string_view body) const;
  Answer finish(std::string_view body) const;
  // `encoded_key`: the path segment after /v1/records/, percent-encoded.
  Answer get(std::string_view encoded_key) const;
  Answer remove(std::string_view encoded_key, bool force) const;

  // The owner the ledger claims for: this host's name, pid 0, no boot id.
  static core::Owner client_owner(const std::string& host);

 private:
  const std::shared_ptr<store::StoreProvider> stores_;
  const core::Owner owner_;
  const util::Clock& clock_;
};

// The route of the ledger's paths (/v1/claim, /v1/heartbeat, /v1/finish, /v1/records/...).
// With a token, every call must carry it as "Authorization: Bearer TOKEN" (401 with
// WWW-Authenticate: Bearer before the body is read); without one (the Unix socket, whose mode is
// the access control) none is asked for.
std::shared_ptr<const Route> ledger_route(std::shared_ptr<const Ledger> ledger,
                                          std::optional<std::string> token);

// Whether the ledger's route takes `path` (a hook there would never be reached).
bool is_ledger_path(std::string_view path);

// Where the bearer token lives: a SQLite store's path + ".token"; for another store, the default
// SQLite path's (store::default_db_path) + ".token".
std::string ledger_token_path(const store::StoreLocation& where);

// The token in the file at `path`, created when absent (32 random bytes as hex, mode 0600, in a
// folder created 0700). Throws StoreError for a file that is a symlink, not owned by this user,
// readable or writable by others, or empty.
std::string load_ledger_token(const std::string& path);

}  // namespace idem::http
