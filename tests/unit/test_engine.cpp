// The attempt engine with its seams faked: a real SQLite store in a temp dir, a fake clock (waits,
// TTLs and leases pass without sleeping) and a fake runner (scripted outcomes, no processes).
#include <poll.h>
#include <sqlite3.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "core/errors.hpp"
#include "core/output.hpp"
#include "engine/attempt.hpp"
#include "engine/command_effect.hpp"
#include "fakes.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_engine {

using idem::core::Record;
using idem::core::Status;
using idem::engine::AttemptRequest;
using idem::engine::Claimed;
using idem::engine::ClaimVerdict;
using idem::engine::CommandEffect;
using idem::engine::Engine;
using idem::test::env_of;
using idem::test::FakeClock;
using idem::test::FakeRunner;
using idem::test::TempDir;

namespace {

idem::core::Owner owner(int64_t pid) { return {"host-a", "boot-a", pid, 100 + pid}; }

struct Fixture {
  TempDir dir;
  std::unique_ptr<idem::store::Store> store = idem::store::open_sqlite_store(dir.path() + "/s.db");
  FakeClock clock;
  FakeRunner runner;
  bool owners_gone = false;  // what the same-host liveness check says of every recorded owner
  Engine engine{*store, clock, [this](const idem::core::Owner&) { return owners_gone; }};

  AttemptRequest request(const std::string& key, int64_t pid = 10) const {
    AttemptRequest r(idem::core::Key::of_argument(key));
    r.claim.fingerprint = "f";
    r.claim.owner = owner(pid);
    r.claim.ttl_ms = 60'000;
    return r;
  }
  // Claims and runs `key` with the fake runner; returns the command's exit code.
  int run(const std::string& key) {
    AttemptRequest r = request(key);
    Claimed c = engine.claim(r);
    if (c.verdict != ClaimVerdict::claimed) return -1;
    idem::proc::RunSpec spec;
    spec.argv = {"job", key};
    CommandEffect effect(runner, spec);
    engine.carry_out(c, effect);
    return effect.exit_code();
  }
};

}  // namespace

TEST_CASE("engine: a claimed attempt runs once, its group recorded before; later ones replay",
          "[engine]") {
  Fixture f;
  int64_t group_seen = 0;
  f.runner.script.push_back(FakeRunner::exited(3, "out"));
  f.runner.during = [&] { group_seen = f.store->get("k")->process_group.pgid; };
  CHECK(f.run("k") == 3);
  REQUIRE(f.runner.calls.size() == 1);
  CHECK(f.runner.calls[0].argv == std::vector<std::string>{"job", "k"});
  CHECK(env_of(f.runner.calls[0], "IDEM_ATTEMPT") == "1");
  CHECK(group_seen == 4242);  // durable while the command ran
  Record r = *f.store->get("k");
  CHECK(r.status == Status::failed);
  CHECK(r.exit_code == 3);
  CHECK(r.finished_ms == f.clock.now_ms());

  AttemptRequest again = f.request("k");
  again.claim.policy.replay_failures = true;
  Claimed c = f.engine.claim(again);
  CHECK(c.verdict == ClaimVerdict::replay);
  CHECK(c.existing->exit_code == 3);
  CHECK(f.runner.calls.size() == 1);
  // Without --replay-failures the failure runs again, as attempt 2.
  CHECK(f.run("k") == 0);
  CHECK(env_of(f.runner.calls.at(1), "IDEM_ATTEMPT") == "2");
}

TEST_CASE("engine: a claim that would run records the prepared command's group in its own write",
          "[engine]") {
  Fixture f;
  f.runner.prepares = true;
  f.runner.group = {5353, 888};
  int64_t group_at_claim = 0;
  AttemptRequest r = f.request("k");
  idem::proc::RunSpec spec;
  spec.argv = {"job"};
  CommandEffect effect(f.runner, spec);
  r.effect = &effect;
  Claimed c = f.engine.claim(r);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  group_at_claim = f.store->get("k")->process_group.pgid;
  CHECK(group_at_claim == 5353);  // written by the claim, before the command started
  CHECK(f.runner.prepared == 1);
  f.engine.carry_out(c, effect);
  REQUIRE(f.runner.calls.size() == 1);
  CHECK(env_of(f.runner.calls[0], "IDEM_ATTEMPT") == "1");
  CHECK(f.runner.dropped == 0);
  CHECK(f.store->get("k")->status == Status::succeeded);

  // A replay prepares nothing; a live holder's key drops what it prepared.
  AttemptRequest again = f.request("k");
  CommandEffect unused(f.runner, spec);
  again.effect = &unused;
  CHECK(f.engine.claim(again).verdict == ClaimVerdict::replay);
  CHECK(f.runner.prepared == 1);
  AttemptRequest first = f.request("held");
  REQUIRE(f.engine.claim(first).verdict == ClaimVerdict::claimed);
  AttemptRequest second = f.request("held", 11);
  second.effect = &unused;
  CHECK(f.engine.claim(second).verdict == ClaimVerdict::running);  // decided by the look
  CHECK(f.runner.prepared == 1);
  // A dead holder's record is marked by the claim that takes it over, with its group.
  f.owners_gone = true;
  AttemptRequest takeover = f.request("held", 12);
  takeover.claim.policy.retry_abandoned = true;
  CommandEffect third(f.runner, spec);
  takeover.effect = &third;
  Claimed t = f.engine.claim(takeover);
  CHECK(t.verdict == ClaimVerdict::claimed);
  CHECK(f.runner.prepared == 2);
  CHECK(f.store->get("held")->process_group.pgid == 5353);
  CHECK(f.store->history("held").size() == 2);
  f.owners_gone = false;
  AttemptRequest declined = f.request("new");
  declined.decline_run = true;
  declined.effect = &unused;
  CHECK(f.engine.claim(declined).verdict == ClaimVerdict::declined);
  CHECK(f.runner.dropped == 0);

  // Another process claims the key between the look and the claim: what was prepared is dropped
  // and the claim's answer stands, without the group.
  f.runner.on_prepare = [&] {
    f.store->claim(f.request("raced", 13).claim, [](auto&) { return false; });
  };
  AttemptRequest raced = f.request("raced");
  CommandEffect fourth(f.runner, spec);
  raced.effect = &fourth;
  CHECK(f.engine.claim(raced).verdict == ClaimVerdict::running);
  CHECK(f.runner.prepared == 3);
  CHECK(f.runner.dropped == 1);
  CHECK(f.store->get("raced")->process_group.pgid == 0);
}

