// The SQLite store against real files in a private temp dir: the Store interface's verbs, the
// file rules (modes, symlinks, schema version) and one claim winning among concurrent claimers.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <latch>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/output.hpp"
#include "core/record.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

using idem::StoreError;
using idem::core::Outcome;
using idem::core::Owner;
using idem::core::Record;
using idem::core::Status;
using idem::core::Verdict;
using idem::store::ClaimRequest;
using idem::store::ClaimResult;
using idem::store::GcQuery;
using idem::store::ListQuery;
using idem::store::open_sqlite_store;
using idem::store::OwnerGone;
using idem::store::RemoveResult;
using idem::store::Store;
using idem::test::TempDir;

namespace {

constexpr int64_t k_t0 = 1'790'000'000'000;  // a fixed "now": the store never reads a clock
constexpr int64_t k_day = 24 * 3600 * 1000;
const std::string k_fp = std::string(64, 'a');
const std::string k_other_fp = std::string(64, 'b');

const OwnerGone k_alive = [](const Owner&) { return false; };
const OwnerGone k_gone = [](const Owner&) { return true; };

Owner owner(int64_t pid) { return Owner{"host-a", "boot-1", pid, 1000 + pid}; }

ClaimRequest request(const std::string& key, int64_t now_ms = k_t0, int64_t pid = 100) {
  ClaimRequest r;
  r.key = key;
  r.fingerprint = k_fp;
  r.owner = owner(pid);
  r.ttl_ms = k_day;
  r.request = R"({"argv":["true"],"cwd":"/"})";
  r.now_ms = now_ms;
  return r;
}

Outcome outcome(Status status, std::optional<int> code, int64_t finished_ms) {
  Outcome o;
  o.status = status;
  o.exit_code = code;
  o.finished_ms = finished_ms;
  return o;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> keys_of(const std::vector<Record>& records) {
  std::vector<std::string> keys;
  for (const auto& r : records) keys.push_back(r.key);
  return keys;
}

// A claimed-and-finished record.
void put_finished(Store& store, const std::string& key, int64_t started_ms, Status status,
                  int64_t finished_ms, int64_t ttl_ms = k_day) {
  ClaimRequest req = request(key, started_ms);
  req.ttl_ms = ttl_ms;
  ClaimResult c = store.claim(req, k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  REQUIRE(store.finish(key, c.attempt,
                       outcome(status, status == Status::succeeded ? 0 : 1, finished_ms)));
}

// Raw access for what the interface deliberately hides (schema version, journal mode).
struct RawDb {
  explicit RawDb(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            nullptr) == SQLITE_OK);
  }
  ~RawDb() { sqlite3_close(db); }
  std::string text(const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr)
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    return out;
  }
  void exec(const char* sql) { REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == 0); }
  sqlite3* db = nullptr;
};

class UmaskGuard {
 public:
  explicit UmaskGuard(mode_t mask) : old_(::umask(mask)) {}
  ~UmaskGuard() { ::umask(old_); }

 private:
  mode_t old_;
};

}  // namespace

TEST_CASE("store: first claim of a key runs attempt 1 and records it running", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  CHECK_FALSE(store->get("k").has_value());

  ClaimResult c = store->claim(request("k"), k_alive);
  CHECK(c.verdict == Verdict::claim);
  CHECK(c.attempt == 1);
  CHECK_FALSE(c.existing.has_value());

  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->key == "k");
  CHECK(r->fingerprint == k_fp);
  CHECK(r->kind == "run");
  CHECK(r->status == Status::running);
  CHECK(r->attempt == 1);
  CHECK(r->owner.host == "host-a");
  CHECK(r->owner.boot_id == "boot-1");
  CHECK(r->owner.pid == 100);
  CHECK(r->owner.start_ticks == 1100);
  CHECK(r->started_ms == k_t0);
  CHECK(r->finished_ms == 0);
  CHECK(r->ttl_ms == k_day);
  CHECK(r->expires_ms == 0);  // running records never expire
  CHECK_FALSE(r->exit_code.has_value());
  CHECK_FALSE(r->signal.has_value());
  CHECK(r->request == R"({"argv":["true"],"cwd":"/"})");
  CHECK(r->output.empty());
}

TEST_CASE("store: a live running key is refused as running, nothing changes", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);

  int asked = 0;
  Owner asked_about;
  OwnerGone probe = [&](const Owner& o) {
    ++asked;
    asked_about = o;
    return false;
  };
  ClaimResult again = store->claim(request("k", k_t0 + 5, 200), probe);
  CHECK(again.verdict == Verdict::running);
  CHECK(again.attempt == 0);
  CHECK(asked == 1);
  CHECK(asked_about.pid == 100);  // the recorded owner, not the caller
  CHECK(asked_about.start_ticks == 1100);
  REQUIRE(again.existing.has_value());
  CHECK(again.existing->status == Status::running);
  CHECK(again.existing->owner.pid == 100);

  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::running);
  CHECK(r->attempt == 1);
  CHECK(r->owner.pid == 100);
  CHECK(r->started_ms == k_t0);
}

