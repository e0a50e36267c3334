// The store contract of serial groups (SPEC §9), on every backend: a group runs one attempt at a
// time, store-wide; the others wait as queued records in the order they came, and take their
// turn when nothing of the group runs.
#include <algorithm>
#include <set>

#include "core/record_export.hpp"
#include "race.hpp"
#include "store_contract.hpp"

using idem::core::Owner;
using idem::core::Status;
using idem::core::Verdict;
using idem::store::ClaimRequest;
using idem::store::ClaimResult;
using idem::store::OwnerGone;
using idem::store::SerialClaim;
using idem::store::TurnRequest;
using idem::store::TurnResult;
using idem::test::k_alive;
using idem::test::k_day;
using idem::test::k_gone;
using idem::test::k_t0;
using idem::test::listed;
using idem::test::outcome;
using idem::test::race;
using idem::test::request;

namespace {

// A claim of `key` in serial group `group` (kind run unless given), by process `pid`.
ClaimRequest serial(const std::string& key, const std::string& group, int64_t now_ms = k_t0,
                    int64_t pid = 100) {
  ClaimRequest r = request(key, now_ms, pid);
  r.serial = SerialClaim{group};
  return r;
}

// A look at the line by the waiter of `key` (its token), or by a daemon (key empty).
TurnRequest turn(const std::string& group, const std::string& key = "",
                 const std::string& token = "", int64_t now_ms = k_t0 + 10, int64_t pid = 300) {
  TurnRequest t;
  t.group = group;
  t.key = key;
  t.token = token;
  t.owner = idem::test::owner(pid);
  t.now_ms = now_ms;
  return t;
}

std::vector<std::string> queued_keys(idem::store::Store& store) {
  idem::store::ListQuery q;
  q.statuses = {Status::queued};
  q.now_ms = k_t0 + 100;
  return idem::test::keys_of(listed(store, q));
}

}  // namespace

