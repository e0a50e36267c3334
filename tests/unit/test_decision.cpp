// The decision table: claim, replay, conflict, running or abandoned, and the next attempt number.
#include <catch2/catch.hpp>
#include <string>

#include "core/decision.hpp"
#include "core/record.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_decision {

using idem::core::decide;
using idem::core::Decision;
using idem::core::Policy;
using idem::core::Record;
using idem::core::Status;
using idem::core::Verdict;

namespace {

const std::string k_fp = std::string(64, 'a');
const std::string k_other_fp = std::string(64, 'b');
constexpr int64_t k_now = 1'790'000'000'000;

Record make(Status status, int64_t attempt = 1, int64_t expires_ms = 0) {
  Record r;
  r.key = "k";
  r.fingerprint = k_fp;
  r.status = status;
  r.attempt = attempt;
  r.expires_ms = expires_ms;
  return r;
}

Policy policy(bool replay_failures, bool retry_abandoned) {
  Policy p;
  p.replay_failures = replay_failures;
  p.retry_abandoned = retry_abandoned;
  return p;
}

const Policy k_default{};
const Policy k_all = policy(true, true);

}  // namespace

TEST_CASE("decide: no record claims attempt 1", "[decision]") {
  for (bool gone : {false, true}) {
    for (const Policy& p : {k_default, k_all}) {
      Decision d = decide(nullptr, k_fp, k_now, gone, p);
      CHECK(d.verdict == Verdict::claim);
      CHECK_FALSE(d.mark_abandoned);
      CHECK(d.next_attempt == 1);
    }
  }
}

TEST_CASE("decide: an expired record behaves as absent, even with another fingerprint",
          "[decision]") {
  for (Status s : {Status::succeeded, Status::failed}) {
    Record r = make(s, 4, k_now - 1);
    Decision d = decide(&r, k_fp, k_now, false, k_default);
    CHECK(d.verdict == Verdict::claim);
    CHECK(d.next_attempt == 1);  // the count starts again
    CHECK_FALSE(d.mark_abandoned);
    Decision other = decide(&r, k_other_fp, k_now, false, k_default);
    CHECK(other.verdict == Verdict::claim);
    CHECK(other.next_attempt == 1);
  }
  // Expiry is inclusive: expires_ms == now is expired.
  Record at_edge = make(Status::succeeded, 1, k_now);
  CHECK(decide(&at_edge, k_fp, k_now, false, k_default).verdict == Verdict::claim);
  Record not_yet = make(Status::succeeded, 1, k_now + 1);
  CHECK(decide(&not_yet, k_fp, k_now, false, k_default).verdict == Verdict::replay);
}

TEST_CASE("decide: another fingerprint is a conflict before anything else", "[decision]") {
  for (Status s : {Status::running, Status::succeeded, Status::failed, Status::abandoned}) {
    for (const Policy& p : {k_default, k_all, policy(true, false), policy(false, true)}) {
      INFO(idem::core::to_string(s)
           << " replay_failures=" << p.replay_failures << " retry_abandoned=" << p.retry_abandoned);
      Record r = make(s, 2, s == Status::running || s == Status::abandoned ? 0 : k_now + 1000);
      Decision alive = decide(&r, k_other_fp, k_now, false, p);
      CHECK(alive.verdict == Verdict::conflict);
      CHECK_FALSE(alive.mark_abandoned);
      CHECK(alive.next_attempt == 3);
      Decision gone = decide(&r, k_other_fp, k_now, true, p);
      CHECK(gone.verdict == Verdict::conflict);
      // A running record whose owner is gone is still marked abandoned, conflict or not.
      CHECK(gone.mark_abandoned == (s == Status::running));
    }
  }
}

TEST_CASE("decide: running with a live owner is refused as running", "[decision]") {
  Record r = make(Status::running, 1);
  for (const Policy& p : {k_default, k_all}) {
    Decision d = decide(&r, k_fp, k_now, false, p);
    CHECK(d.verdict == Verdict::running);
    CHECK_FALSE(d.mark_abandoned);
    CHECK(d.next_attempt == 2);
  }
}

TEST_CASE("decide: running with a gone owner becomes abandoned", "[decision]") {
  Record r = make(Status::running, 3);
  Decision refused = decide(&r, k_fp, k_now, true, k_default);
  CHECK(refused.verdict == Verdict::abandoned);
  CHECK(refused.mark_abandoned);
  CHECK(refused.next_attempt == 4);

  Decision refused_too = decide(&r, k_fp, k_now, true, policy(true, false));
  CHECK(refused_too.verdict == Verdict::abandoned);
  CHECK(refused_too.mark_abandoned);

  Decision retried = decide(&r, k_fp, k_now, true, policy(false, true));
  CHECK(retried.verdict == Verdict::claim);
  CHECK(retried.mark_abandoned);
  CHECK(retried.next_attempt == 4);
}

