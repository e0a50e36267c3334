// The store contract suite (see store_contract.hpp): the Store interface's verbs, run against
// every backend in IDEM_CONTRACT_BACKENDS. Nothing here knows which backend it runs on.
#include "store_contract.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/output.hpp"
#include "core/record.hpp"
#include "core/response.hpp"
#include "race.hpp"
#include "store/store.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_store_contract {

using idem::core::Outcome;
using idem::core::Owner;
using idem::core::Record;
using idem::core::Status;
using idem::core::Verdict;
using idem::store::ClaimRequest;
using idem::store::ClaimResult;
using idem::store::GcQuery;
using idem::store::ListQuery;
using idem::store::ListStop;
using idem::store::OwnerGone;
using idem::store::RemoveResult;
using idem::store::Store;
using idem::test::k_alive;
using idem::test::k_day;
using idem::test::k_fp;
using idem::test::k_gone;
using idem::test::k_other_fp;
using idem::test::k_t0;
using idem::test::keys_of;
using idem::test::listed;
using idem::test::outcome;
using idem::test::put_finished;
using idem::test::race;
using idem::test::request;
using idem::test::verdict_is;

TEMPLATE_TEST_CASE("store contract: first claim of a key runs attempt 1 and records it running",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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
  CHECK(r->owner.machine_id == std::string(32, 'a'));
  CHECK(r->owner.pid_ns == 4026532000);
  CHECK(r->started_ms == k_t0);
  CHECK(r->finished_ms == 0);
  CHECK(r->ttl_ms == k_day);
  CHECK(r->expires_ms == 0);  // running records never expire
  CHECK_FALSE(r->exit_code.has_value());
  CHECK_FALSE(r->signal.has_value());
  CHECK(r->request == R"({"argv":["true"],"cwd":"/"})");
  CHECK(r->output.empty());
}