TEMPLATE_TEST_CASE("serial contract: one runs, the others wait in order with their places",
                   "[store][contract][serial]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimResult first = store->claim(serial("a", "g"), k_alive);
  REQUIRE(first.verdict == Verdict::claim);
  CHECK(store->get("a")->serial_group == "g");

  ClaimResult b = store->claim(serial("b", "g", k_t0 + 1), k_alive);
  ClaimResult c = store->claim(serial("c", "g", k_t0 + 2), k_alive);
  CHECK(b.verdict == Verdict::queued);
  CHECK(b.position == 1);
  CHECK(b.attempt == 1);
  CHECK(b.attempt_token.size() == 32);
  CHECK(c.verdict == Verdict::queued);
  CHECK(c.position == 2);
  // Another group runs beside it; a key without a group is not held by any.
  CHECK(store->claim(serial("x", "other"), k_alive).verdict == Verdict::claim);
  CHECK(store->claim(request("plain"), k_alive).verdict == Verdict::claim);

  auto rb = store->get("b");
  REQUIRE(rb);
  CHECK(rb->status == Status::queued);
  CHECK(rb->started_ms == k_t0 + 1);  // when it was queued
  CHECK(rb->expires_ms == 0);         // a queued record never expires
  CHECK(rb->request == R"({"argv":["true"],"cwd":"/"})");

  SECTION("a duplicate of a queued key is told its place, gets no token, queues nothing") {
    ClaimResult again = store->claim(serial("c", "g", k_t0 + 5, 200), k_alive);
    CHECK(again.verdict == Verdict::queued);
    CHECK(again.position == 2);
    CHECK(again.attempt_token.empty());
    REQUIRE(again.existing);
    CHECK(again.existing->attempt_token.empty());
    CHECK(queued_keys(*store) == std::vector<std::string>{"c", "b"});
  }
  SECTION("another fingerprint for a queued key is a conflict") {
    ClaimRequest other = serial("b", "g");
    other.fingerprint = idem::test::k_other_fp;
    CHECK(store->claim(other, k_alive).verdict == Verdict::conflict);
  }
  SECTION("the waiters take their turns one after another, in order") {
    CHECK(store->take_turn(turn("g", "c", c.attempt_token), k_alive).state ==
          TurnResult::State::waiting);
    TurnResult early = store->take_turn(turn("g", "b", b.attempt_token), k_alive);
    CHECK(early.state == TurnResult::State::waiting);  // a runs still
    CHECK(early.position == 1);
    REQUIRE(store->finish("a", 1, outcome(Status::succeeded, 0, k_t0 + 20)));
    // c is not the head: it waits even though nothing runs.
    TurnResult not_yet = store->take_turn(turn("g", "c", c.attempt_token), k_alive);
    CHECK(not_yet.state == TurnResult::State::waiting);
    CHECK(not_yet.position == 2);
    TurnResult started = store->take_turn(turn("g", "b", b.attempt_token, k_t0 + 30), k_alive);
    REQUIRE(started.state == TurnResult::State::started);
    CHECK(started.attempt_token == b.attempt_token);
    REQUIRE(started.record);
    CHECK(started.record->status == Status::running);
    CHECK(started.record->owner.pid == 300);
    CHECK(started.record->started_ms == k_t0 + 30);
    CHECK(store->history("b").size() == 1);
    CHECK(store->take_turn(turn("g", "c", c.attempt_token), k_alive).position == 1);
    REQUIRE(store->finish("b", 1, outcome(Status::failed, 3, k_t0 + 40)));
    TurnResult last = store->take_turn(turn("g", "c", c.attempt_token, k_t0 + 50), k_alive);
    CHECK(last.state == TurnResult::State::started);
    CHECK(store->get("b")->status == Status::failed);
    CHECK(queued_keys(*store).empty());
  }
  SECTION("a wrong token is no waiter: it is told its key is gone") {
    CHECK(store->take_turn(turn("g", "b", std::string(32, '0')), k_alive).state ==
          TurnResult::State::gone);
  }
  SECTION("withdraw takes a waiter out of the line with its token only") {
    CHECK_FALSE(store->withdraw("b", std::string(32, '0')));
    CHECK(store->withdraw("b", b.attempt_token));
    CHECK_FALSE(store->get("b"));
    CHECK(store->claim(serial("d", "g"), k_alive).position == 2);
    CHECK(store->take_turn(turn("g", "c", c.attempt_token), k_alive).position == 1);
  }
  SECTION("gc never removes a queued record, whatever its age") {
    idem::store::GcQuery q;
    q.now_ms = k_t0 + 400 * k_day;
    q.older_than_ms = 1;
    store->gc(q);
    CHECK(store->get("b"));
    CHECK(store->get("c"));
  }
  SECTION("a group's line: its runner, then its waiters in order, as many as asked") {
    auto names = [](const std::vector<idem::core::Record>& line) {
      std::vector<std::string> keys;
      for (const auto& r : line) keys.push_back(r.key + ":" + std::string(to_string(r.status)));
      return keys;
    };
    CHECK(names(store->group_line("g", 10)) ==
          std::vector<std::string>{"a:running", "b:queued", "c:queued"});
    CHECK(names(store->group_line("g", 1)) == std::vector<std::string>{"a:running", "b:queued"});
    CHECK(store->group_line("nothing", 10).empty());
    CHECK(store->group_line("g", 10)[1].output.empty());
  }
  SECTION("the groups that have waiters, with their counts and oldest") {
    auto groups = store->queued_groups("", 10);
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].group == "g");
    CHECK(groups[0].queued == 2);
    CHECK(groups[0].oldest_ms == k_t0 + 1);
    CHECK(store->queued_groups("h", 10).empty());
  }
}