TEST_CASE("decide: abandoned is refused unless retry_abandoned", "[decision]") {
  Record r = make(Status::abandoned, 2);
  for (bool gone : {false, true}) {
    Decision refused = decide(&r, k_fp, k_now, gone, k_default);
    CHECK(refused.verdict == Verdict::abandoned);
    CHECK_FALSE(refused.mark_abandoned);  // already abandoned
    CHECK(refused.next_attempt == 3);
    CHECK(decide(&r, k_fp, k_now, gone, policy(true, false)).verdict == Verdict::abandoned);
    Decision retried = decide(&r, k_fp, k_now, gone, policy(false, true));
    CHECK(retried.verdict == Verdict::claim);
    CHECK_FALSE(retried.mark_abandoned);
    CHECK(retried.next_attempt == 3);
  }
  // Abandoned records never expire by TTL (expires_ms 0), however late it is.
  CHECK(decide(&r, k_fp, INT64_MAX, false, k_default).verdict == Verdict::abandoned);
}

TEST_CASE("decide: succeeded is replayed under every policy", "[decision]") {
  Record r = make(Status::succeeded, 1, k_now + 1000);
  for (bool gone : {false, true}) {
    for (const Policy& p : {k_default, k_all, policy(true, false), policy(false, true)}) {
      Decision d = decide(&r, k_fp, k_now, gone, p);
      CHECK(d.verdict == Verdict::replay);
      CHECK_FALSE(d.mark_abandoned);
    }
  }
}

TEST_CASE("decide: failed runs again unless replay_failures", "[decision]") {
  Record r = make(Status::failed, 1, k_now + 1000);
  Decision again = decide(&r, k_fp, k_now, false, k_default);
  CHECK(again.verdict == Verdict::claim);
  CHECK_FALSE(again.mark_abandoned);
  CHECK(again.next_attempt == 2);
  CHECK(decide(&r, k_fp, k_now, false, policy(false, true)).verdict == Verdict::claim);

  Decision replayed = decide(&r, k_fp, k_now, false, policy(true, false));
  CHECK(replayed.verdict == Verdict::replay);
  CHECK_FALSE(replayed.mark_abandoned);
  CHECK(decide(&r, k_fp, k_now, false, k_all).verdict == Verdict::replay);

  Record fifth = make(Status::failed, 5, k_now + 1000);
  CHECK(decide(&fifth, k_fp, k_now, false, k_default).next_attempt == 6);
}

TEST_CASE("decide: a failure recorded under replay_failures is final for every later attempt",
          "[decision]") {
  Record r = make(Status::failed, 1, k_now + 1000);
  r.replay_failures = true;
  for (const Policy& p : {k_default, policy(true, false), policy(false, true), k_all}) {
    INFO("replay_failures=" << p.replay_failures << " retry_abandoned=" << p.retry_abandoned);
    Decision d = decide(&r, k_fp, k_now, false, p);
    CHECK(d.verdict == Verdict::replay);
    CHECK_FALSE(d.mark_abandoned);
  }
  // It stays a conflict for another fingerprint, and expires like any outcome.
  CHECK(decide(&r, k_other_fp, k_now, false, k_default).verdict == Verdict::conflict);
  CHECK(decide(&r, k_fp, k_now + 1000, false, k_default).verdict == Verdict::claim);
  // The policy only speaks of failures: others decide as they always did.
  for (Status s : {Status::succeeded, Status::abandoned}) {
    Record other = make(s, 1, s == Status::abandoned ? 0 : k_now + 1000);
    other.replay_failures = true;
    Record plain = make(s, 1, s == Status::abandoned ? 0 : k_now + 1000);
    for (const Policy& p : {k_default, k_all})
      CHECK(decide(&other, k_fp, k_now, false, p).verdict ==
            decide(&plain, k_fp, k_now, false, p).verdict);
  }
  Record running = make(Status::running);
  running.replay_failures = true;
  CHECK(decide(&running, k_fp, k_now, false, k_default).verdict == Verdict::running);
}