TEST_CASE("store: succeeded outcome is replayed byte-exact", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  ClaimResult c = store->claim(request("k"), k_alive);
  REQUIRE(c.verdict == Verdict::claim);

  idem::core::CapturedOutput captured;
  captured.append(idem::core::Stream::out, std::string("out\0put", 7));
  captured.append(idem::core::Stream::err, "err, no newline");
  captured.append(idem::core::Stream::out, std::string(1, '\0'));
  Outcome o = outcome(Status::succeeded, 0, k_t0 + 1234);
  o.output = captured.encode();
  o.output_bytes = captured.stored_bytes();
  o.note = "fine";
  CHECK(store->finish("k", c.attempt, o));

  ClaimResult replay = store->claim(request("k", k_t0 + 2000, 300), k_alive);
  CHECK(replay.verdict == Verdict::replay);
  REQUIRE(replay.existing.has_value());
  const Record& r = *replay.existing;
  CHECK(r.status == Status::succeeded);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.signal.has_value());
  CHECK_FALSE(r.timed_out);
  CHECK(r.output == o.output);
  CHECK(r.output.size() == o.output.size());
  CHECK(r.output_bytes == captured.stored_bytes());
  CHECK_FALSE(r.output_truncated);
  CHECK(r.finished_ms == k_t0 + 1234);
  CHECK(r.expires_ms == k_t0 + 1234 + k_day);  // TTL counts from the finish
  CHECK(r.note == "fine");
  auto decoded = idem::core::CapturedOutput::decode(r.output, r.output_truncated);
  REQUIRE(decoded.has_value());
  CHECK(decoded->stream_bytes(idem::core::Stream::out) == std::string("out\0put\0", 8));

  // A replay does not count as an attempt and changes nothing.
  auto after = store->get("k");
  REQUIRE(after.has_value());
  CHECK(after->attempt == 1);
  CHECK(after->owner.pid == 100);
  CHECK(after->output == o.output);
}

TEST_CASE("store: signal, timeout and truncation survive the round trip", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  ClaimResult c = store->claim(request("k"), k_alive);
  Outcome o = outcome(Status::failed, std::nullopt, k_t0 + 10);
  o.signal = 15;
  o.timed_out = true;
  o.output_truncated = true;
  o.output_bytes = 3;
  o.output = idem::core::CapturedOutput().encode();
  REQUIRE(store->finish("k", c.attempt, o));
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::failed);
  CHECK_FALSE(r->exit_code.has_value());
  CHECK(r->signal == 15);
  CHECK(r->timed_out);
  CHECK(r->output_truncated);
  CHECK(r->output_bytes == 3);
  CHECK(idem::core::replay_exit_code(*r) == 124);
}

TEST_CASE("store: another fingerprint is a conflict and changes nothing", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  ClaimResult c = store->claim(request("k"), k_alive);
  REQUIRE(store->finish("k", c.attempt, outcome(Status::succeeded, 0, k_t0 + 1)));

  ClaimRequest other = request("k", k_t0 + 2, 200);
  other.fingerprint = k_other_fp;
  ClaimResult conflict = store->claim(other, k_alive);
  CHECK(conflict.verdict == Verdict::conflict);
  REQUIRE(conflict.existing.has_value());
  CHECK(conflict.existing->fingerprint == k_fp);

  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->fingerprint == k_fp);
  CHECK(r->status == Status::succeeded);
  CHECK(r->attempt == 1);
  CHECK(r->owner.pid == 100);

  // Also while running, and even with every policy switch on.
  auto store2 = open_sqlite_store(dir / "other.db");
  REQUIRE(store2->claim(request("k"), k_alive).verdict == Verdict::claim);
  other.policy.replay_failures = true;
  other.policy.retry_abandoned = true;
  CHECK(store2->claim(other, k_alive).verdict == Verdict::conflict);
  CHECK(store2->get("k")->status == Status::running);
  // A conflicting attempt that finds the running owner gone still records the abandonment.
  CHECK(store2->claim(other, k_gone).verdict == Verdict::conflict);
  auto abandoned = store2->get("k");
  CHECK(abandoned->status == Status::abandoned);
  CHECK(abandoned->fingerprint == k_fp);
  CHECK(abandoned->attempt == 1);
}