TEMPLATE_TEST_CASE("serial contract: a daemon starts the head whoever queued it",
                   "[store][contract][serial]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  auto hook = [](const std::string& key, int64_t now) {
    ClaimRequest r = serial(key, "/deploy#main", now);
    r.kind = "hook";
    return r;
  };
  REQUIRE(store->claim(hook("a", k_t0), k_alive).verdict == Verdict::claim);
  REQUIRE(store->claim(hook("b", k_t0 + 1), k_alive).verdict == Verdict::queued);
  CHECK(store->take_turn(turn("/deploy#main"), k_alive).state == TurnResult::State::waiting);
  REQUIRE(store->finish("a", 1, outcome(Status::succeeded, 0, k_t0 + 5)));
  TurnResult t = store->take_turn(turn("/deploy#main"), k_alive);
  REQUIRE(t.state == TurnResult::State::started);
  CHECK(t.record->key == "b");
  CHECK(t.attempt_token.size() == 32);
  CHECK(store->take_turn(turn("/deploy#main"), k_alive).state == TurnResult::State::waiting);
  REQUIRE(store->finish("b", 1, outcome(Status::succeeded, 0, k_t0 + 6)));
  CHECK(store->take_turn(turn("/deploy#main"), k_alive).state == TurnResult::State::empty);

  SECTION("a waiter of `idem run` at the head is its own to start") {
    REQUIRE(store->claim(hook("c", k_t0 + 7), k_alive).verdict == Verdict::claim);
    ClaimResult r = store->claim(serial("d", "/deploy#main", k_t0 + 8), k_alive);
    REQUIRE(r.verdict == Verdict::queued);
    REQUIRE(store->finish("c", 1, outcome(Status::succeeded, 0, k_t0 + 9)));
    CHECK(store->take_turn(turn("/deploy#main"), k_alive).state == TurnResult::State::waiting);
    CHECK(store->take_turn(turn("/deploy#main", "d", r.attempt_token), k_alive).state ==
          TurnResult::State::started);
  }
}