TEMPLATE_TEST_CASE("store contract: a live running key is refused as running, nothing changes",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE("store contract: succeeded outcome is replayed byte-exact", "[store][contract]",
                   IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE("store contract: signal, timeout and truncation survive the round trip",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE("store contract: a response is kept exactly, listed, and cleared by a retry",
                   "[store][contract][response]", IDEM_CONTRACT_BACKENDS) {
  using idem::core::Response;
  TestType backend;
  auto store = backend.open();
  ClaimResult c = store->claim(request("k"), k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  idem::core::CapturedOutput body;
  body.append(idem::core::Stream::out, "{\"id\":7}");
  Outcome o = outcome(Status::succeeded, 0, k_t0 + 10);
  o.output = body.encode();
  o.output_bytes = body.stored_bytes();
  // Headers in an order no sort would give, a name repeated, a value with quotes and UTF-8.
  o.response = Response{201,
                        {{"Location", "/orders/7"},
                         {"ETag", "W/\"7\""},
                         {"Content-Type", "application/json"},
                         {"Set-Cookie", "b=2"},
                         {"Set-Cookie", "a=1"},
                         {"X-Dessert",
                          "cr\xc3\xa8"
                          "me br\xc3\xbb"
                          "l\xc3\xa9"
                          "e"}}};
  REQUIRE(store->finish("k", c.attempt, o));

  auto r = store->get("k");
  REQUIRE(r);
  REQUIRE(r->response);
  CHECK(r->response->status == 201);
  CHECK(r->response->headers == o.response->headers);
  CHECK(r->output == o.output);  // the body: the stored stdout, kept once
  ClaimResult replay = store->claim(request("k", k_t0 + 20, 300), k_alive);
  REQUIRE(replay.verdict == Verdict::replay);
  CHECK(replay.existing->response == o.response);

  // list() carries no output (a listing costs the same whatever it holds), and the answer, so
  // that a listing shows a hook's HTTP status rather than its command's exit code.
  ListQuery q;
  q.now_ms = k_t0 + 20;
  auto rows = listed(*store, q);
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].response);
  CHECK(rows[0].response->status == 201);
  CHECK(rows[0].output.empty());

  // An outcome without one stores none; a new attempt starts without the old one's.
  ClaimResult other = store->claim(request("plain"), k_alive);
  REQUIRE(store->finish("plain", other.attempt, outcome(Status::failed, 1, k_t0 + 5)));
  CHECK_FALSE(store->get("plain")->response);
  Outcome failed = outcome(Status::failed, 1, k_t0 + 30);
  failed.response = Response{500, {}};
  ClaimResult second = store->claim(request("k2"), k_alive);
  REQUIRE(store->finish("k2", second.attempt, failed));
  CHECK(store->get("k2")->response == Response{500, {}});
  REQUIRE(store->claim(request("k2", k_t0 + 40), k_alive).verdict == Verdict::claim);
  CHECK_FALSE(store->get("k2")->response);
}

TEMPLATE_TEST_CASE("store contract: a response that cannot be replayed is refused, nothing written",
                   "[store][contract][response]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimResult c = store->claim(request("k"), k_alive);
  Outcome o = outcome(Status::succeeded, 0, k_t0 + 10);
  o.response = idem::core::Response{200, {{"X-Split", "a\r\nContent-Length: 0"}}};
  CHECK_THROWS_AS(store->finish("k", c.attempt, o), std::invalid_argument);
  auto r = store->get("k");
  REQUIRE(r);
  CHECK(r->status == Status::running);
  o.response->headers.clear();
  CHECK(store->finish("k", c.attempt, o));
}

TEMPLATE_TEST_CASE("store contract: another fingerprint is a conflict and changes nothing",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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
  TestType other_backend;
  auto store2 = other_backend.open();
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

TEMPLATE_TEST_CASE("store contract: a running key whose owner is gone becomes abandoned",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE(
    "store contract: retry_abandoned on a running key with a gone owner claims at once",
    "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE("store contract: finish is conditioned on the attempt", "[store][contract]",
                   IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE("store contract: mark_abandoned only hits the current running attempt",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE("store contract: failed outcomes run again unless replay_failures",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE(
    "store contract: a claim records the command's group it is given, in its own write",
    "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimRequest first = request("k");
  first.group = idem::core::ProcessGroup{4242, 777, "/cron.service/idem-4242-777"};
  ClaimResult c = store->claim(first, k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->process_group.pgid == 4242);
  CHECK(r->process_group.leader_start_ticks == 777);
  CHECK(r->process_group.cgroup == "/cron.service/idem-4242-777");

  // A claim that does not go to its attempt writes nothing of the group it carries.
  ClaimRequest busy = request("k", k_t0 + 50);
  busy.group = idem::core::ProcessGroup{5151, 888};
  CHECK(store->claim(busy, k_alive).verdict == Verdict::running);
  CHECK(store->get("k")->process_group.pgid == 4242);

  // A retry of a failure replaces the old group by its own, or by none.
  REQUIRE(store->finish("k", c.attempt, outcome(Status::failed, 1, k_t0 + 100)));
  ClaimRequest retry = request("k", k_t0 + 200);
  retry.group = idem::core::ProcessGroup{6363, 999};
  REQUIRE(store->claim(retry, k_alive).verdict == Verdict::claim);
  r = store->get("k");
  CHECK(r->attempt == 2);
  CHECK(r->process_group.pgid == 6363);
  CHECK(r->process_group.leader_start_ticks == 999);
  CHECK(r->process_group.cgroup.empty());
  // One recorded after the claim, with its cgroup.
  CHECK(store->set_process_group("k", 2, idem::core::ProcessGroup{6363, 999, "/idem-6363-999"}));
  CHECK(store->get("k")->process_group.cgroup == "/idem-6363-999");
  REQUIRE(store->finish("k", 2, outcome(Status::failed, 1, k_t0 + 300)));
  REQUIRE(store->claim(request("k", k_t0 + 400), k_alive).verdict == Verdict::claim);
  CHECK(store->get("k")->process_group.pgid == 0);
  CHECK(store->get("k")->process_group.cgroup.empty());
  // ls reads it too.
  bool listed = false;
  ListQuery everything;
  store->list(everything, [&](const Record& each) {
    listed = true;
    CHECK(each.process_group.cgroup.empty());
    return true;
  });
  CHECK(listed);
  // Its history starts as any claim's does.
  CHECK(store->history("k").size() == 3);
}

TEMPLATE_TEST_CASE(
    "store contract: the replay policy is kept with the attempt it was claimed under",
    "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  // Claimed with replay_failures: its failure is final for later attempts without it.
  ClaimRequest final_claim = request("final");
  final_claim.policy.replay_failures = true;
  ClaimResult c = store->claim(final_claim, k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  CHECK(store->get("final")->replay_failures);
  REQUIRE(store->finish("final", c.attempt, outcome(Status::failed, 3, k_t0 + 100)));
  auto stored = store->get("final");
  REQUIRE(stored);
  CHECK(stored->replay_failures);
  ClaimResult later = store->claim(request("final", k_t0 + 200, 500), k_alive);
  CHECK(later.verdict == Verdict::replay);
  REQUIRE(later.existing);
  CHECK(later.existing->replay_failures);
  CHECK(later.existing->exit_code == 3);
  CHECK(store->get("final")->attempt == 1);
  ListQuery q;
  q.now_ms = k_t0 + 300;
  q.prefix = "final";
  auto rows = listed(*store, q);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].replay_failures);

  // Claimed without it: the failure runs again, and the new attempt records its own policy.
  ClaimResult first = store->claim(request("plain"), k_alive);
  CHECK_FALSE(store->get("plain")->replay_failures);
  REQUIRE(store->finish("plain", first.attempt, outcome(Status::failed, 4, k_t0 + 100)));
  CHECK_FALSE(store->get("plain")->replay_failures);
  ClaimRequest retry = request("plain", k_t0 + 200);
  retry.policy.replay_failures = false;
  ClaimResult second = store->claim(retry, k_alive);
  REQUIRE(second.verdict == Verdict::claim);
  REQUIRE(store->finish("plain", second.attempt, outcome(Status::failed, 5, k_t0 + 300)));
  // A later attempt with replay_failures replays it (the failure was not final, but this one
  // asks for failures to be replayed), and changes nothing.
  ClaimRequest replaying = request("plain", k_t0 + 400);
  replaying.policy.replay_failures = true;
  CHECK(store->claim(replaying, k_alive).verdict == Verdict::replay);
  CHECK_FALSE(store->get("plain")->replay_failures);
  // An abandoned attempt retried with replay_failures records it for its own failure.
  ClaimResult third = store->claim(request("plain", k_t0 + 500), k_alive);
  REQUIRE(third.verdict == Verdict::claim);
  REQUIRE(store->mark_abandoned("plain", third.attempt));
  ClaimRequest over_abandoned = request("plain", k_t0 + 600);
  over_abandoned.policy = {true, true};
  ClaimResult fourth = store->claim(over_abandoned, k_alive);
  REQUIRE(fourth.verdict == Verdict::claim);
  CHECK(store->get("plain")->replay_failures);
  REQUIRE(store->finish("plain", fourth.attempt, outcome(Status::failed, 6, k_t0 + 700)));
  CHECK(store->claim(request("plain", k_t0 + 800), k_alive).verdict == Verdict::replay);
}

TEMPLATE_TEST_CASE("store contract: an expired record behaves as absent", "[store][contract]",
                   IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE("store contract: list goes on after a cursor, ties by key", "[store][contract]",
                   IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  put_finished(*store, "a/1", k_t0 + 1000, Status::succeeded, k_t0 + 1100);
  put_finished(*store, "a/2", k_t0 + 2000, Status::failed, k_t0 + 2100);
  put_finished(*store, "c/2", k_t0 + 5000, Status::succeeded, k_t0 + 5100);
  put_finished(*store, "c/1", k_t0 + 5000, Status::failed, k_t0 + 5200);  // same start as c/2
  put_finished(*store, "d/1", k_t0 + 6000, Status::succeeded, k_t0 + 6100);
  ListQuery q;
  q.now_ms = k_t0 + 10000;
  using V = std::vector<std::string>;
  q.after = std::pair<int64_t, std::string>{k_t0 + 6000, "d/1"};
  CHECK(keys_of(listed(*store, q)) == V{"c/1", "c/2", "a/2", "a/1"});
  q.after = std::pair<int64_t, std::string>{k_t0 + 5000, "c/1"};  // between two of one start
  CHECK(keys_of(listed(*store, q)) == V{"c/2", "a/2", "a/1"});
  q.limit = 1;
  CHECK(keys_of(listed(*store, q)) == V{"c/2"});
  q.limit = 0;
  q.statuses = {Status::failed};
  CHECK(keys_of(listed(*store, q)) == V{"a/2"});
  q.statuses.clear();
  q.prefix = "c/";
  CHECK(keys_of(listed(*store, q)) == V{"c/2"});
  q.prefix.clear();
  q.after = std::pair<int64_t, std::string>{k_t0 + 999, ""};  // before every start
  CHECK(listed(*store, q).empty());
  q.after = std::pair<int64_t, std::string>{k_t0 + 5000, ""};  // a start, any key
  CHECK(keys_of(listed(*store, q)) == V{"c/1", "c/2", "a/2", "a/1"});
}

TEMPLATE_TEST_CASE("store contract: list filters and orders newest first", "[store][contract]",
                   IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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
  CHECK(keys_of(listed(*store, q)) == V{"d/1", "c/1", "c/2", "b/1", "a/2", "a/1"});

  q.include_expired = true;
  CHECK(keys_of(listed(*store, q)) == V{"d/1", "c/1", "c/2", "a/3", "b/1", "a/2", "a/1"});

  q.statuses = {Status::succeeded};
  CHECK(keys_of(listed(*store, q)) == V{"c/1", "c/2", "a/3", "a/1"});
  q.include_expired = false;
  CHECK(keys_of(listed(*store, q)) == V{"c/1", "c/2", "a/1"});

  q.statuses = {Status::failed, Status::running};
  CHECK(keys_of(listed(*store, q)) == V{"b/1", "a/2"});
  q.statuses = {Status::abandoned};
  CHECK(keys_of(listed(*store, q)) == V{"d/1"});

  q.statuses.clear();
  q.prefix = "a/";
  CHECK(keys_of(listed(*store, q)) == V{"a/2", "a/1"});
  q.include_expired = true;
  CHECK(keys_of(listed(*store, q)) == V{"a/3", "a/2", "a/1"});
  q.prefix = "zzz";
  CHECK(listed(*store, q).empty());

  q.prefix.clear();
  q.limit = 2;
  CHECK(keys_of(listed(*store, q)) == V{"d/1", "c/1"});
  q.limit = 1;
  q.statuses = {Status::succeeded};
  q.prefix = "a/";
  CHECK(keys_of(listed(*store, q)) == V{"a/3"});

  // Listed records carry their fields but no output.
  q = ListQuery{};
  q.now_ms = k_t0 + 10000;
  q.prefix = "a/2";
  auto rows = listed(*store, q);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].status == Status::failed);
  CHECK(rows[0].exit_code == 1);
  CHECK(rows[0].started_ms == k_t0 + 2000);
  CHECK(rows[0].finished_ms == k_t0 + 2100);
  CHECK(rows[0].output.empty());
  CHECK(rows[0].request.empty());
}

TEMPLATE_TEST_CASE("store contract: list prefix is literal, not a pattern", "[store][contract]",
                   IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  for (const char* key : {"x%y", "xay", "x_z", "xbz", "X%y", "\xc3\xa9-1", "\xc3\xa9-2", "e-1"})
    REQUIRE(store->claim(request(key), k_alive).verdict == Verdict::claim);
  ListQuery q;
  q.now_ms = k_t0;
  using V = std::vector<std::string>;
  q.prefix = "x%";
  CHECK(keys_of(listed(*store, q)) == V{"x%y"});
  q.prefix = "x_";
  CHECK(keys_of(listed(*store, q)) == V{"x_z"});
  q.prefix = "\xc3\xa9";
  CHECK(keys_of(listed(*store, q)) == V{"\xc3\xa9-1", "\xc3\xa9-2"});
  q.prefix = "x%y";
  CHECK(keys_of(listed(*store, q)) == V{"x%y"});
  q.prefix = "x%yz";
  CHECK(listed(*store, q).empty());
}

TEMPLATE_TEST_CASE("store contract: remove", "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
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

TEMPLATE_TEST_CASE("store contract: gc removes expired records, never running ones",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  put_finished(*store, "expired-ok", k_t0, Status::succeeded, k_t0 + 10, 100);
  put_finished(*store, "expired-failed", k_t0, Status::failed, k_t0 + 10, 100);
  put_finished(*store, "fresh", k_t0, Status::succeeded, k_t0 + 10, k_day);
  REQUIRE(store->claim(request("running"), k_alive).verdict == Verdict::claim);
  REQUIRE(store->claim(request("abandoned"), k_alive).verdict == Verdict::claim);
  REQUIRE(store->mark_abandoned("abandoned", 1));

  GcQuery q;
  q.now_ms = k_t0 + 1000;
  q.dry_run = true;
  CHECK(store->gc(q).removed == 2);
  CHECK(store->get("expired-ok").has_value());  // a dry run deletes nothing

  q.dry_run = false;
  CHECK(store->gc(q).removed == 2);
  CHECK_FALSE(store->get("expired-ok").has_value());
  CHECK_FALSE(store->get("expired-failed").has_value());
  CHECK(store->get("fresh").has_value());
  CHECK(store->get("running").has_value());
  CHECK(store->get("abandoned").has_value());
  CHECK(store->gc(q).removed == 0);

  // However far in the future: running records stay.
  q.now_ms = k_t0 + 1000 * k_day;
  CHECK(store->gc(q).removed == 1);  // "fresh" has expired by then
  CHECK(store->get("running").has_value());
  CHECK(store->get("abandoned").has_value());  // abandoned records do not expire
}

TEMPLATE_TEST_CASE("store contract: gc --older-than removes finished records older than the cutoff",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  put_finished(*store, "old", k_t0, Status::succeeded, k_t0 + 1000);
  put_finished(*store, "new", k_t0, Status::succeeded, k_t0 + 60000);
  put_finished(*store, "old-failed", k_t0, Status::failed, k_t0 + 2000);
  ClaimRequest running = request("running", k_t0);
  REQUIRE(store->claim(running, k_alive).verdict == Verdict::claim);

  GcQuery q;
  q.now_ms = k_t0 + 100000;
  q.older_than_ms = 50000;  // cutoff: k_t0 + 50000
  q.dry_run = true;
  CHECK(store->gc(q).removed == 2);
  q.dry_run = false;
  CHECK(store->gc(q).removed == 2);
  CHECK_FALSE(store->get("old").has_value());
  CHECK_FALSE(store->get("old-failed").has_value());
  CHECK(store->get("new").has_value());
  CHECK(store->get("running").has_value());

  q.older_than_ms = 1;
  CHECK(store->gc(q).removed == 1);
  CHECK(store->get("running").has_value());

  // Abandoned records never expire, but --older-than counts from when their attempt started.
  REQUIRE(store->claim(request("abandoned", k_t0 + 200000), k_alive).verdict == Verdict::claim);
  REQUIRE(store->mark_abandoned("abandoned", 1));
  q.now_ms = k_t0 + 300000;
  q.older_than_ms = 150000;  // cutoff k_t0 + 150000: started after it, kept
  CHECK(store->gc(q).removed == 0);
  q.older_than_ms = 50000;  // cutoff k_t0 + 250000
  CHECK(store->gc(q).removed == 1);
  CHECK_FALSE(store->get("abandoned").has_value());
  CHECK(store->get("running").has_value());
}

TEMPLATE_TEST_CASE("store contract: concurrent retries of a failed key: exactly one new attempt",
                   "[store][contract][concurrency]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  {
    auto store = backend.open();
    put_finished(*store, "k", k_t0, Status::failed, k_t0 + 1);
  }
  constexpr int k_threads = 6;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < k_threads; ++t) stores.push_back(backend.open());
  auto retries = race(k_threads, [&](int t) {
    return stores[size_t(t)]->claim(request("k", k_t0 + 10, 2000 + t), k_alive);
  });
  const auto a_second_attempt = [](const ClaimResult& c) {
    return c.verdict == Verdict::claim && c.attempt == 2;
  };
  CHECK(retries.errors == "");
  CHECK(retries.count(a_second_attempt) == 1);
  CHECK(retries.count(verdict_is(Verdict::running)) == k_threads - 1);
  CHECK(stores[0]->get("k")->attempt == 2);
}

TEMPLATE_TEST_CASE("store contract: list streams and stops when the visitor says so",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  for (int i = 0; i < 5; ++i)
    put_finished(*store, "k" + std::to_string(i), k_t0 + i, Status::succeeded, k_t0 + 10);
  ListQuery q;
  q.now_ms = k_t0 + 100;
  std::vector<std::string> seen;
  store->list(q, [&](const Record& r) {
    seen.push_back(r.key);
    return seen.size() < 2;
  });
  CHECK(seen == std::vector<std::string>{"k4", "k3"});
  // live = false and no expired: nothing at all.
  q.live = false;
  CHECK(listed(*store, q).empty());
  q.include_expired = true;
  CHECK(listed(*store, q).empty());  // none has expired
  q.now_ms = k_t0 + 2 * k_day;
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"k4", "k3", "k2", "k1", "k0"});
}

// Attempts and leases (contract §1): the token is the claimer's capability, the lease its liveness
// on any host.

TEMPLATE_TEST_CASE("store contract: a claim hands out a fresh unguessable token and its lease",
                   "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  std::set<std::string> tokens;
  for (int i = 0; i < 20; ++i) {
    ClaimResult c = store->claim(request("k" + std::to_string(i)), k_alive);
    REQUIRE(c.verdict == Verdict::claim);
    CHECK(c.attempt_token.size() == 32);  // 128 bits, hex
    CHECK(c.attempt_token.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(c.lease_expires_ms == 0);  // no lease asked for: none
    CHECK(store->get("k" + std::to_string(i))->lease_expires_ms == 0);
    tokens.insert(c.attempt_token);
  }
  CHECK(tokens.size() == 20);

  ClaimRequest leased = request("leased");
  leased.lease_ms = 30000;
  ClaimResult c = store->claim(leased, k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  CHECK(c.lease_expires_ms == k_t0 + 30000);
  auto r = store->get("leased");
  CHECK(r->lease_expires_ms == k_t0 + 30000);
  CHECK(r->attempt_token == c.attempt_token);

  // Other verdicts hand out nothing.
  ClaimResult refused = store->claim(request("leased", k_t0 + 1, 200), k_alive);
  CHECK(refused.verdict == Verdict::running);
  CHECK(refused.attempt_token.empty());
  CHECK(refused.lease_expires_ms == 0);
  REQUIRE(refused.existing.has_value());
  CHECK(refused.existing->attempt_token.empty());  // never the running owner's capability

  // A retry is a new attempt with a new token.
  REQUIRE(store->finish("leased", 1, outcome(Status::failed, 1, k_t0 + 2)));
  CHECK(store->get("leased")->lease_expires_ms == 0);  // an ended attempt holds no lease
  ClaimResult retry = store->claim(request("leased", k_t0 + 3), k_alive);
  REQUIRE(retry.verdict == Verdict::claim);
  CHECK(retry.attempt == 2);
  CHECK(retry.attempt_token.size() == 32);
  CHECK(retry.attempt_token != c.attempt_token);
}

TEMPLATE_TEST_CASE("store contract: heartbeat renews the lease of the token's running attempt",
                   "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimRequest req = request("k");
  req.lease_ms = 1000;
  ClaimResult c = store->claim(req, k_alive);
  REQUIRE(c.verdict == Verdict::claim);

  CHECK(store->heartbeat("k", c.attempt_token, 5000, k_t0 + 900));
  CHECK(store->get("k")->lease_expires_ms == k_t0 + 5900);
  // A shorter lease is allowed too: the owner says how long it needs.
  CHECK(store->heartbeat("k", c.attempt_token, 100, k_t0 + 1000));
  CHECK(store->get("k")->lease_expires_ms == k_t0 + 1100);

  // A stale or wrong token, an unknown key, an empty token: nothing changes.
  const std::string wrong(32, '0');
  CHECK_FALSE(store->heartbeat("k", wrong, 5000, k_t0 + 1050));
  CHECK_FALSE(store->heartbeat("other", c.attempt_token, 5000, k_t0 + 1050));
  CHECK_FALSE(store->heartbeat("k", "", 5000, k_t0 + 1050));
  CHECK(store->get("k")->lease_expires_ms == k_t0 + 1100);

  // lease_ms 0: no lease any more (the pid check alone).
  CHECK(store->heartbeat("k", c.attempt_token, 0, k_t0 + 1050));
  CHECK(store->get("k")->lease_expires_ms == 0);
  CHECK(store->claim(request("k", k_t0 + 100 * k_day, 200), k_alive).verdict == Verdict::running);
  // A lease can be taken again.
  CHECK(store->heartbeat("k", c.attempt_token, 10, k_t0 + 2000));
  CHECK(store->get("k")->lease_expires_ms == k_t0 + 2010);

  // Once the attempt has ended the token renews nothing.
  REQUIRE(store->finish("k", c.attempt, outcome(Status::succeeded, 0, k_t0 + 2005)));
  CHECK_FALSE(store->heartbeat("k", c.attempt_token, 5000, k_t0 + 2006));
  auto r = store->get("k");
  CHECK(r->status == Status::succeeded);
  CHECK(r->lease_expires_ms == 0);
}

TEMPLATE_TEST_CASE("store contract: a lease that ran out is not renewed and counts as abandoned",
                   "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimRequest req = request("k");
  req.lease_ms = 1000;
  ClaimResult c = store->claim(req, k_alive);
  REQUIRE(c.verdict == Verdict::claim);

  // Before its expiry another claimer is refused, whatever it sees of the owner: an unexpired
  // lease is never overruled by local evidence (the owner is not even looked at).
  int asked = 0;
  OwnerGone alive_elsewhere = [&](const Owner&) {
    ++asked;
    return false;
  };
  OwnerGone seems_gone = [&](const Owner&) {
    ++asked;
    return true;
  };
  CHECK(store->claim(request("k", k_t0 + 999, 200), alive_elsewhere).verdict == Verdict::running);
  CHECK(store->claim(request("k", k_t0 + 999, 200), seems_gone).verdict == Verdict::running);
  CHECK(store->get("k")->status == Status::running);
  CHECK(asked == 0);

  // At its expiry, no heartbeat came in time: a late one is refused, even before anyone looked.
  CHECK_FALSE(store->heartbeat("k", c.attempt_token, 1000, k_t0 + 1000));
  CHECK(store->get("k")->lease_expires_ms == k_t0 + 1000);

  // The next claim finds it abandoned without asking about the owner, and records that.
  asked = 0;
  ClaimResult seen = store->claim(request("k", k_t0 + 1000, 200), alive_elsewhere);
  CHECK(seen.verdict == Verdict::abandoned);
  CHECK(asked == 0);
  REQUIRE(seen.existing.has_value());
  CHECK(seen.existing->status == Status::abandoned);
  auto r = store->get("k");
  CHECK(r->status == Status::abandoned);
  CHECK(r->attempt == 1);
  CHECK(r->note == "lease ran out mid-run");

  // With retry_abandoned it runs again, as a new attempt with a new token; the old token is dead.
  ClaimRequest retry = request("k", k_t0 + 1001, 300);
  retry.policy.retry_abandoned = true;
  retry.lease_ms = 1000;
  retry.owner.machine_id = std::string(32, 'b');  // another host's
  retry.owner.pid_ns = 4026531836;
  ClaimResult again = store->claim(retry, alive_elsewhere);
  REQUIRE(again.verdict == Verdict::claim);
  CHECK(again.attempt == 2);
  CHECK(again.lease_expires_ms == k_t0 + 2001);
  CHECK_FALSE(store->heartbeat("k", c.attempt_token, 1000, k_t0 + 1002));
  CHECK_FALSE(store->release("k", c.attempt_token));
  CHECK_FALSE(store->finish("k", c.attempt, outcome(Status::succeeded, 0, k_t0 + 1003)));
  CHECK(store->heartbeat("k", again.attempt_token, 1000, k_t0 + 1500));
  CHECK(store->get("k")->owner.pid == 300);
  CHECK(store->get("k")->owner.machine_id == std::string(32, 'b'));
  CHECK(store->get("k")->owner.pid_ns == 4026531836);
}

TEMPLATE_TEST_CASE("store contract: an outcome finished after its lease ran out is not recorded",
                   "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimRequest req = request("k");
  req.lease_ms = 1000;
  REQUIRE(store->claim(req, k_alive).verdict == Verdict::claim);
  CHECK_FALSE(store->finish("k", 1, outcome(Status::succeeded, 0, k_t0 + 1000)));
  CHECK(store->get("k")->status == Status::running);  // abandoned by its lease
  ClaimRequest in_time = request("j");
  in_time.lease_ms = 1000;
  REQUIRE(store->claim(in_time, k_alive).verdict == Verdict::claim);
  CHECK(store->finish("j", 1, outcome(Status::succeeded, 0, k_t0 + 999)));
}

TEMPLATE_TEST_CASE(
    "store contract: a running record whose lease ran out is abandoned at once "
    "with retry_abandoned",
    "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimRequest req = request("k");
  req.lease_ms = 10;
  REQUIRE(store->claim(req, k_alive).verdict == Verdict::claim);
  ClaimRequest retry = request("k", k_t0 + 10, 200);
  retry.policy.retry_abandoned = true;
  ClaimResult c = store->claim(retry, k_alive);
  CHECK(c.verdict == Verdict::claim);
  CHECK(c.attempt == 2);
  CHECK(store->get("k")->lease_expires_ms == 0);  // this claim asked for no lease
}

TEMPLATE_TEST_CASE("store contract: releasing a first attempt leaves the key as never claimed",
                   "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimRequest req = request("k");
  req.lease_ms = 1000;
  ClaimResult c = store->claim(req, k_alive);
  REQUIRE(c.verdict == Verdict::claim);

  // A wrong or empty token changes nothing.
  CHECK_FALSE(store->release("k", std::string(32, 'f')));
  CHECK_FALSE(store->release("k", ""));
  CHECK_FALSE(store->release("absent", c.attempt_token));
  CHECK(store->get("k")->status == Status::running);

  CHECK(store->release("k", c.attempt_token));
  CHECK_FALSE(store->get("k").has_value());
  ListQuery q;
  q.now_ms = k_t0;
  q.include_expired = true;
  CHECK(listed(*store, q).empty());
  // The token is stale now: releasing again, renewing or finishing changes nothing.
  CHECK_FALSE(store->release("k", c.attempt_token));
  CHECK_FALSE(store->heartbeat("k", c.attempt_token, 1000, k_t0 + 1));
  CHECK_FALSE(store->finish("k", c.attempt, outcome(Status::succeeded, 0, k_t0 + 2)));
  CHECK_FALSE(store->get("k").has_value());

  // The next claim is a first attempt again, even with another fingerprint.
  ClaimRequest other = request("k", k_t0 + 3, 200);
  other.fingerprint = k_other_fp;
  ClaimResult next = store->claim(other, k_alive);
  CHECK(next.verdict == Verdict::claim);
  CHECK(next.attempt == 1);
  CHECK(next.attempt_token != c.attempt_token);
}

TEMPLATE_TEST_CASE("store contract: releasing the claim of an expired record deletes it",
                   "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  put_finished(*store, "k", k_t0, Status::succeeded, k_t0 + 1, 10);
  ClaimResult c = store->claim(request("k", k_t0 + 11, 200), k_alive);  // expired: as absent
  REQUIRE(c.verdict == Verdict::claim);
  REQUIRE(c.attempt == 1);
  CHECK(store->release("k", c.attempt_token));
  CHECK_FALSE(store->get("k").has_value());
}

TEMPLATE_TEST_CASE("store contract: releasing a retry goes back to the abandoned attempt before it",
                   "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimResult first = store->claim(request("k"), k_alive);
  REQUIRE(first.verdict == Verdict::claim);
  REQUIRE(store->mark_abandoned("k", first.attempt));
  ClaimRequest retry = request("k", k_t0 + 10, 200);
  retry.policy.retry_abandoned = true;
  ClaimResult second = store->claim(retry, k_alive);
  REQUIRE(second.verdict == Verdict::claim);
  REQUIRE(second.attempt == 2);

  CHECK_FALSE(store->release("k", first.attempt_token));  // stale: the first attempt's
  CHECK(store->get("k")->attempt == 2);
  CHECK(store->release("k", second.attempt_token));
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::abandoned);
  CHECK(r->attempt == 1);
  CHECK(r->attempt_token.empty());
  CHECK(r->lease_expires_ms == 0);
  CHECK(r->note == "attempt 2 was released");
  CHECK_FALSE(store->release("k", second.attempt_token));

  // As before the retry: refused without retry_abandoned, run as attempt 2 with it.
  CHECK(store->claim(request("k", k_t0 + 20, 300), k_alive).verdict == Verdict::abandoned);
  retry.now_ms = k_t0 + 30;
  ClaimResult third = store->claim(retry, k_alive);
  CHECK(third.verdict == Verdict::claim);
  CHECK(third.attempt == 2);
}

TEMPLATE_TEST_CASE("store contract: releasing a retried failure leaves it abandoned",
                   "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  put_finished(*store, "k", k_t0, Status::failed, k_t0 + 1);
  ClaimResult retry = store->claim(request("k", k_t0 + 10, 200), k_alive);
  REQUIRE(retry.verdict == Verdict::claim);
  REQUIRE(retry.attempt == 2);
  CHECK(store->release("k", retry.attempt_token));
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::abandoned);
  CHECK(r->attempt == 1);
  // The failure's outcome is gone: nothing to replay, nothing run again unasked.
  ClaimRequest replaying = request("k", k_t0 + 20, 300);
  replaying.policy.replay_failures = true;
  CHECK(store->claim(replaying, k_alive).verdict == Verdict::abandoned);
}

TEMPLATE_TEST_CASE("store contract: a finished attempt cannot be released",
                   "[store][contract][lease]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  ClaimResult c = store->claim(request("k"), k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  REQUIRE(store->finish("k", c.attempt, outcome(Status::succeeded, 0, k_t0 + 1)));
  CHECK_FALSE(store->release("k", c.attempt_token));
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::succeeded);
  CHECK(store->claim(request("k", k_t0 + 2, 200), k_alive).verdict == Verdict::replay);
}

TEMPLATE_TEST_CASE("store contract: concurrent releases and claims: the release lands once",
                   "[store][contract][lease][concurrency]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  constexpr int k_threads = 4;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < k_threads; ++t) stores.push_back(backend.open());
  ClaimResult c = stores[0]->claim(request("k"), k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  // Each thread releases the first claim, then claims the key itself.
  struct Turn {
    bool released;
    Verdict claim;
  };
  auto turns = race(k_threads, [&](int t) {
    Store& store = *stores[size_t(t)];
    const bool released = store.release("k", c.attempt_token);
    return Turn{released, store.claim(request("k", k_t0 + 1, 500 + t), k_alive).verdict};
  });
  CHECK(turns.errors == "");
  CHECK(turns.count([](const Turn& turn) { return turn.released; }) == 1);
  CHECK(turns.count([](const Turn& turn) { return turn.claim == Verdict::claim; }) == 1);
  auto r = stores[0]->get("k");
  REQUIRE(r.has_value());
  CHECK(r->attempt == 1);
  CHECK(r->status == Status::running);
  CHECK(r->owner.pid >= 500);
}

TEMPLATE_TEST_CASE("store contract: put writes a record as given, replaces only when told",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  Record r;
  r.key = "imported";
  r.fingerprint = k_fp;
  r.kind = "run";
  r.status = Status::succeeded;
  r.attempt = 4;
  r.replay_failures = true;
  r.owner = Owner{"elsewhere", "boot", 77, 88, std::string(32, 'e'), 4026531836};
  r.attempt_token = "0123456789abcdef0123456789abcdef";
  r.process_group = {99, 100, "/idem-99-100"};
  r.started_ms = k_t0;
  r.finished_ms = k_t0 + 10;
  r.ttl_ms = k_day;
  r.expires_ms = k_t0 + 10 + k_day;
  r.exit_code = 0;
  idem::core::CapturedOutput captured;
  captured.append(idem::core::Stream::out, std::string("a\0b", 3));
  captured.append(idem::core::Stream::err, "e");
  r.output = captured.encode();
  r.output_bytes = captured.stored_bytes();
  r.request = R"({"argv":["x"]})";
  r.note = "n";
  r.response = idem::core::Response{201, {{"Location", "/x"}}};
  REQUIRE(store->put(r, false));

  auto back = store->get("imported");
  REQUIRE(back.has_value());
  CHECK(back->attempt_token.empty());  // never imported: an owner's capability
  r.attempt_token.clear();
  CHECK(back->output == r.output);
  CHECK(back->response == r.response);
  CHECK(back->attempt == 4);
  CHECK(back->replay_failures);
  CHECK(back->owner.host == "elsewhere");
  CHECK(back->owner.start_ticks == 88);
  CHECK(back->owner.machine_id == std::string(32, 'e'));
  CHECK(back->owner.pid_ns == 4026531836);
  CHECK(back->process_group.pgid == 99);
  CHECK(back->process_group.leader_start_ticks == 100);
  CHECK(back->process_group.cgroup == "/idem-99-100");
  CHECK(back->expires_ms == r.expires_ms);
  CHECK(back->exit_code == 0);
  CHECK(back->request == r.request);
  CHECK(back->note == "n");

  // A later claim replays it.
  ClaimResult c = store->claim(request("imported"), k_alive);
  CHECK(c.verdict == Verdict::replay);

  Record other = r;
  other.note = "other";
  other.output.clear();
  CHECK_FALSE(store->put(other, false));
  CHECK(store->get("imported")->note == "n");
  CHECK(store->put(other, true));
  auto replaced = store->get("imported");
  CHECK(replaced->note == "other");
  CHECK(replaced->output.empty());
}

TEMPLATE_TEST_CASE("store contract: put_all writes a batch at once, leaving out keys that exist",
                   "[store][contract]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  auto record = [](const std::string& key, const std::string& note) {
    Record r;
    r.key = key;
    r.fingerprint = k_fp;
    r.status = Status::failed;
    r.owner = Owner{"h", "b", 1, 2};
    r.started_ms = k_t0;
    r.finished_ms = k_t0 + 1;
    r.ttl_ms = k_day;
    r.expires_ms = k_t0 + 1 + k_day;
    r.exit_code = 3;
    r.note = note;
    return r;
  };
  REQUIRE(store->put(record("there", "old"), false));
  // A key already there and a key twice in the batch: the later one finds the earlier.
  const std::vector<Record> batch = {record("a", "1"), record("there", "new"), record("b", "2"),
                                     record("a", "again")};
  CHECK(store->put_all(batch, false) == std::vector<bool>{true, false, true, false});
  CHECK(store->get("a")->note == "1");
  CHECK(store->get("b")->note == "2");
  CHECK(store->get("there")->note == "old");
  CHECK(store->put_all(batch, true) == std::vector<bool>{true, true, true, true});
  CHECK(store->get("a")->note == "again");
  CHECK(store->get("there")->note == "new");
  CHECK(store->put_all({}, false).empty());
}

// --- Attempt history and replay counts --------------------------------------------------------

TEMPLATE_TEST_CASE(
    "store contract: every attempt of a key is kept, written with its claim and "
    "its finish",
    "[store][contract][history]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  CHECK(store->history("k").empty());
  ClaimRequest req = request("k", k_t0, 100);
  REQUIRE(store->claim(req, k_alive).verdict == Verdict::claim);
  auto h = store->history("k");
  REQUIRE(h.size() == 1);
  CHECK(h[0].number == 1);
  CHECK(h[0].trigger == "run");
  CHECK(h[0].host == "host-a");
  CHECK(h[0].pid == 100);
  CHECK(h[0].started_ms == k_t0);
  CHECK(h[0].ended_ms == 0);
  CHECK(h[0].outcome == Status::running);
  CHECK(h[0].reason.empty());
  REQUIRE(store->finish("k", 1, outcome(Status::failed, 3, k_t0 + 50)));
  // The failure runs again, as a manual re-run from another process, and is answered this time.
  req = request("k", k_t0 + 100, 200);
  req.kind = "http";
  req.trigger = idem::core::k_trigger_rerun;
  REQUIRE(store->claim(req, k_alive).verdict == Verdict::claim);
  Outcome answered = outcome(Status::succeeded, 0, k_t0 + 130);
  answered.response = idem::core::Response{201, {}};
  REQUIRE(store->finish("k", 2, answered));
  h = store->history("k");
  REQUIRE(h.size() == 2);
  CHECK(h[0].outcome == Status::failed);
  CHECK(h[0].reason == "exit");
  CHECK(h[0].exit_code == 3);
  CHECK(h[0].ended_ms == k_t0 + 50);
  CHECK(h[0].http_status == std::nullopt);
  CHECK(h[1].number == 2);
  CHECK(h[1].trigger == "rerun");
  CHECK(h[1].pid == 200);
  CHECK(h[1].outcome == Status::succeeded);
  CHECK(h[1].reason == "status");
  CHECK(h[1].http_status == 201);
  CHECK(h[1].ended_ms == k_t0 + 130);
  // A stale finish changes neither the record nor its history.
  CHECK_FALSE(store->finish("k", 1, outcome(Status::succeeded, 0, k_t0 + 140)));
  CHECK(store->history("k")[1].ended_ms == k_t0 + 130);
  // Another key's history is its own.
  REQUIRE(store->claim(request("k2", k_t0), k_alive).verdict == Verdict::claim);
  CHECK(store->history("k").size() == 2);
  CHECK(store->history("k2").size() == 1);
  CHECK(store->history("k2")[0].trigger == "run");
}

TEMPLATE_TEST_CASE(
    "store contract: the history says why an attempt ended: timeout, signal, an "
    "error, its owner's death, its lease, a release",
    "[store][contract][history]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  // Finished attempts.
  REQUIRE(store->claim(request("timeout"), k_alive).verdict == Verdict::claim);
  Outcome timed = outcome(Status::failed, 124, k_t0 + 10);
  timed.timed_out = true;
  REQUIRE(store->finish("timeout", 1, timed));
  CHECK(store->history("timeout")[0].reason == "timeout");
  REQUIRE(store->claim(request("signal"), k_alive).verdict == Verdict::claim);
  Outcome killed = outcome(Status::failed, std::nullopt, k_t0 + 10);
  killed.signal = 9;
  REQUIRE(store->finish("signal", 1, killed));
  CHECK(store->history("signal")[0].reason == "signal");
  CHECK(store->history("signal")[0].signal == 9);
  REQUIRE(store->claim(request("error"), k_alive).verdict == Verdict::claim);
  Outcome error = outcome(Status::failed, std::nullopt, k_t0 + 10);
  error.note = "upstream unreachable";
  REQUIRE(store->finish("error", 1, error));
  CHECK(store->history("error")[0].reason == "error");
  CHECK(store->history("error")[0].note == "upstream unreachable");
  // The owner died: the next claim marks it, and retries it when allowed.
  REQUIRE(store->claim(request("died"), k_alive).verdict == Verdict::claim);
  ClaimRequest retry = request("died", k_t0 + 100, 101);
  retry.policy.retry_abandoned = true;
  REQUIRE(store->claim(retry, k_gone).verdict == Verdict::claim);
  auto h = store->history("died");
  REQUIRE(h.size() == 2);
  CHECK(h[0].outcome == Status::abandoned);
  CHECK(h[0].reason == "owner died");
  CHECK(h[1].outcome == Status::running);
  // mark_abandoned says the same.
  CHECK(store->mark_abandoned("died", 2));
  CHECK(store->history("died")[1].reason == "owner died");
  // A lease that ran out.
  ClaimRequest leased = request("leased");
  leased.lease_ms = 1000;
  REQUIRE(store->claim(leased, k_alive).verdict == Verdict::claim);
  CHECK(store->claim(request("leased", k_t0 + 5000), k_alive).verdict == Verdict::abandoned);
  CHECK(store->history("leased")[0].reason == "lease ran out");
  // A release: a first attempt's goes with its record; a later one's is kept, ended as released,
  // and the next claim is a new entry after it.
  ClaimResult first = store->claim(request("rel"), k_alive);
  REQUIRE(store->release("rel", first.attempt_token));
  CHECK(store->history("rel").empty());
  REQUIRE(store->claim(request("rel"), k_alive).verdict == Verdict::claim);
  REQUIRE(store->finish("rel", 1, outcome(Status::failed, 1, k_t0 + 10)));
  ClaimResult second = store->claim(request("rel", k_t0 + 20), k_alive);
  REQUIRE(second.verdict == Verdict::claim);
  REQUIRE(store->release("rel", second.attempt_token));
  REQUIRE(store
              ->claim(
                  [] {
                    ClaimRequest r = request("rel", k_t0 + 30);
                    r.policy.retry_abandoned = true;
                    return r;
                  }(),
                  k_alive)
              .verdict == Verdict::claim);
  h = store->history("rel");
  REQUIRE(h.size() == 3);
  CHECK(h[0].outcome == Status::failed);
  CHECK(h[1].outcome == Status::abandoned);
  CHECK(h[1].reason == "released");
  CHECK(h[2].number == 3);
  CHECK(h[2].outcome == Status::running);
  CHECK(store->get("rel")->attempt == 2);
}

TEMPLATE_TEST_CASE(
    "store contract: a history ends with its record: removed, collected, or "
    "expired and claimed again",
    "[store][contract][history]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  put_finished(*store, "rm", k_t0, Status::succeeded, k_t0 + 1);
  REQUIRE(store->history("rm").size() == 1);
  REQUIRE(store->remove("rm", false, k_alive) == RemoveResult::removed);
  CHECK(store->history("rm").empty());
  // gc: every expired record's history goes, in its batches, a live one's stays.
  for (int i = 0; i < 7; ++i)
    put_finished(*store, "old" + std::to_string(i), k_t0, Status::failed, k_t0 + 1, 1000);
  put_finished(*store, "live", k_t0, Status::succeeded, k_t0 + 1);
  GcQuery gc;
  gc.now_ms = k_t0 + 10'000;
  CHECK(store->gc(gc).removed == 7);
  for (int i = 0; i < 7; ++i) CHECK(store->history("old" + std::to_string(i)).empty());
  CHECK(store->history("live").size() == 1);
  // A key claimed again after its record expired starts a new history at 1, its replays at 0.
  put_finished(*store, "exp", k_t0, Status::failed, k_t0 + 1, 1000);
  const idem::store::ReplayCount counted{"exp", 2, k_t0 + 2};
  store->count_replays({&counted, 1});
  REQUIRE(store->claim(request("exp", k_t0 + 5000), k_alive).verdict == Verdict::claim);
  auto h = store->history("exp");
  REQUIRE(h.size() == 1);
  CHECK(h[0].number == 1);
  CHECK(h[0].started_ms == k_t0 + 5000);
  CHECK(store->get("exp")->replays == 0);
  CHECK(store->get("exp")->last_replay_ms == 0);
}

TEMPLATE_TEST_CASE("store contract: replays are counted per key, the last one's time kept",
                   "[store][contract][history]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  put_finished(*store, "a", k_t0, Status::succeeded, k_t0 + 1);
  put_finished(*store, "b", k_t0, Status::succeeded, k_t0 + 1);
  CHECK(store->get("a")->replays == 0);
  const std::vector<idem::store::ReplayCount> batch{
      {"a", 3, k_t0 + 50}, {"b", 1, k_t0 + 20}, {"gone", 5, k_t0 + 20}};
  store->count_replays(batch);
  const idem::store::ReplayCount late{"a", 1, k_t0 + 40};  // flushed after a later one
  store->count_replays({&late, 1});
  CHECK(store->get("a")->replays == 4);
  CHECK(store->get("a")->last_replay_ms == k_t0 + 50);
  CHECK(store->get("b")->replays == 1);
  CHECK_FALSE(store->get("gone"));  // a count for a key without a record makes none
  // A new attempt keeps the count (the record is the same); the replayed record shows it.
  ClaimResult replay = store->claim(request("a", k_t0 + 60), k_alive);
  REQUIRE(replay.verdict == Verdict::replay);
  CHECK(replay.existing->replays == 4);
}

TEMPLATE_TEST_CASE(
    "store contract: ls filters by kind and by the attempt's start, through its "
    "order",
    "[store][contract][history]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  for (int i = 0; i < 6; ++i) {
    ClaimRequest req = request("k" + std::to_string(i), k_t0 + i * 1000);
    req.kind = i % 2 ? "http" : "run";
    REQUIRE(store->claim(req, k_alive).verdict == Verdict::claim);
  }
  ListQuery q;
  q.now_ms = k_t0 + 10'000;
  q.kind = "http";
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"k5", "k3", "k1"});
  q.kind.clear();
  q.since_ms = k_t0 + 2000;
  q.until_ms = k_t0 + 5000;
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"k4", "k3", "k2"});
  q.kind = "run";
  q.limit = 1;
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"k4"});
  q.limit = 0;
  q.prefix = "k2";
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"k2"});
}