TEST_CASE("store: a running key whose owner is gone becomes abandoned", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);

  ClaimResult refused = store->claim(request("k", k_t0 + 10, 200), k_gone);
  CHECK(refused.verdict == Verdict::abandoned);
  REQUIRE(refused.existing.has_value());
  CHECK(refused.existing->status == Status::abandoned);
  CHECK(refused.existing->attempt == 1);

  // The mark is stored even though this attempt was refused.
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::abandoned);
  CHECK(r->attempt == 1);
  CHECK(r->owner.pid == 100);
  CHECK(r->expires_ms == 0);

  // Abandoned stays refused, whatever the owner check says and however late it is: it never
  // expires by TTL.
  CHECK(store->claim(request("k", k_t0 + 100 * k_day, 300), k_alive).verdict == Verdict::abandoned);
  CHECK(store->get("k")->attempt == 1);

  // --retry-abandoned claims attempt 2.
  ClaimRequest retry = request("k", k_t0 + 20, 400);
  retry.policy.retry_abandoned = true;
  ClaimResult c = store->claim(retry, k_alive);
  CHECK(c.verdict == Verdict::claim);
  CHECK(c.attempt == 2);
  r = store->get("k");
  CHECK(r->status == Status::running);
  CHECK(r->attempt == 2);
  CHECK(r->owner.pid == 400);
  CHECK(r->started_ms == k_t0 + 20);
}

TEST_CASE("store: retry_abandoned on a running key with a gone owner claims at once", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
  ClaimRequest retry = request("k", k_t0 + 20, 400);
  retry.policy.retry_abandoned = true;
  ClaimResult c = store->claim(retry, k_gone);
  CHECK(c.verdict == Verdict::claim);
  CHECK(c.attempt == 2);
  auto r = store->get("k");
  CHECK(r->status == Status::running);
  CHECK(r->owner.pid == 400);
}

TEST_CASE("store: finish is conditioned on the attempt", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  REQUIRE(store->claim(request("k"), k_alive).attempt == 1);
  // Attempt 1's owner is declared gone; attempt 2 takes over.
  ClaimRequest retry = request("k", k_t0 + 20, 400);
  retry.policy.retry_abandoned = true;
  REQUIRE(store->claim(retry, k_gone).attempt == 2);

  // The stale owner of attempt 1 finishes late: refused, nothing changes.
  Outcome stale = outcome(Status::succeeded, 0, k_t0 + 30);
  stale.output = std::string("\x01\x01\x05\x00\x00\x00stale", 11);
  stale.note = "stale";
  CHECK_FALSE(store->finish("k", 1, stale));
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::running);
  CHECK(r->attempt == 2);
  CHECK(r->owner.pid == 400);
  CHECK(r->finished_ms == 0);
  CHECK(r->expires_ms == 0);
  CHECK_FALSE(r->exit_code.has_value());
  CHECK(r->output.empty());
  CHECK(r->note.empty());

  // A future attempt number is refused too.
  CHECK_FALSE(store->finish("k", 3, stale));
  // A missing key.
  CHECK_FALSE(store->finish("missing", 1, stale));

  // The current attempt finishes, once.
  CHECK(store->finish("k", 2, outcome(Status::failed, 7, k_t0 + 40)));
  r = store->get("k");
  CHECK(r->status == Status::failed);
  CHECK(r->exit_code == 7);
  CHECK_FALSE(store->finish("k", 2, outcome(Status::succeeded, 0, k_t0 + 50)));
  r = store->get("k");
  CHECK(r->status == Status::failed);
  CHECK(r->exit_code == 7);
  CHECK(r->finished_ms == k_t0 + 40);
}

TEST_CASE("store: mark_abandoned only hits the current running attempt", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  REQUIRE(store->claim(request("k"), k_alive).attempt == 1);
  CHECK_FALSE(store->mark_abandoned("k", 2));
  CHECK_FALSE(store->mark_abandoned("missing", 1));
  CHECK(store->get("k")->status == Status::running);
  CHECK(store->mark_abandoned("k", 1));
  CHECK(store->get("k")->status == Status::abandoned);
  CHECK_FALSE(store->mark_abandoned("k", 1));  // already abandoned
  // A finished record is never turned into an abandoned one.
  REQUIRE(store->claim(request("done"), k_alive).attempt == 1);
  REQUIRE(store->finish("done", 1, outcome(Status::succeeded, 0, k_t0 + 1)));
  CHECK_FALSE(store->mark_abandoned("done", 1));
  CHECK(store->get("done")->status == Status::succeeded);
  // The abandoned attempt's owner cannot finish it afterwards.
  CHECK_FALSE(store->finish("k", 1, outcome(Status::succeeded, 0, k_t0 + 2)));
  CHECK(store->get("k")->status == Status::abandoned);
}