TEMPLATE_TEST_CASE("serial contract: a dead runner is abandoned first, a dead waiter leaves",
                   "[store][contract][serial]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  // Only pid 100 (the first runner, or the first waiter) is gone.
  const OwnerGone first_gone = [](const Owner& o) { return o.pid == 100; };

  SECTION("the runner's owner died: abandoned, then the next one runs") {
    REQUIRE(store->claim(serial("a", "g", k_t0, 100), k_alive).verdict == Verdict::claim);
    ClaimResult b = store->claim(serial("b", "g", k_t0 + 1, 200), k_alive);
    TurnResult t = store->take_turn(turn("g", "b", b.attempt_token), first_gone);
    CHECK(t.state == TurnResult::State::started);
    REQUIRE(t.marked_abandoned);
    CHECK(t.marked_abandoned->key == "a");
    CHECK(store->get("a")->status == Status::abandoned);
  }
  SECTION("a delivery's dead runner waits again at the head when its hook retries them") {
    ClaimRequest a = serial("a", "g", k_t0, 100);
    a.kind = "hook";
    REQUIRE(store->claim(a, k_alive).verdict == Verdict::claim);
    ClaimRequest b = serial("b", "g", k_t0 + 1, 200);
    b.kind = "hook";
    REQUIRE(store->claim(b, k_alive).verdict == Verdict::queued);
    TurnRequest daemon = turn("g");
    daemon.requeue_abandoned = true;
    TurnResult t = store->take_turn(daemon, first_gone);
    REQUIRE(t.state == TurnResult::State::started);
    CHECK(t.record->key == "a");
    CHECK(t.record->attempt == 2);
    CHECK(store->history("a").size() == 2);
    CHECK(store->history("a").front().outcome == Status::abandoned);
  }
  SECTION("a delivery's dead runner that never started its command waits again, retry or not") {
    ClaimRequest a = serial("a", "g", k_t0, 100);
    a.kind = "hook";
    REQUIRE(store->claim(a, k_alive).verdict == Verdict::claim);
    TurnResult t = store->take_turn(turn("g"), first_gone);  // requeue_abandoned false
    REQUIRE(t.state == TurnResult::State::started);
    CHECK(t.record->key == "a");
    CHECK(t.record->attempt == 2);
    CHECK(store->history("a").front().outcome == Status::abandoned);
  }
  SECTION("a delivery's dead runner whose command started stays abandoned without retries") {
    ClaimRequest a = serial("a", "g", k_t0, 100);
    a.kind = "hook";
    REQUIRE(store->claim(a, k_alive).verdict == Verdict::claim);
    idem::core::ProcessGroup group;
    group.pgid = 4242;
    REQUIRE(store->set_process_group("a", 1, group));
    ClaimRequest b = serial("b", "g", k_t0 + 1, 200);
    b.kind = "hook";
    REQUIRE(store->claim(b, k_alive).verdict == Verdict::queued);
    TurnResult t = store->take_turn(turn("g"), first_gone);
    REQUIRE(t.state == TurnResult::State::started);
    CHECK(t.record->key == "b");
    CHECK(store->get("a")->status == Status::abandoned);
  }
  SECTION("a dead runner whose processes live on holds its group until they end") {
    REQUIRE(store->claim(serial("a", "g", k_t0, 100), k_alive).verdict == Verdict::claim);
    ClaimResult b = store->claim(serial("b", "g", k_t0 + 1, 200), k_alive);
    bool alive = true;
    TurnRequest look = turn("g", "b", b.attempt_token);
    look.left_behind = [&](const idem::core::Record& r) {
      CHECK(r.key == "a");
      return alive;
    };
    TurnResult t = store->take_turn(look, first_gone);
    CHECK(t.state == TurnResult::State::waiting);
    CHECK_FALSE(t.marked_abandoned);
    CHECK(store->get("a")->status == Status::running);
    // A claim of the group sees it held too.
    ClaimRequest c = serial("c", "g", k_t0 + 2, 300);
    c.serial->left_behind = look.left_behind;
    CHECK(store->claim(c, first_gone).verdict == Verdict::queued);
    alive = false;
    t = store->take_turn(look, first_gone);
    CHECK(t.state == TurnResult::State::started);
    REQUIRE(t.marked_abandoned);
    CHECK(store->get("a")->status == Status::abandoned);
  }
  SECTION("a new claim finds the dead runner: abandoned, and the claim runs") {
    REQUIRE(store->claim(serial("a", "g", k_t0, 100), k_alive).verdict == Verdict::claim);
    ClaimResult b = store->claim(serial("b", "g", k_t0 + 1, 200), first_gone);
    CHECK(b.verdict == Verdict::claim);
    REQUIRE(b.marked_abandoned);
    CHECK(b.marked_abandoned->key == "a");
  }
  SECTION("a waiter that died in line leaves it when its turn comes") {
    REQUIRE(store->claim(serial("a", "g", k_t0, 200), k_alive).verdict == Verdict::claim);
    REQUIRE(store->claim(serial("b", "g", k_t0 + 1, 100), k_alive).verdict == Verdict::queued);
    ClaimResult c = store->claim(serial("c", "g", k_t0 + 2, 300), k_alive);
    REQUIRE(store->finish("a", 1, outcome(Status::succeeded, 0, k_t0 + 3)));
    CHECK(store->take_turn(turn("g", "c", c.attempt_token), first_gone).state ==
          TurnResult::State::started);
    CHECK_FALSE(store->get("b"));
    // Its key is free again for whoever claims it next.
  }
  SECTION("a claim of a dead waiter's key takes its place afresh") {
    REQUIRE(store->claim(serial("a", "g", k_t0, 200), k_alive).verdict == Verdict::claim);
    REQUIRE(store->claim(serial("b", "g", k_t0 + 1, 100), k_alive).verdict == Verdict::queued);
    REQUIRE(store->claim(serial("c", "g", k_t0 + 2, 300), k_alive).verdict == Verdict::queued);
    ClaimResult again = store->claim(serial("b", "g", k_t0 + 3, 400), first_gone);
    CHECK(again.verdict == Verdict::queued);
    CHECK(again.position == 2);  // behind c now
    CHECK(again.attempt_token.size() == 32);
    CHECK(store->get("b")->owner.pid == 400);
  }
}