TEST_CASE("decide: owner_gone only matters for a running record", "[decision]") {
  for (Status s : {Status::succeeded, Status::failed, Status::abandoned}) {
    Record r = make(s, 1, s == Status::abandoned ? 0 : k_now + 1000);
    for (const Policy& p : {k_default, k_all}) {
      Decision alive = decide(&r, k_fp, k_now, false, p);
      Decision gone = decide(&r, k_fp, k_now, true, p);
      CHECK(alive.verdict == gone.verdict);
      CHECK(alive.next_attempt == gone.next_attempt);
      CHECK_FALSE(gone.mark_abandoned);
    }
  }
}

TEST_CASE("verdict names", "[decision]") {
  CHECK(to_string(Verdict::claim) == "claim");
  CHECK(to_string(Verdict::replay) == "replay");
  CHECK(to_string(Verdict::conflict) == "conflict");
  CHECK(to_string(Verdict::running) == "running");
  CHECK(to_string(Verdict::abandoned) == "abandoned");
}

TEST_CASE("decide: retry_only_attempt retries only the abandoned attempt the caller checked",
          "[decision]") {
  Policy checked = policy(false, true);
  checked.retry_only_attempt = 3;
  Record abandoned = make(Status::abandoned, 3);
  Decision d = decide(&abandoned, k_fp, k_now, false, checked);
  CHECK(d.verdict == Verdict::claim);
  CHECK(d.next_attempt == 4);

  // Another attempt became abandoned meanwhile: its processes were not checked.
  Record newer = make(Status::abandoned, 4);
  CHECK(decide(&newer, k_fp, k_now, false, checked).verdict == Verdict::abandoned);
  Record running_gone = make(Status::running, 4);
  d = decide(&running_gone, k_fp, k_now, true, checked);
  CHECK(d.verdict == Verdict::abandoned);
  CHECK(d.mark_abandoned);

  // -1: no attempt checked yet, so none is retried.
  Policy unchecked = policy(false, true);
  unchecked.retry_only_attempt = -1;
  CHECK(decide(&abandoned, k_fp, k_now, false, unchecked).verdict == Verdict::abandoned);
  CHECK(decide(nullptr, k_fp, k_now, false, unchecked).verdict == Verdict::claim);

  Record running_checked = make(Status::running, 3);
  d = decide(&running_checked, k_fp, k_now, true, checked);
  CHECK(d.verdict == Verdict::claim);
  CHECK(d.mark_abandoned);
}

TEST_CASE("decide: a running record whose lease ran out is abandoned, on any host", "[decision]") {
  Record r = make(Status::running, 3);
  r.lease_expires_ms = k_now;
  // The lease runs out at its expiry instant, whatever the pid check says.
  Decision d = decide(&r, k_fp, k_now, false, k_default);
  CHECK(d.verdict == Verdict::abandoned);
  CHECK(d.mark_abandoned);
  CHECK(d.next_attempt == 4);
  d = decide(&r, k_fp, k_now + 1, false, policy(false, true));
  CHECK(d.verdict == Verdict::claim);
  CHECK(d.mark_abandoned);
  CHECK(d.next_attempt == 4);
  // Another fingerprint is still a conflict, and the dead attempt is still marked.
  d = decide(&r, k_other_fp, k_now, false, k_all);
  CHECK(d.verdict == Verdict::conflict);
  CHECK(d.mark_abandoned);
}

TEST_CASE("decide: a lease not yet run out keeps the attempt running, whatever this host sees",
          "[decision]") {
  Record r = make(Status::running);
  r.lease_expires_ms = k_now + 1;
  for (bool gone : {false, true}) {
    // An unexpired lease is never overruled by local evidence: the owner this host judges gone
    // may be a process of a twin host or of another container that it mistakes for its own.
    for (const Policy& p : {k_default, k_all}) {
      Decision d = decide(&r, k_fp, k_now, gone, p);
      CHECK(d.verdict == Verdict::running);
      CHECK_FALSE(d.mark_abandoned);
      d = decide(&r, k_other_fp, k_now, gone, p);
      CHECK(d.verdict == Verdict::conflict);
      CHECK_FALSE(d.mark_abandoned);
    }
    // Once it ran out it is abandoned, however alive the owner looks.
    Decision d = decide(&r, k_fp, k_now + 1, !gone, k_default);
    CHECK(d.verdict == Verdict::abandoned);
    CHECK(d.mark_abandoned);
  }
  // No lease (0): only the pid check counts, however late it is.
  r.lease_expires_ms = 0;
  Decision d = decide(&r, k_fp, k_now + 100 * 365LL * 24 * 3600 * 1000, false, k_all);
  CHECK(d.verdict == Verdict::running);
  d = decide(&r, k_fp, k_now, true, k_default);
  CHECK(d.verdict == Verdict::abandoned);
  CHECK(d.mark_abandoned);
}