TEST_CASE("store: failed outcomes run again unless replay_failures", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  ClaimResult c = store->claim(request("k"), k_alive);
  Outcome failed = outcome(Status::failed, 3, k_t0 + 100);
  failed.output = std::string("\x01\x02\x04\x00\x00\x00oops", 10);
  failed.output_bytes = 4;
  failed.note = "n";
  REQUIRE(store->finish("k", c.attempt, failed));

  ClaimRequest replaying = request("k", k_t0 + 200);
  replaying.policy.replay_failures = true;
  ClaimResult replay = store->claim(replaying, k_alive);
  CHECK(replay.verdict == Verdict::replay);
  REQUIRE(replay.existing.has_value());
  CHECK(replay.existing->exit_code == 3);
  CHECK(replay.existing->output == failed.output);
  CHECK(idem::core::replay_exit_code(*replay.existing) == 3);

  ClaimResult again = store->claim(request("k", k_t0 + 300, 500), k_alive);
  CHECK(again.verdict == Verdict::claim);
  CHECK(again.attempt == 2);
  // The new attempt starts clean: nothing of the failed outcome is left.
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::running);
  CHECK(r->attempt == 2);
  CHECK(r->owner.pid == 500);
  CHECK(r->started_ms == k_t0 + 300);
  CHECK(r->finished_ms == 0);
  CHECK(r->expires_ms == 0);
  CHECK_FALSE(r->exit_code.has_value());
  CHECK(r->output.empty());
  CHECK(r->output_bytes == 0);
  CHECK(r->note.empty());
}

TEST_CASE("store: an expired record behaves as absent", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  ClaimRequest req = request("k");
  req.ttl_ms = 1000;
  ClaimResult c = store->claim(req, k_alive);
  REQUIRE(store->finish("k", c.attempt, outcome(Status::succeeded, 0, k_t0 + 500)));
  CHECK(store->get("k")->expires_ms == k_t0 + 1500);

  CHECK(store->claim(request("k", k_t0 + 1499), k_alive).verdict == Verdict::replay);
  // At the expiry instant the record is gone, even for another fingerprint: claim attempt 1.
  ClaimRequest later = request("k", k_t0 + 1500, 600);
  later.fingerprint = k_other_fp;
  ClaimResult fresh = store->claim(later, k_alive);
  CHECK(fresh.verdict == Verdict::claim);
  CHECK(fresh.attempt == 1);
  auto r = store->get("k");
  CHECK(r->fingerprint == k_other_fp);
  CHECK(r->owner.pid == 600);
  CHECK(r->status == Status::running);
  CHECK(r->expires_ms == 0);
}

TEST_CASE("store: list filters and orders newest first", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  put_finished(*store, "a/1", k_t0 + 1000, Status::succeeded, k_t0 + 1100);
  put_finished(*store, "a/2", k_t0 + 2000, Status::failed, k_t0 + 2100);
  REQUIRE(store->claim(request("b/1", k_t0 + 3000), k_alive).verdict == Verdict::claim);
  put_finished(*store, "a/3", k_t0 + 4000, Status::succeeded, k_t0 + 4100, 1);  // expires at once
  put_finished(*store, "c/2", k_t0 + 5000, Status::succeeded, k_t0 + 5100);
  put_finished(*store, "c/1", k_t0 + 5000, Status::succeeded, k_t0 + 5200);  // same start as c/2
  REQUIRE(store->claim(request("d/1", k_t0 + 6000), k_alive).verdict == Verdict::claim);
  REQUIRE(store->mark_abandoned("d/1", 1));

  ListQuery q;
  q.now_ms = k_t0 + 10000;
  using V = std::vector<std::string>;
  CHECK(keys_of(store->list(q)) == V{"d/1", "c/1", "c/2", "b/1", "a/2", "a/1"});

  q.include_expired = true;
  CHECK(keys_of(store->list(q)) == V{"d/1", "c/1", "c/2", "a/3", "b/1", "a/2", "a/1"});

  q.statuses = {Status::succeeded};
  CHECK(keys_of(store->list(q)) == V{"c/1", "c/2", "a/3", "a/1"});
  q.include_expired = false;
  CHECK(keys_of(store->list(q)) == V{"c/1", "c/2", "a/1"});

  q.statuses = {Status::failed, Status::running};
  CHECK(keys_of(store->list(q)) == V{"b/1", "a/2"});
  q.statuses = {Status::abandoned};
  CHECK(keys_of(store->list(q)) == V{"d/1"});

  q.statuses.clear();
  q.prefix = "a/";
  CHECK(keys_of(store->list(q)) == V{"a/2", "a/1"});
  q.include_expired = true;
  CHECK(keys_of(store->list(q)) == V{"a/3", "a/2", "a/1"});
  q.prefix = "zzz";
  CHECK(store->list(q).empty());

  q.prefix.clear();
  q.limit = 2;
  CHECK(keys_of(store->list(q)) == V{"d/1", "c/1"});
  q.limit = 1;
  q.statuses = {Status::succeeded};
  q.prefix = "a/";
  CHECK(keys_of(store->list(q)) == V{"a/3"});

  // Listed records carry their fields but no output.
  q = ListQuery{};
  q.now_ms = k_t0 + 10000;
  q.prefix = "a/2";
  auto listed = store->list(q);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].status == Status::failed);
  CHECK(listed[0].exit_code == 1);
  CHECK(listed[0].started_ms == k_t0 + 2000);
  CHECK(listed[0].finished_ms == k_t0 + 2100);
  CHECK(listed[0].output.empty());
}

