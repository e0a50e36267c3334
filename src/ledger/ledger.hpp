#pragma once
// The ledger API (contract §7b): the store offered over HTTP to programs in any language, with the
// claim / heartbeat / finish discipline of `idem begin` and `idem end`, but with leases, since
// the client is no local process whose pid could be checked:
//
//   POST /v1/claim      {"key", "fingerprint"?, "ttl"?, "lease"?, "retry_abandoned"?}
//   POST /v1/heartbeat  {"key", "attempt_token", "lease"?}
//   POST /v1/finish     {"key", "attempt_token", "status", "exit_code"?, "http_status"?,
//                        "stdout_b64"?, "stderr_b64"?}
//   GET    /v1/records/{key}            the record, as `idem show --json` prints it
//   GET    /v1/records/{key}/attempts   its attempt history, as `idem log --json` prints it
//   DELETE /v1/records/{key}[?force=1]
//
// Keys are those of `idem run` (one namespace; kind "ledger"). The parsing and checking of
// requests is pure (rules.hpp, tested without sockets); Ledger drives the attempt engine.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/record.hpp"
#include "engine/attempt.hpp"
#include "front/answer.hpp"
#include "front/route.hpp"
#include "ledger/rules.hpp"
#include "store/provider.hpp"
#include "util/clock.hpp"

namespace idem::ledger {

// The ledger's calls. Thread-safe: each call leases a store connection of its own.
class Ledger {
 public:
  // `owner` stands for every client: an owner no pid check applies to (pid 0, no boot id), so
  // the lease alone tells whether a client is gone.
  // `spans`: where its attempts' spans go (SPEC §12); null: no traces.
  Ledger(std::shared_ptr<store::StoreProvider> stores, core::Owner owner, const util::Clock& clock,
         std::shared_ptr<engine::SpanSink> spans = nullptr)
      : stores_(std::move(stores)),
        owner_(std::move(owner)),
        clock_(clock),
        spans_(std::move(spans)) {}

  front::Answer claim(std::string_view body) const;
  front::Answer heartbeat(std::string_view body) const;
  front::Answer finish(std::string_view body) const;
  // `encoded_key`: the path segment after /v1/records/, percent-encoded.
  front::Answer get(std::string_view encoded_key) const;
  front::Answer attempts(std::string_view encoded_key) const;
  front::Answer remove(std::string_view encoded_key, bool force) const;

  // The owner the ledger claims for: this host's name, pid 0, no boot id.
  static core::Owner client_owner(const std::string& host);

 private:
  // The record of a /v1/records/ path with its history (get), or its history alone (attempts).
  front::Answer found(std::string_view encoded_key, bool history_only) const;

  const std::shared_ptr<store::StoreProvider> stores_;
  const core::Owner owner_;
  const util::Clock& clock_;
  const std::shared_ptr<engine::SpanSink> spans_;
  // The front of its attempts: its clients keep their leases.
  engine::Front front() const;
};

// The route of the ledger's paths (/v1/claim, /v1/heartbeat, /v1/finish, /v1/records/...).
// With a token, every call must carry it as "Authorization: Bearer TOKEN" (401 with
// WWW-Authenticate: Bearer before the body is read); without one (the Unix socket, whose mode is
// the access control) none is asked for.
std::shared_ptr<const front::Route> ledger_route(std::shared_ptr<const Ledger> ledger,
                                                 std::optional<std::string> token);

// Whether the ledger's route takes `path` (a hook there would never be reached).
bool is_ledger_path(std::string_view path);

// A file beside the store: a SQLite store's path + `suffix`; for another store, the default
// SQLite path's (store::default_db_path) + `suffix`. The ledger's bearer token is ".token", the
// delivery-log page's token ".ui-token".
std::string token_path_beside(const store::StoreLocation& where, const std::string& suffix);
std::string ledger_token_path(const store::StoreLocation& where);

// The token in the file at `path`, created when absent (32 random bytes as hex, mode 0600, in a
// folder created 0700). Throws StoreError, naming `what` ("ledger token file"), for a file that is
// a symlink, not owned by this user, readable or writable by others, or empty.
std::string load_token_file(const std::string& path, const std::string& what);
std::string load_ledger_token(const std::string& path);

}  // namespace idem::ledger