TEST_CASE("owner_counts_gone: the lease decides alone; without one, the local check",
          "[decision]") {
  int asked = 0;
  auto gone = [&](const idem::core::Owner&) {
    ++asked;
    return true;
  };
  Record r = make(Status::running);
  r.lease_expires_ms = k_now + 1;
  CHECK_FALSE(idem::core::owner_counts_gone(r, k_now, gone));
  CHECK(
      idem::core::owner_counts_gone(r, k_now + 1, [](const idem::core::Owner&) { return false; }));
  CHECK(asked == 0);
  r.lease_expires_ms = 0;
  CHECK(idem::core::owner_counts_gone(r, k_now, gone));
  CHECK(asked == 1);
  for (Status s : {Status::succeeded, Status::failed, Status::abandoned}) {
    Record ended = make(s);
    CHECK_FALSE(idem::core::owner_counts_gone(ended, k_now, gone));
  }
  CHECK(asked == 1);
}

TEST_CASE("decide: a lease means nothing once the attempt has ended", "[decision]") {
  for (Status s : {Status::succeeded, Status::failed, Status::abandoned}) {
    Record r = make(s, 2);
    r.lease_expires_ms = k_now - 1;
    Decision expired_lease = decide(&r, k_fp, k_now, false, k_default);
    r.lease_expires_ms = 0;
    Decision no_lease = decide(&r, k_fp, k_now, false, k_default);
    CHECK(expired_lease.verdict == no_lease.verdict);
    CHECK_FALSE(expired_lease.mark_abandoned);
  }
}

TEST_CASE("decide: rerun_failed_only_attempt runs a failure again only once its group was checked",
          "[decision]") {
  Record failed = make(Status::failed, 3, k_now + 1000);
  failed.process_group = {4242, 77};
  Policy unchecked;
  unchecked.rerun_failed_only_attempt = -1;
  Decision d = decide(&failed, k_fp, k_now, false, unchecked);
  CHECK(d.verdict == Verdict::leftovers);
  CHECK_FALSE(d.mark_abandoned);
  // The checked attempt runs again; another one (a newer failure) is checked in turn.
  Policy checked;
  checked.rerun_failed_only_attempt = 3;
  d = decide(&failed, k_fp, k_now, false, checked);
  CHECK(d.verdict == Verdict::claim);
  CHECK(d.next_attempt == 4);
  Record newer = failed;
  newer.attempt = 4;
  CHECK(decide(&newer, k_fp, k_now, false, checked).verdict == Verdict::leftovers);
  // No group recorded, no check asked for (0), a final failure, another fingerprint: as before.
  Record no_group = make(Status::failed, 3, k_now + 1000);
  CHECK(decide(&no_group, k_fp, k_now, false, unchecked).verdict == Verdict::claim);
  CHECK(decide(&failed, k_fp, k_now, false, k_default).verdict == Verdict::claim);
  unchecked.replay_failures = true;
  CHECK(decide(&failed, k_fp, k_now, false, unchecked).verdict == Verdict::replay);
  CHECK(decide(&failed, k_other_fp, k_now, false, unchecked).verdict == Verdict::conflict);
  CHECK(to_string(Verdict::leftovers) == "leftovers");
}

TEST_CASE("decide: a failure's group is checked even after its record expired", "[decision]") {
  Record failed = make(Status::failed, 3, k_now - 1);  // expired a moment ago
  failed.process_group = {4242, 77};
  Policy unchecked;
  unchecked.rerun_failed_only_attempt = -1;
  Decision d = decide(&failed, k_fp, k_now, false, unchecked);
  CHECK(d.verdict == Verdict::leftovers);
  // Once checked, as absent: the attempt count starts again.
  Policy checked;
  checked.rerun_failed_only_attempt = 3;
  d = decide(&failed, k_fp, k_now, false, checked);
  CHECK(d.verdict == Verdict::claim);
  CHECK(d.next_attempt == 1);
  // Another fingerprint, no check asked for, no group, a success: absent, as before.
  CHECK(decide(&failed, k_other_fp, k_now, false, checked).verdict == Verdict::claim);
  CHECK(decide(&failed, k_fp, k_now, false, k_default).verdict == Verdict::claim);
  Record no_group = make(Status::failed, 3, k_now - 1);
  CHECK(decide(&no_group, k_fp, k_now, false, unchecked).verdict == Verdict::claim);
  Record done = make(Status::succeeded, 3, k_now - 1);
  done.process_group = {4242, 77};
  CHECK(decide(&done, k_fp, k_now, false, unchecked).verdict == Verdict::claim);
}

}  // namespace unit_decision