TEMPLATE_TEST_CASE("serial contract: latest supersedes the pending one, max_pending bounds fifo",
                   "[store][contract][serial]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  SECTION("latest") {
    auto latest = [](const std::string& key, int64_t now) {
      ClaimRequest r = serial(key, "g", now);
      r.kind = "hook";
      r.serial->latest = true;
      return r;
    };
    REQUIRE(store->claim(latest("a", k_t0), k_alive).verdict == Verdict::claim);
    REQUIRE(store->claim(latest("b", k_t0 + 1), k_alive).verdict == Verdict::queued);
    ClaimResult c = store->claim(latest("c", k_t0 + 2), k_alive);
    CHECK(c.verdict == Verdict::queued);
    CHECK(c.position == 1);
    CHECK(c.superseded == std::vector<std::string>{"b"});
    auto b = store->get("b");
    REQUIRE(b);
    CHECK(b->status == Status::superseded);
    CHECK(b->superseded_by == "c");
    CHECK(b->finished_ms == k_t0 + 2);
    CHECK(b->expires_ms == k_t0 + 2 + k_day);
    ClaimResult dup = store->claim(latest("b", k_t0 + 3), k_alive);
    CHECK(dup.verdict == Verdict::superseded);
    REQUIRE(dup.existing);
    CHECK(dup.existing->superseded_by == "c");
    idem::store::ListQuery q;
    q.statuses = {Status::superseded};
    q.now_ms = k_t0 + 10;
    CHECK(idem::test::keys_of(listed(*store, q)) == std::vector<std::string>{"b"});
  }
  SECTION("max_pending") {
    auto bounded = [](const std::string& key, int64_t now) {
      ClaimRequest r = serial(key, "g", now);
      r.serial->max_pending = 2;
      return r;
    };
    REQUIRE(store->claim(bounded("a", k_t0), k_alive).verdict == Verdict::claim);
    REQUIRE(store->claim(bounded("b", k_t0 + 1), k_alive).verdict == Verdict::queued);
    REQUIRE(store->claim(bounded("c", k_t0 + 2), k_alive).verdict == Verdict::queued);
    ClaimResult d = store->claim(bounded("d", k_t0 + 3), k_alive);
    CHECK(d.verdict == Verdict::full);
    CHECK_FALSE(store->get("d"));

    // The line's length follows every way out of it and into it (the store keeps it as a count):
    // a waiter withdrawn, one removed, one started, one imported.
    REQUIRE(store->withdraw("c", store->get("c")->attempt_token));
    ClaimResult e = store->claim(bounded("e", k_t0 + 4), k_alive);
    CHECK(e.verdict == Verdict::queued);
    CHECK(e.position == 2);
    CHECK(store->claim(bounded("f", k_t0 + 5), k_alive).verdict == Verdict::full);
    REQUIRE(store->remove("b", false, k_alive) == idem::store::RemoveResult::removed);
    CHECK(store->claim(bounded("f", k_t0 + 6), k_alive).position == 2);
    CHECK(store->claim(bounded("h", k_t0 + 7), k_alive).verdict == Verdict::full);
    REQUIRE(store->finish("a", 1, outcome(Status::succeeded, 0, k_t0 + 8)));
    REQUIRE(store->take_turn(turn("g", "e", e.attempt_token, k_t0 + 9), k_alive).state ==
            TurnResult::State::started);  // e runs; f waits alone
    ClaimResult h = store->claim(bounded("h", k_t0 + 10), k_alive);
    CHECK(h.verdict == Verdict::queued);
    CHECK(h.position == 2);
    // A store that took a line whole (import) counts it too.
    TestType other;
    auto copy = other.open();
    std::vector<idem::core::Record> line;
    for (const auto& r : store->group_line("g", 10)) line.push_back(*store->get(r.key));
    REQUIRE(line.size() == 3);
    CHECK(copy->put_all(line, false) == std::vector<bool>{true, true, true});
    CHECK(copy->claim(bounded("z", k_t0 + 11), k_alive).verdict == Verdict::full);
  }
}

