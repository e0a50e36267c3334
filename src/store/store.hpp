#pragma once
// The storage boundary: domain verbs only. Callers never see SQL. SQLite is the embedded default;
// a PostgreSQL backend implements the same interface with the same semantics.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/decision.hpp"
#include "core/record.hpp"

namespace idem::store {

// Tells whether a recorded owner is provably gone (dead process, rebooted host). Unknown owners
// (another host) must count as alive.
using OwnerGone = std::function<bool(const core::Owner&)>;

struct ClaimRequest {
  std::string key;
  std::string fingerprint;
  std::string kind = "run";
  core::Owner owner;
  int64_t ttl_ms = 0;
  std::string request;  // JSON of what was asked
  core::Policy policy;
  int64_t now_ms = 0;
};

struct ClaimResult {
  core::Verdict verdict;
  int64_t attempt = 0;                  // the claimed attempt when verdict == claim
  std::optional<core::Record> existing;  // the record that decided a non-claim verdict
};

// Which records `list` visits: live (unexpired) ones whose stored status is in `statuses` (empty:
// any; none at all with `live = false`), plus every expired one with `include_expired`.
struct ListQuery {
  std::vector<core::Status> statuses;
  bool live = true;
  bool include_expired = false;
  std::string prefix;  // literal, byte-exact
  int64_t limit = 0;   // 0: no limit
  bool keys_only = false;  // visit records that carry only their key (cheaper: index only)
  int64_t now_ms = 0;
};

// Called once per listed record; returns false to stop the listing.
using RecordVisitor = std::function<bool(const core::Record&)>;

enum class RemoveResult { removed, not_found, running };

struct GcQuery {
  int64_t now_ms = 0;
  int64_t older_than_ms = 0;  // 0: only expired records; else also finished before now - this
  bool dry_run = false;
};

class Store {
 public:
  virtual ~Store() = default;

  // Atomically decides and, for a `claim` verdict, records the key as running under `owner`.
  // A running record whose owner is gone is marked abandoned in the same transaction.
  // The claim is durable when this returns.
  virtual ClaimResult claim(const ClaimRequest& request, const OwnerGone& owner_gone) = 0;

  // Records the outcome of `attempt`. Returns false (and changes nothing) when the key's current
  // attempt is another one: a stale owner can never overwrite a newer attempt.
  virtual bool finish(const std::string& key, int64_t attempt, const core::Outcome& outcome) = 0;

  // Records the process group the command of `attempt` runs in, if that attempt is still the
  // current, running one; returns false (and changes nothing) otherwise. Durable on return: the
  // command starts only after it, so an abandoned attempt always shows the group to check.
  virtual bool set_process_group(const std::string& key, int64_t attempt,
                                 const core::ProcessGroup& group) = 0;

  // Marks `attempt` abandoned if it is still the current, running attempt.
  virtual bool mark_abandoned(const std::string& key, int64_t attempt) = 0;

  virtual std::optional<core::Record> get(const std::string& key) = 0;
  // Newest first (ties by key), streamed: records carry neither output nor request (see get()),
  // and nothing is held but the current row, so the first page costs the same on any store size.
  virtual void list(const ListQuery& query, const RecordVisitor& visit) = 0;
  // Running records are only removed with `force`, or when their owner is gone.
  virtual RemoveResult remove(const std::string& key, bool force, const OwnerGone& owner_gone) = 0;
  // Deletes in small batches, never running records. Returns the count (or would-be count).
  virtual int64_t gc(const GcQuery& query) = 0;
  // Takes the writer lock and lets it go, changing nothing: throws StoreError when the store
  // cannot be written within the busy timeout (a health check).
  virtual void check_writable() = 0;
};

// Where a store lives. Parsed from a URL: `sqlite:PATH` or a bare path (SQLite), or
// `postgres://…` / `postgresql://…` (libpq syntax; recognised, but this build has no PostgreSQL
// backend yet).
struct StoreLocation {
  std::string scheme;  // "sqlite" or "postgres": picks the backend (see open_store)
  std::string target;  // SQLite: the file's path; PostgreSQL: the URL as given
  // For logs and messages: the path, or the URL without its user and password.
  std::string display() const;
};

// Parses a store URL given as `source` (--store, IDEM_STORE: named in the message). Throws
// UsageError for an unknown scheme or an empty path. A value whose first ':' comes before any
// '/' is read as SCHEME:REST, so a relative file name holding ':' needs `sqlite:` or `./`.
StoreLocation parse_store_url(const std::string& url, const std::string& source);

// The store in force (SPEC §2): --store, else $IDEM_STORE, else --db, else $IDEM_DB, else
// ${XDG_STATE_HOME:-$HOME/.local/state}/idem/idem.db. Empty flags count as not given.
StoreLocation store_location(const std::string& store_flag, const std::string& db_flag);

// The XDG default path, or $IDEM_DB when set.
std::string default_db_path();

struct StoreOptions {
  // How long a locked store is waited for; nothing: $IDEM_BUSY_TIMEOUT, else 30 s.
  std::optional<int64_t> busy_timeout_ms;
};

// Opens the store at `where` with the backend its scheme names: the one factory every front
// uses. Throws StoreError (exit 74; transient or permanent, see StoreFailure).
std::unique_ptr<Store> open_store(const StoreLocation& where, const StoreOptions& options = {});

// The SQLite backend (sqlite_store.cpp), used by open_store and by the backend's own tests:
// creates folder (0700) and file (0600) as needed.
std::unique_ptr<Store> open_sqlite_store(const std::string& path,
                                         std::optional<int64_t> busy_timeout_ms = std::nullopt);

}  // namespace idem::store