TEMPLATE_TEST_CASE("store contract: an imported record's history is its current attempt",
                   "[store][contract][history]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  Record r;
  r.key = "imp";
  r.fingerprint = k_fp;
  r.kind = "proxy";
  r.status = Status::failed;
  r.attempt = 3;
  r.owner = idem::test::owner(7);
  r.started_ms = k_t0;
  r.finished_ms = k_t0 + 9;
  r.ttl_ms = k_day;
  r.expires_ms = k_t0 + k_day;
  r.response = idem::core::Response{502, {}};
  REQUIRE(store->put(r, false));
  auto h = store->history("imp");
  REQUIRE(h.size() == 1);
  CHECK(h[0].number == 3);
  CHECK(h[0].trigger == "proxy");
  CHECK(h[0].outcome == Status::failed);
  CHECK(h[0].reason == "status");
  CHECK(h[0].http_status == 502);
  CHECK(h[0].ended_ms == k_t0 + 9);
  REQUIRE(store->put(r, true));  // replaced: one entry still
  CHECK(store->history("imp").size() == 1);
}

// --- Bounded reads: an output by ranges, a history kept to its newest attempts ----------------

TEMPLATE_TEST_CASE("store contract: an output is read by byte ranges, binary bytes and all",
                   "[store][contract][output]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  idem::core::CapturedOutput captured;
  std::string binary;
  for (int i = 0; i < 3 * 65536 + 17; ++i) binary.push_back(char(i * 7 % 256));
  captured.append(idem::core::Stream::out, binary);
  captured.append(idem::core::Stream::err, std::string("\0\xff\x01 err", 7));
  const std::string encoded = captured.encode();
  const int64_t size = int64_t(encoded.size());
  auto c = store->claim(request("k"), k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  // Nothing stored yet.
  CHECK(store->read_output("k", c.attempt, 0, 100).empty());
  Outcome o = outcome(Status::succeeded, 0, k_t0 + 10);
  o.output = encoded;
  o.output_bytes = captured.stored_bytes();
  REQUIRE(store->finish("k", c.attempt, o));
  // The start, the middle, the end, past the end.
  CHECK(store->read_output("k", c.attempt, 0, 10) == encoded.substr(0, 10));
  CHECK(store->read_output("k", c.attempt, 70000, 65536) == encoded.substr(70000, 65536));
  CHECK(store->read_output("k", c.attempt, size - 9, 100) == encoded.substr(size_t(size - 9)));
  CHECK(store->read_output("k", c.attempt, 0, size + 1000) == encoded);
  CHECK(store->read_output("k", c.attempt, size, 10).empty());
  CHECK(store->read_output("k", c.attempt, size + 5000, 10).empty());
  CHECK(store->read_output("k", c.attempt, 5, 0).empty());
  // Another attempt's, or another key's: none.
  CHECK(store->read_output("k", c.attempt + 1, 0, 10).empty());
  CHECK(store->read_output("other", 1, 0, 10).empty());
  // The record without its output says how large it is.
  auto head = store->get_without_output("k");
  REQUIRE(head);
  CHECK(head->output.empty());
  CHECK(head->output_bytes == captured.stored_bytes());
  CHECK(head->status == Status::succeeded);
  CHECK_FALSE(store->get_without_output("other"));
  // A removed record takes its output along.
  store->remove("k", true, k_alive);
  CHECK(store->read_output("k", c.attempt, 0, 10).empty());
}

TEMPLATE_TEST_CASE("store contract: a key's history keeps its newest attempts, counting the others",
                   "[store][contract][history]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  constexpr int64_t keep = 4;
  auto store = backend.open(idem::store::StoreOptions{std::nullopt, keep});
  for (int64_t i = 0; i < keep + 5; ++i) {
    auto c = store->claim(request("k", k_t0 + i * 100, 100 + i), k_alive);
    REQUIRE(c.verdict == Verdict::claim);
    REQUIRE(store->finish("k", c.attempt, outcome(Status::failed, int(i), k_t0 + i * 100 + 50)));
  }
  idem::store::HistoryPage page = store->history_page("k", {});
  REQUIRE(page.entries.size() == size_t(keep));
  CHECK(page.entries.front().number == 6);
  CHECK(page.entries.back().number == keep + 5);
  CHECK(page.entries.back().exit_code == int(keep + 4));
  CHECK(page.first_kept == 6);
  CHECK(page.last == keep + 5);
  CHECK(page.not_kept() == 5);
  CHECK(page.earlier() == 5);
  // A page: the two newest below 9, oldest first.
  page = store->history_page("k", idem::store::HistoryQuery{2, 9});
  REQUIRE(page.entries.size() == 2);
  CHECK(page.entries[0].number == 7);
  CHECK(page.entries[1].number == 8);
  CHECK(page.earlier() == 6);
  CHECK(page.not_kept() == 5);
  // Another key is kept apart; a key without a record has nothing.
  REQUIRE(store->claim(request("k2"), k_alive).verdict == Verdict::claim);
  CHECK(store->history("k2").size() == 1);
  CHECK(store->history_page("k2", {}).not_kept() == 0);
  CHECK(store->history_page("none", {}).entries.empty());
  CHECK(store->history_page("none", {}).last == 0);
}

TEMPLATE_TEST_CASE("store contract: put_all writes the replay count and the history given",
                   "[store][contract][history]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  put_finished(*store, "k", k_t0, Status::succeeded, k_t0 + 10);
  Record r = *store->get("k");
  r.key = "copy";
  r.attempt = 3;
  r.replays = 7;
  r.last_replay_ms = k_t0 + 500;
  std::vector<idem::core::HistoryEntry> history(2);
  history[0].number = 2;
  history[0].trigger = "hook";
  history[0].host = "h";
  history[0].pid = 9;
  history[0].started_ms = k_t0 - 100;
  history[0].ended_ms = k_t0 - 50;
  history[0].outcome = Status::failed;
  history[0].reason = "status";
  history[0].http_status = 502;
  history[0].note = "n";
  history[1] = history[0];
  history[1].number = 3;
  history[1].outcome = Status::succeeded;
  history[1].http_status = 200;
  history[1].exit_code = 0;
  const std::vector<std::vector<idem::core::HistoryEntry>> histories{history};
  REQUIRE(store->put_all({&r, 1}, false, histories)[0]);
  auto copy = store->get("copy");
  REQUIRE(copy);
  CHECK(copy->replays == 7);
  CHECK(copy->last_replay_ms == k_t0 + 500);
  idem::store::HistoryPage page = store->history_page("copy", {});
  REQUIRE(page.entries.size() == 2);
  CHECK(page.not_kept() == 1);
  CHECK(page.entries[0].number == 2);
  CHECK(page.entries[0].trigger == "hook");
  CHECK(page.entries[0].ended_ms == k_t0 - 50);
  CHECK(page.entries[0].outcome == Status::failed);
  CHECK(page.entries[0].http_status == 502);
  CHECK(page.entries[0].exit_code == std::nullopt);
  CHECK(page.entries[0].note == "n");
  CHECK(page.entries[1].outcome == Status::succeeded);
  CHECK(page.entries[1].exit_code == 0);
  // Without a history: its current attempt alone, as before.
  r.key = "plain";
  REQUIRE(store->put(r, false));
  REQUIRE(store->history("plain").size() == 1);
  CHECK(store->history("plain")[0].number == 3);
}

// The page's filters (contract §7c): each condition read from an index of its own, alone or
// combined, gives exactly the records that pass it, and a scan bounded by scan_limit, taken up
// again after where it stopped, lists the same records in the same order.
TEMPLATE_TEST_CASE(
    "store contract: list by kind, status and result class, alone, combined, bounded",
    "[store][contract][filter]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  struct Shape {
    const char* key;
    const char* kind;
    Status status;
    std::optional<int> exit_code;
    std::optional<int> signal;
    bool timed_out;
    int http;  // the answer's status; 0: none
  };
  const Shape shapes[] = {
      {"h200", "http", Status::succeeded, 0, {}, false, 200},
      {"h500", "http", Status::failed, 3, {}, false, 500},  // its command exited 3
      {"h404", "http", Status::failed, 1, {}, false, 404},
      {"h302", "http", Status::succeeded, 0, {}, false, 302},
      {"r0", "run", Status::succeeded, 0, {}, false, 0},
      {"r3", "run", Status::failed, 3, {}, false, 0},
      {"rsig", "run", Status::failed, {}, 9, false, 0},
      {"rtime", "run", Status::failed, {}, 15, true, 0},
      {"p502", "proxy", Status::failed, {}, {}, false, 502},
      {"e0", "each", Status::succeeded, 0, {}, false, 0},
      {"e1", "each", Status::failed, 1, {}, false, 0},
  };
  int64_t t = k_t0;
  for (const Shape& s : shapes) {
    ClaimRequest req = request(s.key, t += 1000);
    req.kind = s.kind;
    ClaimResult c = store->claim(req, k_alive);
    REQUIRE(c.verdict == Verdict::claim);
    Outcome o = outcome(s.status, s.exit_code, t + 10);
    o.signal = s.signal;
    o.timed_out = s.timed_out;
    if (s.http) o.response = idem::core::Response{s.http, {}};
    REQUIRE(store->finish(s.key, c.attempt, o));
  }
  ClaimRequest running = request("running", t += 1000);
  running.kind = "run";
  REQUIRE(store->claim(running, k_alive).verdict == Verdict::claim);

  // What each record is, as read whole, newest first.
  std::vector<idem::core::Record> all;
  ListQuery every;
  every.now_ms = t + 1000;
  for (const auto& r : listed(*store, every)) all.push_back(*store->get(r.key));
  REQUIRE(all.size() == std::size(shapes) + 1);
  CHECK(idem::core::result_class(*store->get("h500")) == "5xx");

  using V = std::vector<std::string>;
  const std::vector<std::string> results{"", "2xx", "3xx", "4xx", "5xx", "exit0", "exit_nonzero"};
  const std::vector<std::string> kinds{"", "http", "run", "proxy", "each", "ledger"};
  const std::vector<std::optional<Status>> statuses{std::nullopt, Status::succeeded, Status::failed,
                                                    Status::running};
  for (const std::string& result : results)
    for (const std::string& kind : kinds)
      for (const auto& status : statuses) {
        ListQuery q = every;
        q.result = result;
        q.kind = kind;
        if (status) q.statuses = {*status};
        V want;
        for (const auto& r : all)
          if ((result.empty() || idem::core::result_class(r) == result) &&
              (kind.empty() || r.kind == kind) && (!status || r.status == *status))
            want.push_back(r.key);
        INFO("result=" << result << " kind=" << kind
                       << " status=" << (status ? idem::core::to_string(*status) : ""));
        CHECK(keys_of(listed(*store, q)) == want);
        // Pages of a scan of at most 2 entries each, each after the last one's stop.
        V paged;
        ListStop stop;
        int scans = 0;
        do {
          q.scan_limit = 2;
          q.after = stop;
          stop = store->list(q, [&](const idem::core::Record& r) {
            paged.push_back(r.key);
            return true;
          });
          REQUIRE(++scans <= int(all.size()));
        } while (stop);
        CHECK(paged == want);
      }
  // A listing's records carry their answer's status (the page shows it, not the exit code).
  ListQuery hooks = every;
  hooks.result = "5xx";
  hooks.kind = "http";
  const auto rows = listed(*store, hooks);
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].response);
  CHECK(rows[0].response->status == 500);
}

}  // namespace unit_store_contract