TEST_CASE("store: list prefix is literal, not a pattern", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  for (const char* key : {"x%y", "xay", "x_z", "xbz", "X%y", "\xc3\xa9-1", "\xc3\xa9-2", "e-1"})
    REQUIRE(store->claim(request(key), k_alive).verdict == Verdict::claim);
  ListQuery q;
  q.now_ms = k_t0;
  using V = std::vector<std::string>;
  q.prefix = "x%";
  CHECK(keys_of(store->list(q)) == V{"x%y"});
  q.prefix = "x_";
  CHECK(keys_of(store->list(q)) == V{"x_z"});
  q.prefix = "\xc3\xa9";
  CHECK(keys_of(store->list(q)) == V{"\xc3\xa9-1", "\xc3\xa9-2"});
  q.prefix = "x%y";
  CHECK(keys_of(store->list(q)) == V{"x%y"});
  q.prefix = "x%yz";
  CHECK(store->list(q).empty());
}

TEST_CASE("store: remove", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  CHECK(store->remove("missing", false, k_alive) == RemoveResult::not_found);
  CHECK(store->remove("missing", true, k_alive) == RemoveResult::not_found);

  put_finished(*store, "done", k_t0, Status::succeeded, k_t0 + 1);
  CHECK(store->remove("done", false, k_alive) == RemoveResult::removed);
  CHECK_FALSE(store->get("done").has_value());
  CHECK(store->remove("done", false, k_alive) == RemoveResult::not_found);
  // The next attempt runs again as attempt 1.
  ClaimResult c = store->claim(request("done", k_t0 + 10), k_alive);
  CHECK(c.verdict == Verdict::claim);
  CHECK(c.attempt == 1);

  REQUIRE(store->claim(request("live"), k_alive).verdict == Verdict::claim);
  CHECK(store->remove("live", false, k_alive) == RemoveResult::running);
  auto kept = store->get("live");
  REQUIRE(kept.has_value());
  CHECK(kept->status == Status::running);
  CHECK(store->remove("live", true, k_alive) == RemoveResult::removed);
  CHECK_FALSE(store->get("live").has_value());

  // A running record whose owner is gone needs no force.
  REQUIRE(store->claim(request("dead"), k_alive).verdict == Verdict::claim);
  CHECK(store->remove("dead", false, k_gone) == RemoveResult::removed);
  CHECK_FALSE(store->get("dead").has_value());

  // Abandoned and expired records are removed without force.
  REQUIRE(store->claim(request("aband"), k_alive).verdict == Verdict::claim);
  REQUIRE(store->mark_abandoned("aband", 1));
  CHECK(store->remove("aband", false, k_alive) == RemoveResult::removed);
  put_finished(*store, "old", k_t0, Status::succeeded, k_t0 + 1, 1);
  CHECK(store->remove("old", false, k_alive) == RemoveResult::removed);
}

TEST_CASE("store: gc removes expired records, never running ones", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  put_finished(*store, "expired-ok", k_t0, Status::succeeded, k_t0 + 10, 100);
  put_finished(*store, "expired-failed", k_t0, Status::failed, k_t0 + 10, 100);
  put_finished(*store, "fresh", k_t0, Status::succeeded, k_t0 + 10, k_day);
  REQUIRE(store->claim(request("running"), k_alive).verdict == Verdict::claim);
  REQUIRE(store->claim(request("abandoned"), k_alive).verdict == Verdict::claim);
  REQUIRE(store->mark_abandoned("abandoned", 1));

  GcQuery q;
  q.now_ms = k_t0 + 1000;
  q.dry_run = true;
  CHECK(store->gc(q) == 2);
  CHECK(store->get("expired-ok").has_value());  // a dry run deletes nothing

  q.dry_run = false;
  CHECK(store->gc(q) == 2);
  CHECK_FALSE(store->get("expired-ok").has_value());
  CHECK_FALSE(store->get("expired-failed").has_value());
  CHECK(store->get("fresh").has_value());
  CHECK(store->get("running").has_value());
  CHECK(store->get("abandoned").has_value());
  CHECK(store->gc(q) == 0);

  // However far in the future: running records stay.
  q.now_ms = k_t0 + 1000 * k_day;
  CHECK(store->gc(q) == 1);  // "fresh" has expired by then
  CHECK(store->get("running").has_value());
  CHECK(store->get("abandoned").has_value());  // abandoned records do not expire
}