TEMPLATE_TEST_CASE("serial contract: claims racing into one group: one runs, the rest in line",
                   "[store][contract][serial]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  constexpr int n = 8;
  auto results = race(n, [&](int i) {
    auto store = backend.open();
    ClaimRequest r = serial("k" + std::to_string(i), "g", k_t0 + i, 100 + i);
    r.kind = "hook";  // any daemon's to start
    return store->claim(r, k_alive);
  });
  INFO(results.errors);
  CHECK(results.count(idem::test::verdict_is(Verdict::claim)) == 1);
  CHECK(results.count(idem::test::verdict_is(Verdict::queued)) == n - 1);
  std::set<int64_t> places;
  std::vector<std::string> line(n);  // the keys by the place each was told
  for (int i = 0; i < n; ++i) {
    const auto& r = results.results[size_t(i)];
    if (!r || r->verdict != Verdict::queued) continue;
    places.insert(r->position);
    if (r->position >= 1 && r->position < n)
      line[size_t(r->position - 1)] = "k" + std::to_string(i);
  }
  CHECK(places.size() == size_t(n - 1));  // each its own place
  CHECK(*places.rbegin() == n - 1);
  line.pop_back();

  // Drained by racing daemons: never two running at once, every key once, in line order.
  auto store = backend.open();
  std::vector<std::string> order;
  for (int round = 0; round < n; ++round) {
    auto turns = race(4, [&](int i) {
      auto s = backend.open();
      TurnRequest t = turn("g", "", "", k_t0 + 100 + round, 500 + i);
      return s->take_turn(t, k_alive);
    });
    INFO(turns.errors);
    const auto started =
        turns.which([](const TurnResult& t) { return t.state == TurnResult::State::started; });
    if (round == 0) {
      // The first claimer still runs: nothing starts.
      CHECK(started.empty());
      idem::store::ListQuery q;
      q.statuses = {Status::running};
      q.now_ms = k_t0 + 100;
      const auto running = listed(*store, q);
      REQUIRE(running.size() == 1);
      REQUIRE(store->finish(running[0].key, 1, outcome(Status::succeeded, 0, k_t0 + 100)));
      continue;
    }
    REQUIRE(started.size() == 1);
    const idem::core::Record& r = *turns.results[size_t(started[0])]->record;
    order.push_back(r.key);
    REQUIRE(store->finish(r.key, r.attempt, outcome(Status::succeeded, 0, k_t0 + 200 + round)));
  }
  CHECK(order == line);
  CHECK(store->queued_groups("", 10).empty());
}

TEMPLATE_TEST_CASE("serial contract: export and import keep a group's line and its superseded",
                   "[store][contract][serial]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  REQUIRE(store->claim(serial("a", "g"), k_alive).verdict == Verdict::claim);
  REQUIRE(store->claim(serial("b", "g", k_t0 + 1), k_alive).verdict == Verdict::queued);
  ClaimRequest latest = serial("c", "g", k_t0 + 2);
  latest.serial->latest = true;
  REQUIRE(store->claim(latest, k_alive).verdict == Verdict::queued);  // b superseded
  std::vector<idem::core::Record> lines;
  for (const char* key : {"c", "b"})
    lines.push_back(idem::core::record_from_export(idem::core::export_json(*store->get(key))));
  CHECK(lines[0].serial_group == "g");
  CHECK(lines[0].queue_seq != 0);
  CHECK(lines[1].superseded_by == "c");

  TestType other;
  auto copy = other.open();
  CHECK(copy->put_all(lines, false) == std::vector<bool>{true, true});
  auto c = copy->get("c");
  REQUIRE(c);
  CHECK(c->status == Status::queued);
  CHECK(c->serial_group == "g");
  CHECK(copy->get("b")->superseded_by == "c");
  // An imported waiter is any daemon's to start once it is a delivery's; here it is `idem run`'s,
  // whose owner is gone: it leaves the line when its turn comes.
  CHECK(copy->take_turn(turn("g"), k_gone).state == TurnResult::State::empty);
  CHECK_FALSE(copy->get("c"));
}