TEST_CASE("engine: a finished outcome is replayed until its TTL, then the key runs again",
          "[engine]") {
  Fixture f;
  CHECK(f.run("k") == 0);
  f.clock.advance(59'999);
  AttemptRequest r = f.request("k");
  CHECK(f.engine.claim(r).verdict == ClaimVerdict::replay);
  f.clock.advance(2);
  CHECK(f.run("k") == 0);
  CHECK(f.runner.calls.size() == 2);
  CHECK(f.clock.slept.empty());
}

TEST_CASE("engine: what is stored of the request is built by a claim that writes it, once",
          "[engine]") {
  Fixture f;
  int built = 0;
  auto described = [&] {
    AttemptRequest r = f.request("k");
    r.describe_request = [&built] {
      ++built;
      return std::string(R"({"asked":"k"})");
    };
    return r;
  };
  AttemptRequest first = described();
  Claimed c = f.engine.claim(first);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  CHECK(built == 1);
  CHECK(f.store->get("k")->request == R"({"asked":"k"})");
  // A live holder's key, and then its replay, are answered without building it.
  AttemptRequest held = described();
  CHECK(f.engine.claim(held).verdict == ClaimVerdict::running);
  CHECK(built == 1);
  idem::proc::RunSpec spec;
  spec.argv = {"job"};
  CommandEffect effect(f.runner, spec);
  f.engine.carry_out(c, effect);
  AttemptRequest again = described();
  CHECK(f.engine.claim(again).verdict == ClaimVerdict::replay);
  CHECK(built == 1);
  CHECK(f.store->get("k")->request == R"({"asked":"k"})");
}

TEST_CASE("engine: a live holder is waited for up to wait_ms, the pauses doubling", "[engine]") {
  Fixture f;
  AttemptRequest holder = f.request("k", 20);
  REQUIRE(f.engine.claim(holder).verdict == ClaimVerdict::claimed);

  AttemptRequest r = f.request("k");
  r.wait.wait_ms = 1000;
  int waits = 0;
  r.on_wait = [&](const Record& h) {
    ++waits;
    CHECK(h.owner.pid == 20);
  };
  Claimed c = f.engine.claim(r);
  CHECK(c.verdict == ClaimVerdict::running);
  CHECK(waits == 1);
  CHECK(f.clock.total_slept() == 1000);
  CHECK(f.clock.slept.front() == 10);
  CHECK(f.clock.slept.at(1) == 20);
  CHECK(f.clock.slept.at(4) == 160);
  CHECK(f.clock.slept.at(5) == 250);  // capped
  CHECK(f.runner.calls.empty());

  SECTION("no wait: refused at once") {
    AttemptRequest now = f.request("k");
    CHECK(f.engine.claim(now).verdict == ClaimVerdict::running);
    CHECK(f.clock.total_slept() == 1000);
  }
}

TEST_CASE("engine: a wait ends when the holder finishes: its outcome is replayed", "[engine]") {
  Fixture f;
  AttemptRequest holder = f.request("k", 20);
  Claimed held = f.engine.claim(holder);
  f.clock.on_sleep = [&] {
    if (f.clock.slept.size() == 3) {
      idem::core::Outcome done;
      done.status = Status::succeeded;
      done.exit_code = 0;
      f.engine.finish("k", held.attempt, done);
    }
  };
  AttemptRequest r = f.request("k");
  r.wait.wait_ms = 60'000;
  CHECK(f.engine.claim(r).verdict == ClaimVerdict::replay);
  CHECK(f.clock.slept.size() == 3);
}

TEST_CASE("engine: holders waits_without_limit accepts are waited for past wait_ms", "[engine]") {
  Fixture f;
  AttemptRequest holder = f.request("k", 20);
  Claimed held = f.engine.claim(holder);
  f.clock.on_sleep = [&] {
    if (f.clock.total_slept() > 5000) f.engine.finish("k", held.attempt, {});
  };
  AttemptRequest r = f.request("k");
  r.wait.waits_without_limit = [](const Record& h) { return h.owner.pid == 20; };
  // The holder failed (an empty outcome): the waiter runs it again.
  CHECK(f.engine.claim(r).verdict == ClaimVerdict::claimed);
  CHECK(f.clock.total_slept() > 5000);
}

TEST_CASE("engine: before_pause can end a wait", "[engine]") {
  Fixture f;
  AttemptRequest holder = f.request("k", 20);
  f.engine.claim(holder);
  AttemptRequest r = f.request("k");
  r.wait.wait_ms = 10'000;
  r.before_pause = [&](const Record&) {
    if (f.clock.slept.size() == 2) throw std::runtime_error("signal");
  };
  CHECK_THROWS_WITH(f.engine.claim(r), "signal");
}

TEST_CASE("engine: a lease that ran out makes its attempt abandoned on any host", "[engine]") {
  Fixture f;
  AttemptRequest holder = f.request("k", 20);
  holder.claim.lease_ms = 30'000;
  REQUIRE(f.engine.claim(holder).verdict == ClaimVerdict::claimed);
  AttemptRequest r = f.request("k");
  CHECK(f.engine.claim(r).verdict == ClaimVerdict::running);
  f.clock.advance(30'001);
  CHECK(f.engine.claim(r).verdict == ClaimVerdict::abandoned);
  r.claim.policy.retry_abandoned = true;
  Claimed c = f.engine.claim(r);
  CHECK(c.verdict == ClaimVerdict::claimed);
  CHECK(c.attempt == 2);
}

TEST_CASE("engine: an abandoned attempt is retried only once clear_abandoned allows it",
          "[engine]") {
  Fixture f;
  AttemptRequest holder = f.request("k", 20);
  f.engine.claim(holder);
  f.owners_gone = true;  // the holder died mid-run
  AttemptRequest r = f.request("k");
  r.claim.policy.retry_abandoned = true;
  int looked = 0;
  bool clear = false;
  r.clear_abandoned = [&](const Record& a) {
    ++looked;
    CHECK(a.attempt == 1);
    return clear;
  };
  Claimed c = f.engine.claim(r);
  CHECK(c.verdict == ClaimVerdict::abandoned);
  CHECK(looked == 1);
  clear = true;
  c = f.engine.claim(r);
  CHECK(c.verdict == ClaimVerdict::claimed);
  CHECK(c.attempt == 2);
  CHECK(looked == 2);
}

TEST_CASE("engine: with abandoned_leftovers_hold an abandoned attempt's live group is waited for",
          "[engine]") {
  Fixture f;
  AttemptRequest holder = f.request("k", 20);
  f.engine.claim(holder);
  f.owners_gone = true;  // the holder died mid-run; its processes live on
  AttemptRequest r = f.request("k");
  r.claim.policy.retry_abandoned = true;
  r.abandoned_leftovers_hold = true;
  int looked = 0;
  bool clear = false;
  r.clear_abandoned = [&](const Record& a) {
    ++looked;
    CHECK(a.status == Status::abandoned);
    return clear;
  };
  // No wait: the key counts as held by them (`running`, the abandoned record), nothing runs.
  Claimed c = f.engine.claim(r);
  CHECK(c.verdict == ClaimVerdict::running);
  REQUIRE(c.existing);
  CHECK(c.existing->status == Status::abandoned);
  CHECK(c.existing->attempt == 1);
  CHECK(f.clock.slept.empty());
  // With a wait they are waited for, looked at after every pause, until they are gone.
  r.wait.wait_ms = 1000;
  f.clock.on_sleep = [&] { clear = f.clock.total_slept() >= 30; };
  looked = 0;
  c = f.engine.claim(r);
  CHECK(c.verdict == ClaimVerdict::claimed);
  CHECK(c.attempt == 2);
  CHECK(looked == 3);  // before the pauses of 10 and 20 ms, then clear
  CHECK(f.clock.slept == std::vector<int64_t>{10, 20});
}

TEST_CASE("engine: a failed attempt runs again only once clear_failed finds its group gone",
          "[engine]") {
  Fixture f;
  f.runner.script.push_back(FakeRunner::exited(1));
  CHECK(f.run("k") == 1);
  // The group stays on the failed record: what the next attempt must look at.
  REQUIRE(f.store->get("k")->process_group.pgid == 4242);
  AttemptRequest r = f.request("k");
  int looked = 0;
  bool clear = false;
  r.clear_failed = [&](const Record& failed) {
    ++looked;
    CHECK(failed.status == Status::failed);
    CHECK(failed.process_group.pgid == 4242);
    return clear;
  };
  // Its processes live on: the key is held, as by a live owner, and nothing runs.
  Claimed c = f.engine.claim(r);
  CHECK(c.verdict == ClaimVerdict::running);
  REQUIRE(c.existing);
  CHECK(c.existing->status == Status::failed);
  CHECK(c.existing->attempt == 1);
  CHECK(looked == 1);
  // With a wait they are waited for, looked at again after every pause, until they are gone.
  r.wait.wait_ms = 1000;
  f.clock.on_sleep = [&] { clear = f.clock.total_slept() >= 30; };
  c = f.engine.claim(r);
  CHECK(c.verdict == ClaimVerdict::claimed);
  CHECK(c.attempt == 2);
  CHECK(looked == 4);  // before the pauses of 10 and 20 ms, then clear
  CHECK(f.clock.slept == std::vector<int64_t>{10, 20});

  // A failure made final is replayed: nothing runs, nothing to look at.
  idem::core::Outcome failed_again;
  failed_again.exit_code = 2;
  failed_again.finished_ms = f.clock.now_ms();
  REQUIRE(f.store->finish("k", 2, failed_again));
  AttemptRequest final_one = f.request("k");
  final_one.claim.policy.replay_failures = true;
  final_one.clear_failed = r.clear_failed;
  CHECK(f.engine.claim(final_one).verdict == ClaimVerdict::replay);
  CHECK(looked == 4);
}

TEST_CASE("engine: a failed attempt that replaced the one looked at is looked at in turn",
          "[engine]") {
  Fixture f;
  f.runner.script.push_back(FakeRunner::exited(1));
  CHECK(f.run("k") == 1);
  AttemptRequest r = f.request("k");
  std::vector<int64_t> looked;
  r.clear_failed = [&](const Record& failed) {
    looked.push_back(failed.attempt);
    if (looked.size() == 1) {
      // Meanwhile another process ran attempt 2, which failed leaving its own group.
      f.runner.script.push_back(FakeRunner::exited(1));
      f.runner.group = {5353, 888};
      CHECK(f.run("k") == 1);
    }
    return true;
  };
  Claimed c = f.engine.claim(r);
  CHECK(c.verdict == ClaimVerdict::claimed);
  CHECK(c.attempt == 3);
  CHECK(looked == std::vector<int64_t>{1, 2});
}

TEST_CASE("engine: a failed attempt without a recorded group runs again at once", "[engine]") {
  Fixture f;
  f.runner.script.push_back(FakeRunner::exited(1));
  f.runner.group = {};
  CHECK(f.run("k") == 1);
  AttemptRequest r = f.request("k");
  r.clear_failed = [](const Record&) -> bool {
    FAIL("nothing to look at");
    return false;
  };
  CHECK(f.engine.claim(r).verdict == ClaimVerdict::claimed);
}

TEST_CASE("engine: decline_run declines an attempt that would run, answers the others",
          "[engine]") {
  Fixture f;
  AttemptRequest r = f.request("k");
  r.decline_run = true;
  CHECK(f.engine.claim(r).verdict == ClaimVerdict::declined);
  CHECK_FALSE(f.store->get("k"));  // nothing claimed
  CHECK(f.run("k") == 0);
  CHECK(f.engine.claim(r).verdict == ClaimVerdict::replay);
  AttemptRequest other = f.request("k");
  other.claim.fingerprint = "g";
  other.decline_run = true;
  CHECK(f.engine.claim(other).verdict == ClaimVerdict::conflict);
}

TEST_CASE("engine: a timed-out command is recorded as such and exits 124", "[engine]") {
  Fixture f;
  f.runner.script.push_back(FakeRunner::timed_out());
  CHECK(f.run("k") == 124);
  Record r = *f.store->get("k");
  CHECK(r.status == Status::failed);
  CHECK(r.timed_out);
  CHECK(idem::core::replay_exit_code(r) == 124);
}

TEST_CASE("engine: a stored cap keeps the head in the record and the whole capture in result()",
          "[engine]") {
  Fixture f;
  f.runner.script.push_back(FakeRunner::exited(0, "0123456789"));
  AttemptRequest r = f.request("k");
  Claimed c = f.engine.claim(r);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  idem::proc::RunSpec spec;
  spec.argv = {"job"};
  CommandEffect effect(f.runner, spec, CommandEffect::Capture::kept, 4);
  f.engine.carry_out(c, effect);
  CHECK(effect.result().output.stream_bytes(idem::core::Stream::out) == "0123456789");
  CHECK_FALSE(effect.result().output.truncated());
  Record stored = *f.store->get("k");
  CHECK(stored.output_truncated);
  CHECK(stored.output_bytes == 4);
  auto kept = idem::core::CapturedOutput::decode(stored.output);
  REQUIRE(kept);
  CHECK(kept->stream_bytes(idem::core::Stream::out) == "0123");
}

TEST_CASE("engine: an attempt taken over while it ran records nothing", "[engine]") {
  Fixture f;
  f.runner.during = [&] {
    f.owners_gone = true;
    AttemptRequest thief = f.request("k", 30);
    thief.claim.policy.retry_abandoned = true;
    REQUIRE(f.engine.claim(thief).verdict == ClaimVerdict::claimed);
    f.owners_gone = false;
  };
  AttemptRequest r = f.request("k");
  Claimed c = f.engine.claim(r);
  CommandEffect effect(f.runner, {});
  CHECK_FALSE(f.engine.carry_out(c, effect).recorded);
  Record rec = *f.store->get("k");
  CHECK(rec.attempt == 2);
  CHECK(rec.status == Status::running);
}

namespace {
// The real store, but failing on command: a disk that fills between two writes.
class FailingStore final : public idem::store::Store {
 public:
  explicit FailingStore(idem::store::Store& real) : real_(real) {}
  bool fail_group = false, fail_finish = false;
  int finish_failures = 0;  // the next this many finishes fail as a lost connection would
  int finishes = 0;
  std::atomic<int> heartbeats{0};
  std::atomic<bool> heartbeats_unreachable{false};
  std::atomic<bool> heartbeats_refused{false};  // as a store does once another attempt took over
  idem::store::ClaimResult claim(const idem::store::ClaimRequest& r,
                                 const idem::store::OwnerGone& g) override {
    return real_.claim(r, g);
  }
  idem::store::TurnResult take_turn(const idem::store::TurnRequest& r,
                                    const idem::store::OwnerGone& g) override {
    return real_.take_turn(r, g);
  }
  bool withdraw(const std::string& k, const std::string& t) override {
    return real_.withdraw(k, t);
  }
  std::vector<idem::store::QueuedGroup> queued_groups(const std::string& p, int64_t n) override {
    return real_.queued_groups(p, n);
  }
  std::vector<idem::core::Record> group_line(const std::string& g, int64_t n) override {
    return real_.group_line(g, n);
  }
  bool finish(const std::string& k, int64_t a, const idem::core::Outcome& o) override {
    ++finishes;
    if (fail_finish) throw idem::StoreError("disk full", idem::StoreFailure::transient);
    if (finish_failures > 0 && finish_failures--)
      throw idem::StoreError("connection lost", idem::StoreFailure::transient);
    return real_.finish(k, a, o);
  }
  bool set_process_group(const std::string& k, int64_t a,
                         const idem::core::ProcessGroup& g) override {
    if (fail_group) throw idem::StoreError("disk full");
    return real_.set_process_group(k, a, g);
  }
  bool mark_abandoned(const std::string& k, int64_t a) override {
    return real_.mark_abandoned(k, a);
  }
  bool heartbeat(const std::string& k, const std::string& t, int64_t l, int64_t n) override {
    ++heartbeats;
    if (heartbeats_unreachable)
      throw idem::StoreError("server unreachable", idem::StoreFailure::transient);
    if (heartbeats_refused) return false;
    return real_.heartbeat(k, t, l, n);
  }
  bool shared = false;  // spans hosts, as a PostgreSQL store does
  bool spans_hosts() const override { return shared; }
  bool fail_release = false;
  bool release(const std::string& k, const std::string& t) override {
    if (fail_release) throw idem::StoreError("disk full", idem::StoreFailure::transient);
    return real_.release(k, t);
  }
  std::optional<Record> get(const std::string& k) override { return real_.get(k); }
  std::optional<Record> get_without_output(const std::string& k) override {
    return real_.get_without_output(k);
  }
  std::unique_ptr<idem::store::OutputReader> open_output(const std::string& k, int64_t a) override {
    return real_.open_output(k, a);
  }
  idem::store::HistoryPage history_page(const std::string& k,
                                        const idem::store::HistoryQuery& q) override {
    return real_.history_page(k, q);
  }
  bool append_live(const std::string& k, int64_t a, const idem::core::LiveSegment& s) override {
    return real_.append_live(k, a, s);
  }
  size_t read_live_into(const std::string& k, int64_t a, int64_t from, int64_t max_bytes,
                        std::vector<idem::core::LiveSegment>& into) override {
    return real_.read_live_into(k, a, from, max_bytes, into);
  }
  int64_t drop_stale_live(const idem::store::OwnerGone& gone, int64_t now_ms) override {
    return real_.drop_stale_live(gone, now_ms);
  }
  void put_expectation(const idem::core::Expectation& e) override { real_.put_expectation(e); }
  bool remove_expectation(const std::string& p) override { return real_.remove_expectation(p); }
  std::vector<idem::store::StoredExpectation> expectations() override {
    return real_.expectations();
  }
  std::optional<std::vector<idem::core::ScheduleFinding>> save_evaluation(
      const std::string& p, int64_t revision, const idem::core::Evaluation& ev) override {
    return real_.save_evaluation(p, revision, ev);
  }
  std::vector<idem::core::ScheduleFinding> findings(const std::string& p, bool open_only,
                                                    int64_t limit) override {
    return real_.findings(p, open_only, limit);
  }
  std::vector<idem::core::AttemptFact> attempts_started(const idem::core::KeyPattern& p,
                                                        int64_t after_ms, const std::string& key,
                                                        int64_t number, int64_t before_ms,
                                                        int64_t limit) override {
    return real_.attempts_started(p, after_ms, key, number, before_ms, limit);
  }
  bool fail_replay_count = false;  // as a read-only store does
  void count_replays(std::span<const idem::store::ReplayCount> c) override {
    if (fail_replay_count) throw idem::StoreError("attempt to write a readonly database");
    real_.count_replays(c);
  }
  idem::store::ListStop list(const idem::store::ListQuery& q,
                             const idem::store::RecordVisitor& v) override {
    return real_.list(q, v);
  }
  idem::store::RemoveResult remove(const std::string& k, bool f,
                                   const idem::store::OwnerGone& g) override {
    return real_.remove(k, f, g);
  }
  idem::store::GcResult gc(const idem::store::GcQuery& q) override { return real_.gc(q); }
  void check_writable() override { real_.check_writable(); }
  int upkeeps = 0;
  bool fail_upkeep = false;
  void upkeep() override {
    ++upkeeps;
    if (fail_upkeep) throw idem::StoreError("disk full");
    real_.upkeep();
  }
  idem::store::StoreHealth health() override { return real_.health(); }
  std::vector<bool> put_all(
      std::span<const idem::core::Record> records, bool replace,
      std::span<const std::vector<idem::core::HistoryEntry>> histories) override {
    return real_.put_all(records, replace, histories);
  }

 private:
  idem::store::Store& real_;
};
}  // namespace

TEST_CASE("engine: store failures around the effect are reported with what happened", "[engine]") {
  Fixture f;
  FailingStore failing(*f.store);
  Engine engine(failing, f.clock, [](const idem::core::Owner&) { return false; });
  AttemptRequest r = f.request("k");
  Claimed c = engine.claim(r);

  SECTION("the group cannot be recorded: the command never starts, the record says so") {
    failing.fail_group = true;
    CommandEffect effect(f.runner, {});
    CHECK_THROWS_WITH(engine.carry_out(c, effect), "disk full; the command did not start");
    Record rec = *f.store->get("k");
    CHECK(rec.status == Status::failed);
    CHECK(rec.note == "not started: its process group could not be recorded");
  }
  SECTION("the outcome cannot be recorded: the error says the command ran, and is transient") {
    failing.fail_finish = true;
    f.runner.script.push_back(FakeRunner::exited(5));
    CommandEffect effect(f.runner, {});
    try {
      engine.carry_out(c, effect);
      FAIL("no error");
    } catch (const idem::StoreError& e) {
      CHECK(std::string(e.what()) ==
            "disk full; the command ran (exit 5) but its outcome could not be recorded");
      CHECK(e.transient());
    }
    CHECK(f.store->get("k")->status == Status::running);  // left to be judged abandoned
  }
}

TEST_CASE("engine: a replay, a conflict and a live holder are answered without the writer lock",
          "[engine]") {
  TempDir dir;
  const std::string path = dir.path() + "/s.db";
  auto store = idem::store::open_sqlite_store(path, 100);
  FakeClock clock;
  FakeRunner runner;
  Engine engine(*store, clock, [](const idem::core::Owner&) { return false; });
  auto request = [](const std::string& key, const std::string& fingerprint) {
    AttemptRequest r(idem::core::Key::of_argument(key));
    r.claim.fingerprint = fingerprint;
    r.claim.owner = owner(10);
    r.claim.ttl_ms = 60'000;
    return r;
  };
  AttemptRequest done = request("done", "f");
  CommandEffect effect(runner, {});
  engine.carry_out(engine.claim(done), effect);
  AttemptRequest held = request("held", "f");
  REQUIRE(engine.claim(held).verdict == ClaimVerdict::claimed);

  // Another process takes the writer lock and keeps it.
  sqlite3* writer = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &writer) == SQLITE_OK);
  REQUIRE(sqlite3_exec(writer, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  AttemptRequest again = request("done", "f");
  CHECK(engine.claim(again).verdict == ClaimVerdict::replay);
  AttemptRequest other = request("done", "g");
  CHECK(engine.claim(other).verdict == ClaimVerdict::conflict);
  AttemptRequest busy = request("held", "f");
  Claimed c = engine.claim(busy);
  CHECK(c.verdict == ClaimVerdict::running);
  CHECK(c.existing->attempt_token.empty());  // the holder's capability stays the holder's
  // What would run needs the lock: refused as busy, which shows the lock is really held.
  AttemptRequest fresh = request("fresh", "f");
  try {
    engine.claim(fresh);
    FAIL("claimed under another writer's lock");
  } catch (const idem::StoreError& e) {
    CHECK(e.transient());
  }
  sqlite3_exec(writer, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(writer);
  CHECK(engine.claim(fresh).verdict == ClaimVerdict::claimed);
}

namespace {

// Whether `fd` is readable now (the lease-lost pipe), without waiting.
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

// Waits for `fd` to become readable, as a command watching its stop fd does; bounded only so a
// broken keeper fails the test instead of hanging it.
bool becomes_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 60'000) == 1;
}

// Moves the fake clock on by `ms`, then waits until the lease keeper has done what the new time
// asks of it (it waits on the clock again).
void step(const FakeClock& clock, int64_t ms) {
  clock.advance(ms);
  clock.await_waiter(clock.monotonic_ms());
}

}  // namespace

// Leases (contract §1): the engine renews a leased attempt's lease while the effect runs, on a
// thread of its own that waits on the engine's clock: the fake clock moves the time, and the test
// waits until that thread waits again (it has done what the new time asks), never for real time.
TEST_CASE("engine: a leased attempt is renewed while it runs and its outcome recorded",
          "[engine][lease]") {
  Fixture f;
  FailingStore counting(*f.store);
  Engine engine(counting, f.clock, [](const idem::core::Owner&) { return false; });
  AttemptRequest r = f.request("k");
  r.claim.lease_ms = 3000;
  const int64_t start = f.clock.monotonic_ms();
  Claimed c = engine.claim(r);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  CHECK(c.lease_ms == 3000);
  CHECK(c.lease_until_ms == start + 3000);
  f.runner.during = [&] {
    const int fd = f.runner.calls.back().stop_fd;
    REQUIRE(fd >= 0);
    f.clock.await_waiter(start);  // the first renewal is due a third of the lease on
    CHECK(counting.heartbeats == 0);
    for (int i = 1; i <= 3; ++i) {
      step(f.clock, 1000);
      CHECK(counting.heartbeats == i);
      CHECK_FALSE(readable(fd));
    }
    // Past where the first lease ended: the renewals carried it on.
    step(f.clock, 1500);
    CHECK(counting.heartbeats == 4);
    CHECK_FALSE(readable(fd));
  };
  CommandEffect effect(f.runner, {});
  CHECK(engine.carry_out(c, effect).recorded);
  CHECK(counting.heartbeats == 4);
  CHECK(f.store->get("k")->status == Status::succeeded);
}

TEST_CASE("engine: a lease lost mid-run stops the effect and records nothing", "[engine][lease]") {
  Fixture f;
  FailingStore failing(*f.store);
  Engine engine(failing, f.clock, [](const idem::core::Owner&) { return false; });
  AttemptRequest r = f.request("k");
  r.claim.lease_ms = 3000;
  const int64_t start = f.clock.monotonic_ms();
  Claimed c = engine.claim(r);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  bool stopped = false;
  std::string why;

  SECTION("a renewal finds the attempt is no longer the key's current one") {
    failing.heartbeats_refused = true;
    f.runner.during = [&] {
      f.clock.await_waiter(start);
      f.clock.advance(1000);
      stopped = becomes_readable(f.runner.calls.back().stop_fd);
      CHECK(failing.heartbeats == 1);
    };
    why = "the key's current attempt is another one now";
  }
  SECTION("the store cannot be reached until the lease runs out") {
    failing.heartbeats_unreachable = true;
    f.runner.during = [&] {
      const int fd = f.runner.calls.back().stop_fd;
      f.clock.await_waiter(start);
      // The renewal fails: tried again a tenth of the lease on, still within the lease.
      step(f.clock, 1000);
      CHECK(failing.heartbeats == 1);
      CHECK_FALSE(readable(fd));
      // Tried every 300 ms: at 1.3 s, 1.6 s, ..., 2.8 s, then the lease ends at 3 s.
      for (int tries = 2; tries <= 7; ++tries) {
        step(f.clock, 300);
        CHECK(failing.heartbeats == tries);
        CHECK_FALSE(readable(fd));
      }
      f.clock.advance(200);
      stopped = becomes_readable(fd);
      CHECK(failing.heartbeats == 7);
    };
    why = "it ran out before a renewal got through";
  }
  SECTION("the process was paused past its lease") {
    f.runner.during = [&] {
      f.clock.advance(5000);
      stopped = becomes_readable(f.runner.calls.back().stop_fd);
    };
    why = "it ran out before a renewal got through";
  }
  CommandEffect effect(f.runner, {});
  try {
    engine.carry_out(c, effect);
    FAIL("no error");
  } catch (const idem::StoreError& e) {
    CHECK_THAT(e.what(), Catch::Contains("key 'k': its lease was lost (" + why + ")"));
    CHECK_THAT(e.what(), Catch::Contains("its outcome was not recorded"));
    CHECK(e.transient());
  }
  CHECK(stopped);
  CHECK(failing.finishes == 0);
  Record rec = *f.store->get("k");
  CHECK(rec.status == Status::running);  // abandoned by its lease, as every host sees
  CHECK(idem::core::lease_expired(rec, f.clock.now_ms() + 5000));
}

TEST_CASE("engine: an outcome that cannot be written yet is written again within the lease",
          "[engine][lease]") {
  Fixture f;
  FailingStore failing(*f.store);
  Engine engine(failing, f.clock, [](const idem::core::Owner&) { return false; });
  AttemptRequest r = f.request("k");
  r.claim.lease_ms = 5000;
  Claimed c = engine.claim(r);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  CommandEffect effect(f.runner, {});

  SECTION("a store back within the lease takes the outcome, after pauses that double") {
    failing.finish_failures = 3;
    CHECK(engine.carry_out(c, effect).recorded);
    CHECK(failing.finishes == 4);
    CHECK(f.clock.slept == std::vector<int64_t>{50, 100, 200});
    CHECK(f.store->get("k")->status == Status::succeeded);
  }
  SECTION("a store away for the whole lease: the last try comes as the lease ends") {
    failing.finish_failures = 1000;
    try {
      engine.carry_out(c, effect);
      FAIL("no error");
    } catch (const idem::StoreError& e) {
      CHECK_THAT(e.what(), Catch::EndsWith("but its outcome could not be recorded before its "
                                           "lease ran out: the key counts as abandoned"));
      CHECK(e.transient());
    }
    CHECK(f.clock.slept == std::vector<int64_t>{50, 100, 200, 400, 800, 1000, 1000, 1000, 450});
    CHECK(f.clock.total_slept() == 5000);
    CHECK(failing.finishes == 10);
    CHECK(f.store->get("k")->status == Status::running);
  }
  SECTION("without a lease a failed write is reported at once") {
    AttemptRequest plain = f.request("plain");
    Claimed p = engine.claim(plain);
    failing.finish_failures = 1;
    CommandEffect again(f.runner, {});
    CHECK_THROWS_AS(engine.carry_out(p, again), idem::StoreError);
    CHECK(f.clock.slept.empty());
  }
}

namespace {
// An effect whose outcome is given up: what the proxy does with an upstream's 5xx.
class ReleasingEffect final : public idem::engine::Effect {
 public:
  std::function<void()> during;
  bool release = true;
  idem::core::Outcome perform(const idem::engine::Attempt&) override {
    if (during) during();
    idem::core::Outcome o;
    o.status = Status::succeeded;
    o.note = "upstream answered 503";
    return o;
  }
  std::string performed() const override { return "the request was forwarded"; }
  bool release_instead(const idem::core::Outcome&) const override { return release; }
};
}  // namespace

TEST_CASE("engine: an outcome the effect gives up releases the key instead", "[engine]") {
  Fixture f;
  AttemptRequest r = f.request("k");
  Claimed c = f.engine.claim(r);
  ReleasingEffect effect;
  idem::engine::Finished done = f.engine.carry_out(c, effect);
  CHECK(done.released);
  CHECK_FALSE(done.recorded);
  CHECK_FALSE(f.store->get("k"));  // attempt 1 released: as if never claimed
  AttemptRequest again = f.request("k");
  Claimed retry = f.engine.claim(again);
  CHECK(retry.verdict == ClaimVerdict::claimed);
  CHECK(retry.attempt == 1);
  effect.release = false;
  CHECK(f.engine.carry_out(retry, effect).recorded);
  CHECK(f.store->get("k")->status == Status::succeeded);
}

TEST_CASE("engine: a release by an attempt taken over changes nothing", "[engine]") {
  Fixture f;
  ReleasingEffect effect;
  effect.during = [&] {
    f.owners_gone = true;
    AttemptRequest thief = f.request("k", 30);
    thief.claim.policy.retry_abandoned = true;
    REQUIRE(f.engine.claim(thief).verdict == ClaimVerdict::claimed);
    f.owners_gone = false;
  };
  AttemptRequest r = f.request("k");
  Claimed c = f.engine.claim(r);
  idem::engine::Finished done = f.engine.carry_out(c, effect);
  CHECK_FALSE(done.released);
  CHECK_FALSE(done.recorded);
  Record rec = *f.store->get("k");
  CHECK(rec.attempt == 2);
  CHECK(rec.status == Status::running);
}

TEST_CASE("engine: the attempt's meanwhile is the store's upkeep, and never throws", "[engine]") {
  Fixture f;
  FailingStore store(*f.store);
  Engine engine(store, f.clock, [](const idem::core::Owner&) { return false; });
  ReleasingEffect effect;
  effect.release = false;
  int ran = 0;
  effect.during = [&] { ++ran; };
  AttemptRequest r = f.request("k");
  Claimed c = engine.claim(r);
  // What a command effect hands its runner: called while the command runs.
  class Meanwhile final : public idem::engine::Effect {
   public:
    explicit Meanwhile(idem::engine::Effect& inner) : inner_(inner) {}
    idem::core::Outcome perform(const idem::engine::Attempt& a) override {
      REQUIRE(a.meanwhile);
      a.meanwhile();
      return inner_.perform(a);
    }
    std::string performed() const override { return inner_.performed(); }

   private:
    idem::engine::Effect& inner_;
  } meanwhile(effect);
  store.fail_upkeep = true;  // an upkeep that fails is left to the next writer
  CHECK(engine.carry_out(c, meanwhile).recorded);
  CHECK(store.upkeeps == 1);
  CHECK(ran == 1);
  CHECK(f.store->get("k")->status == Status::succeeded);
}

TEST_CASE("engine: a release the store refuses is reported with what happened", "[engine]") {
  Fixture f;
  FailingStore failing(*f.store);
  Engine engine(failing, f.clock, [](const idem::core::Owner&) { return false; });
  AttemptRequest r = f.request("k");
  Claimed c = engine.claim(r);
  failing.fail_release = true;
  ReleasingEffect effect;
  CHECK_THROWS_WITH(engine.carry_out(c, effect),
                    "disk full; the request was forwarded but the key could not be released");
  CHECK(f.store->get("k")->status == Status::running);
}

TEST_CASE("engine: a front's claims carry its lease only on a store shared by hosts",
          "[engine][lease]") {
  Fixture f;
  FailingStore store(*f.store);
  const int64_t lease_ms = GENERATE(int64_t{0}, int64_t{30'000});
  store.shared = GENERATE(false, true);
  const idem::engine::Front front = idem::engine::make_front(store, lease_ms);
  CHECK(front.lease_ms == (store.shared ? lease_ms : 0));
  CHECK(front.clock == &idem::util::process_clock());
  idem::engine::Front faked = front;
  faked.clock = &f.clock;
  Engine engine(store, faked);
  AttemptRequest r = f.request("k");
  Claimed c = engine.claim(r);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  CHECK(c.lease_ms == front.lease_ms);
  CHECK(f.store->get("k")->lease_expires_ms ==
        (front.lease_ms != 0 ? f.clock.now_ms() + front.lease_ms : 0));

  SECTION("a lease the caller sets (a ledger client's) is kept whatever the store") {
    AttemptRequest own = f.request("own");
    own.claim.lease_ms = 5000;
    CHECK(engine.claim(own).lease_ms == 5000);
  }
}

}  // namespace unit_engine