TEST_CASE("store: gc --older-than removes finished records older than the cutoff", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  put_finished(*store, "old", k_t0, Status::succeeded, k_t0 + 1000);
  put_finished(*store, "new", k_t0, Status::succeeded, k_t0 + 60000);
  put_finished(*store, "old-failed", k_t0, Status::failed, k_t0 + 2000);
  ClaimRequest running = request("running", k_t0);
  REQUIRE(store->claim(running, k_alive).verdict == Verdict::claim);

  GcQuery q;
  q.now_ms = k_t0 + 100000;
  q.older_than_ms = 50000;  // cutoff: k_t0 + 50000
  q.dry_run = true;
  CHECK(store->gc(q) == 2);
  q.dry_run = false;
  CHECK(store->gc(q) == 2);
  CHECK_FALSE(store->get("old").has_value());
  CHECK_FALSE(store->get("old-failed").has_value());
  CHECK(store->get("new").has_value());
  CHECK(store->get("running").has_value());

  q.older_than_ms = 1;
  CHECK(store->gc(q) == 1);
  CHECK(store->get("running").has_value());

  // Abandoned records never expire, but --older-than counts from when their attempt started.
  REQUIRE(store->claim(request("abandoned", k_t0 + 200000), k_alive).verdict == Verdict::claim);
  REQUIRE(store->mark_abandoned("abandoned", 1));
  q.now_ms = k_t0 + 300000;
  q.older_than_ms = 150000;  // cutoff k_t0 + 150000: started after it, kept
  CHECK(store->gc(q) == 0);
  q.older_than_ms = 50000;  // cutoff k_t0 + 250000
  CHECK(store->gc(q) == 1);
  CHECK_FALSE(store->get("abandoned").has_value());
  CHECK(store->get("running").has_value());
}

TEST_CASE("store: gc in batches removes everything due and truncates the WAL", "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto store = open_sqlite_store(path);
  const int n = 1234;  // more than two batches
  for (int i = 0; i < n; ++i)
    put_finished(*store, "e" + std::to_string(i), k_t0, Status::succeeded, k_t0 + 1, 1);
  for (int i = 0; i < 3; ++i)
    REQUIRE(store->claim(request("r" + std::to_string(i)), k_alive).verdict == Verdict::claim);

  GcQuery q;
  q.now_ms = k_t0 + 10;
  q.older_than_ms = 1;
  q.dry_run = true;
  CHECK(store->gc(q) == n);
  q.dry_run = false;
  CHECK(store->gc(q) == n);
  ListQuery all;
  all.include_expired = true;
  all.now_ms = q.now_ms;
  auto left = store->list(all);
  CHECK(keys_of(left) == std::vector<std::string>{"r0", "r1", "r2"});
  for (const auto& r : left) CHECK(r.status == Status::running);

  struct stat st {};
  REQUIRE(::stat((path + "-wal").c_str(), &st) == 0);
  CHECK(st.st_size == 0);
}

TEST_CASE("store: a large outcome checkpoints and truncates the WAL", "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto store = open_sqlite_store(path);
  ClaimResult c = store->claim(request("big"), k_alive);
  idem::core::CapturedOutput captured;
  captured.append(idem::core::Stream::out, std::string(5 * 1024 * 1024, 'x'));
  Outcome o = outcome(Status::succeeded, 0, k_t0 + 1);
  o.output = captured.encode();
  o.output_bytes = captured.stored_bytes();
  REQUIRE(store->finish("big", c.attempt, o));
  struct stat st {};
  REQUIRE(::stat((path + "-wal").c_str(), &st) == 0);
  CHECK(st.st_size == 0);
  auto r = store->get("big");
  REQUIRE(r.has_value());
  CHECK(r->output == o.output);
}

TEST_CASE("store: records survive reopening; WAL journal", "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    auto store = open_sqlite_store(path);
    put_finished(*store, "k", k_t0, Status::succeeded, k_t0 + 5);
    REQUIRE(store->claim(request("r"), k_alive).verdict == Verdict::claim);
  }
  auto store = open_sqlite_store(path);
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::succeeded);
  CHECK(store->get("r")->status == Status::running);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA journal_mode") == "wal");
  CHECK(raw.text("PRAGMA integrity_check") == "ok");
  CHECK(raw.text("PRAGMA user_version") != "0");
}

TEST_CASE("store: folder 0700 and files 0600 under umask 022", "[store][files]") {
  TempDir dir;
  UmaskGuard mask(022);
  const std::string state = dir / "state";
  const std::string folder = state + "/idem";
  const std::string path = folder + "/idem.db";
  auto store = open_sqlite_store(path);
  put_finished(*store, "k", k_t0, Status::succeeded, k_t0 + 1);  // makes the WAL and shm exist

  CHECK(mode_of(state) == 0700);
  CHECK(mode_of(folder) == 0700);
  CHECK(mode_of(path) == 0600);
  REQUIRE(exists(path + "-wal"));
  CHECK(mode_of(path + "-wal") == 0600);
  REQUIRE(exists(path + "-shm"));
  CHECK(mode_of(path + "-shm") == 0600);
}

TEST_CASE("store: an existing world-readable database is made private", "[store][files]") {
  TempDir dir;
  UmaskGuard mask(022);
  const std::string path = dir / "idem.db";
  { std::ofstream create(path); }
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  auto store = open_sqlite_store(path);
  CHECK(mode_of(path) == 0600);
  REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
}

TEST_CASE("store: a symlinked database path is refused", "[store][files]") {
  TempDir dir;
  const std::string real = dir / "real.db";
  const std::string link = dir / "link.db";
  {
    auto store = open_sqlite_store(real);
    REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
  }
  REQUIRE(::symlink(real.c_str(), link.c_str()) == 0);
  CHECK_THROWS_AS(open_sqlite_store(link), StoreError);
  try {
    open_sqlite_store(link);
  } catch (const StoreError& e) {
    CHECK(e.code() == idem::k_exit_store);
    CHECK(std::string(e.what()).find("symlink") != std::string::npos);
  }
  // The target is untouched and still usable.
  auto store = open_sqlite_store(real);
  CHECK(store->get("k").has_value());

  // A dangling symlink is refused too, and nothing is created at its target.
  const std::string dangling = dir / "dangling.db";
  const std::string target = dir / "target.db";
  REQUIRE(::symlink(target.c_str(), dangling.c_str()) == 0);
  CHECK_THROWS_AS(open_sqlite_store(dangling), StoreError);
  CHECK_FALSE(exists(target));
}

TEST_CASE("store: a database owned by another user is refused", "[store][files]") {
  if (::geteuid() != 0) {
    WARN("needs root to give a file to another user; skipped");
    return;
  }
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    auto store = open_sqlite_store(path);
    REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
  }
  REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  try {
    open_sqlite_store(path);
  } catch (const StoreError& e) {
    CHECK(std::string(e.what()).find("owned by uid 65534") != std::string::npos);
  }
}

TEST_CASE("store: a schema newer than this binary is refused", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec("CREATE TABLE future (x); PRAGMA user_version = 999;");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  try {
    open_sqlite_store(path);
  } catch (const StoreError& e) {
    CHECK(e.code() == idem::k_exit_store);
    CHECK(std::string(e.what()).find("999") != std::string::npos);
  }
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == "999");  // left as it was
}

TEST_CASE("store: an older (empty, version 0) database is migrated in place", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec("PRAGMA user_version = 0;");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == "3");
}

TEST_CASE("store: a version 1 store keeps its records when migrated to version 2", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    // The version 1 schema, frozen here as it was published.
    RawDb raw(path);
    raw.exec(R"sql(
      CREATE TABLE records (
        key TEXT NOT NULL PRIMARY KEY, fingerprint TEXT NOT NULL, kind TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'abandoned')),
        attempt INTEGER NOT NULL, owner_host TEXT NOT NULL, owner_boot_id TEXT NOT NULL,
        owner_pid INTEGER NOT NULL, owner_start INTEGER NOT NULL, started_at INTEGER NOT NULL,
        finished_at INTEGER, ttl_ms INTEGER NOT NULL, expires_at INTEGER, exit_code INTEGER,
        signal INTEGER, timed_out INTEGER NOT NULL DEFAULT 0, output BLOB,
        output_bytes INTEGER NOT NULL DEFAULT 0, output_truncated INTEGER NOT NULL DEFAULT 0,
        request TEXT NOT NULL DEFAULT '{}', note TEXT NOT NULL DEFAULT '');
      INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                           owner_pid, owner_start, started_at, finished_at, ttl_ms, exit_code)
      VALUES ('old', 'fp', 'run', 'succeeded', 3, 'h', 'b', 1, 1, 1000, 2000, 86400000, 7);
      PRAGMA user_version = 1;)sql");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  auto old = store->get("old");
  REQUIRE(old);
  CHECK(old->attempt == 3);
  CHECK(old->exit_code == 7);
  CHECK_FALSE(old->http_status);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == "3");
}

TEST_CASE("store: a corrupt file is a StoreError, not a crash", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    std::ofstream garbage(path, std::ios::binary);
    for (int i = 0; i < 4096; ++i) garbage.put(char(i * 31 + 7));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
}

TEST_CASE("store: a folder in place of the database is refused", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  REQUIRE(::mkdir(path.c_str(), 0700) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  // A file where the folder should be.
  const std::string blocker = dir / "file";
  { std::ofstream create(blocker); }
  CHECK_THROWS_AS(open_sqlite_store(blocker + "/idem.db"), StoreError);
}

TEST_CASE("store: concurrent claims from several connections: exactly one wins",
          "[store][concurrency]") {
  TempDir dir;
  // Either every round races on a database file nobody has opened yet (creation, WAL switch and
  // migration race too), or all rounds share one file created up front.
  const bool fresh_file = GENERATE(true, false);
  const std::string shared_path = dir / "idem.db";
  if (!fresh_file) open_sqlite_store(shared_path);

  constexpr int k_threads = 8;
  constexpr int k_rounds = 10;
  for (int round = 0; round < k_rounds; ++round) {
    const std::string key = "race-" + std::to_string(round);
    const std::string path =
        fresh_file ? dir / ("fresh-" + std::to_string(round) + ".db") : shared_path;
    std::latch start(k_threads);
    std::atomic<int> claims{0}, running{0}, other{0}, errors{0};
    std::atomic<int64_t> winner_pid{0};
    std::vector<std::string> error_texts(k_threads);
    std::vector<std::thread> threads;
    for (int t = 0; t < k_threads; ++t) {
      threads.emplace_back([&, t] {
        try {
          // Opening races too (a fresh file is created and migrated by whoever comes first).
          start.arrive_and_wait();
          auto store = open_sqlite_store(path);
          ClaimResult c = store->claim(request(key, k_t0, 1000 + t), k_alive);
          if (c.verdict == Verdict::claim) {
            ++claims;
            winner_pid = 1000 + t;
            if (c.attempt != 1) ++other;
          } else if (c.verdict == Verdict::running) {
            ++running;
          } else {
            ++other;
          }
        } catch (const std::exception& e) {
          error_texts[size_t(t)] = e.what();
          ++errors;
        }
      });
    }
    for (auto& th : threads) th.join();
    std::string errors_seen;
    for (const auto& text : error_texts)
      if (!text.empty()) errors_seen += "\n  " + text;
    INFO("round " << round << (fresh_file ? " (fresh file)" : " (existing file)") << errors_seen);
    CHECK(errors == 0);
    CHECK(claims == 1);
    CHECK(running == k_threads - 1);
    CHECK(other == 0);

    auto store = open_sqlite_store(path);
    auto r = store->get(key);
    REQUIRE(r.has_value());
    CHECK(r->status == Status::running);
    CHECK(r->attempt == 1);
    CHECK(r->owner.pid == winner_pid.load());
    RawDb raw(path);
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
}

TEST_CASE("store: concurrent retries of a failed key: exactly one new attempt",
          "[store][concurrency]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    auto store = open_sqlite_store(path);
    put_finished(*store, "k", k_t0, Status::failed, k_t0 + 1);
  }
  constexpr int k_threads = 6;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < k_threads; ++t) stores.push_back(open_sqlite_store(path));
  std::latch start(k_threads);
  std::atomic<int> claims{0}, running{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      try {
        start.arrive_and_wait();
        ClaimResult c = stores[size_t(t)]->claim(request("k", k_t0 + 10, 2000 + t), k_alive);
        if (c.verdict == Verdict::claim && c.attempt == 2) ++claims;
        if (c.verdict == Verdict::running) ++running;
      } catch (const std::exception&) {
        ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(claims == 1);
  CHECK(running == k_threads - 1);
  CHECK(stores[0]->get("k")->attempt == 2);
}

TEST_CASE("store: default_db_path", "[store]") {
  struct Env {
    const char* name;
    std::optional<std::string> saved;
  };
  std::vector<Env> saved;
  for (const char* name : {"IDEM_DB", "XDG_STATE_HOME", "HOME"}) {
    const char* v = std::getenv(name);
    saved.push_back({name, v ? std::optional<std::string>(v) : std::nullopt});
  }
  setenv("HOME", "/home/u", 1);
  unsetenv("XDG_STATE_HOME");
  unsetenv("IDEM_DB");
  CHECK(idem::store::default_db_path() == "/home/u/.local/state/idem/idem.db");
  setenv("XDG_STATE_HOME", "/xdg", 1);
  CHECK(idem::store::default_db_path() == "/xdg/idem/idem.db");
  setenv("XDG_STATE_HOME", "relative", 1);  // not absolute: ignored, as the XDG spec says
  CHECK(idem::store::default_db_path() == "/home/u/.local/state/idem/idem.db");
  setenv("IDEM_DB", "/some/where.db", 1);
  CHECK(idem::store::default_db_path() == "/some/where.db");
  setenv("IDEM_DB", "", 1);
  CHECK(idem::store::default_db_path() == "/home/u/.local/state/idem/idem.db");
  unsetenv("IDEM_DB");
  unsetenv("XDG_STATE_HOME");
  unsetenv("HOME");
  CHECK_THROWS_AS(idem::store::default_db_path(), StoreError);

  for (const auto& env : saved) {
    if (env.saved)
      setenv(env.name, env.saved->c_str(), 1);
    else
      unsetenv(env.name);
  }
}
