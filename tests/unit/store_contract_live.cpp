// The store contract for live output (SPEC §10, core/live.hpp), on every backend: segments are
// kept only for the key's running attempt, read from any offset, and go when the attempt stops
// running, is claimed again or is removed, or (gc) when its owner is gone; and engine::Follower
// reads a running attempt through them and then its stored output, every byte once.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/live.hpp"
#include "core/output.hpp"
#include "engine/follow.hpp"
#include "store/store.hpp"
#include "store_contract.hpp"

namespace unit_store_contract_live {

using idem::core::LiveSegment;
using idem::core::Status;
using idem::core::Stream;
using idem::engine::FollowEnd;
using idem::engine::Follower;
using idem::test::k_alive;
using idem::test::k_gone;
using idem::test::k_t0;
using idem::test::outcome;
using idem::test::request;

LiveSegment segment(int64_t offset, std::vector<std::pair<Stream, std::string>> frames) {
  LiveSegment s;
  s.offset = offset;
  for (const auto& [stream, bytes] : frames) idem::core::add_frame(s, stream, bytes);
  return s;
}

// What the segments hold from `from` on, "o:" / "e:" before each piece.
std::string shown(const std::vector<LiveSegment>& segments, int64_t from) {
  std::string out;
  for (const LiveSegment& s : segments)
    REQUIRE(idem::core::emit_segment(s, from, [&](Stream stream, std::string_view b, int64_t) {
      out += (stream == Stream::out ? "o:" : "e:") + std::string(b);
      return true;
    }));
  return out;
}

// A follower's looks until it ends (at most `looks`), with what it emitted and where.
struct Followed {
  std::string out;
  std::vector<int64_t> offsets;
  std::optional<FollowEnd> end;
};
void look(idem::store::Store& store, Follower& f, Followed& got) {
  got.end = f.look(
      store,
      [&](Stream s, std::string_view b, int64_t after) {
        got.out += (s == Stream::out ? "o:" : "e:") + std::string(b);
        got.offsets.push_back(after);
        return true;
      },
      k_t0);
}

TEMPLATE_TEST_CASE("store contract: live segments of a running attempt, read from any offset",
                   "[store][contract][live]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  REQUIRE(store->claim(request("k"), k_alive).attempt == 1);
  CHECK(store->append_live("k", 1, segment(0, {{Stream::out, "hello"}})));
  CHECK(store->append_live("k", 1, segment(5, {{Stream::err, " wor"}, {Stream::out, "ld"}})));
  // Not the key's running attempt, or no such key: nothing written.
  CHECK_FALSE(store->append_live("k", 2, segment(11, {{Stream::out, "x"}})));
  CHECK_FALSE(store->append_live("other", 1, segment(0, {{Stream::out, "x"}})));

  CHECK(shown(store->read_live("k", 1, 0, 1 << 20), 0) == "o:helloe: woro:ld");
  // From inside the second segment: it, cut, and nothing of the first.
  const auto from7 = store->read_live("k", 1, 7, 1 << 20);
  REQUIRE(from7.size() == 1);
  CHECK(from7[0].offset == 5);
  CHECK(shown(from7, 7) == "e:oro:ld");
  CHECK(shown(store->read_live("k", 1, 11, 1 << 20), 11).empty());
  CHECK(store->read_live("k", 2, 0, 1 << 20).empty());
  // A small budget still reads one segment.
  CHECK(store->read_live("k", 1, 0, 1).size() == 1);

  // The finish takes them away.
  REQUIRE(store->finish("k", 1, outcome(Status::failed, 3, k_t0 + 1)));
  CHECK(store->read_live("k", 1, 0, 1 << 20).empty());
  CHECK_FALSE(store->append_live("k", 1, segment(11, {{Stream::out, "late"}})));
}

TEMPLATE_TEST_CASE("store contract: reads that go on into the same segments",
                   "[store][contract][live]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  REQUIRE(store->claim(request("k"), k_alive).attempt == 1);
  std::vector<LiveSegment> into;
  const auto read_on = [&](int64_t from) {
    const size_t n = store->read_live_into("k", 1, from, 1 << 20, into);
    REQUIRE(n <= into.size());
    return shown(std::vector<LiveSegment>(into.begin(), into.begin() + ptrdiff_t(n)), from);
  };
  CHECK(read_on(0).empty());
  REQUIRE(store->append_live("k", 1, segment(0, {{Stream::out, "abc"}, {Stream::err, "de"}})));
  CHECK(read_on(0) == "o:abce:de");
  CHECK(read_on(5).empty());  // all read: the segment read before stays, unused
  CHECK(into.size() == 1);
  REQUIRE(store->append_live("k", 1, segment(5, {{Stream::out, "f"}})));
  REQUIRE(store->append_live("k", 1, segment(6, {{Stream::out, "gh"}})));
  CHECK(read_on(5) == "o:fo:gh");
  CHECK(read_on(3) == "e:deo:fo:gh");  // back inside the first
  CHECK(read_on(7) == "o:h");          // inside the last

  // The key's record removed, claimed again as attempt 1 with other bytes: a reader that was
  // at byte 8 of the old one reads the new one's, never the old file's rest nor its offsets.
  REQUIRE(store->remove("k", true, k_alive) == idem::store::RemoveResult::removed);
  REQUIRE(store->claim(request("k", k_t0 + 10), k_alive).attempt == 1);
  REQUIRE(store->append_live("k", 1, segment(0, {{Stream::out, "XYZXYZXYZ"}})));
  CHECK(read_on(8) == "o:Z");
  CHECK(read_on(0) == "o:XYZXYZXYZ");
}

TEMPLATE_TEST_CASE("store contract: live segments go with a new attempt, rm and a dead owner",
                   "[store][contract][live]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  // A dead owner's attempt, taken over by the next claim (abandoned, then retried).
  REQUIRE(store->claim(request("k"), k_alive).attempt == 1);
  REQUIRE(store->append_live("k", 1, segment(0, {{Stream::out, "one"}})));
  auto retry = request("k", k_t0 + 10, 200);
  retry.policy.retry_abandoned = true;
  REQUIRE(store->claim(retry, k_gone).attempt == 2);
  CHECK(store->read_live("k", 1, 0, 1 << 20).empty());

  // rm --force of a running key.
  REQUIRE(store->append_live("k", 2, segment(0, {{Stream::out, "two"}})));
  REQUIRE(store->remove("k", true, k_alive) == idem::store::RemoveResult::removed);
  CHECK(store->read_live("k", 2, 0, 1 << 20).empty());

  // gc's part: what is left of attempts that no longer run (a backend may keep them until then),
  // then of attempts whose owner is gone, none while it lives.
  store->drop_stale_live(k_alive, k_t0);
  CHECK(store->drop_stale_live(k_alive, k_t0) == 0);
  REQUIRE(store->claim(request("a"), k_alive).attempt == 1);
  REQUIRE(store->claim(request("b"), k_alive).attempt == 1);
  REQUIRE(store->append_live("a", 1, segment(0, {{Stream::out, "a"}})));
  REQUIRE(store->append_live("b", 1, segment(0, {{Stream::out, "b"}})));
  CHECK(store->drop_stale_live(k_alive, k_t0) == 0);
  CHECK(store->read_live("a", 1, 0, 1 << 20).size() == 1);
  CHECK(store->drop_stale_live(k_gone, k_t0) == 2);
  CHECK(store->read_live("a", 1, 0, 1 << 20).empty());
  CHECK(store->read_live("b", 1, 0, 1 << 20).empty());
  CHECK(store->drop_stale_live(k_gone, k_t0) == 0);
}

TEMPLATE_TEST_CASE("store contract: a follower reads the live segments, then the stored output",
                   "[store][contract][live]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  Followed none;
  Follower missing("k", k_alive);
  look(*store, missing, none);
  REQUIRE(none.end);
  CHECK(none.end->kind == FollowEnd::Kind::missing);

  REQUIRE(store->claim(request("k"), k_alive).attempt == 1);
  Follower early("k", k_alive);
  Followed got;
  look(*store, early, got);
  CHECK_FALSE(got.end);
  CHECK(got.out.empty());
  REQUIRE(store->append_live("k", 1, segment(0, {{Stream::out, "ab"}, {Stream::err, "c"}})));
  look(*store, early, got);
  CHECK_FALSE(got.end);
  CHECK(got.out == "o:abe:c");
  CHECK(early.offset() == 3);
  CHECK(early.emitted());
  look(*store, early, got);  // nothing new
  CHECK_FALSE(early.emitted());

  // The attempt ends: the rest comes from the stored output, at the same offsets.
  idem::core::CapturedOutput all;
  all.append(Stream::out, "ab");
  all.append(Stream::err, "c");
  all.append(Stream::out, "def");
  auto done = outcome(Status::succeeded, 0, k_t0 + 5);
  done.output = all.encode();
  done.output_bytes = 6;
  REQUIRE(store->finish("k", 1, done));
  look(*store, early, got);
  REQUIRE(got.end);
  CHECK(got.end->kind == FollowEnd::Kind::ended);
  CHECK(got.out == "o:abe:co:def");
  CHECK(got.offsets == std::vector<int64_t>{2, 3, 6});

  // One that comes after the end, from an offset inside a frame.
  Follower late("k", k_alive, 1);
  Followed rest;
  look(*store, late, rest);
  REQUIRE(rest.end);
  CHECK(rest.out == "o:be:co:def");
}

TEMPLATE_TEST_CASE("store contract: a follower of a dead owner's attempt ends abandoned",
                   "[store][contract][live]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  REQUIRE(store->claim(request("k"), k_alive).attempt == 1);
  REQUIRE(store->append_live("k", 1, segment(0, {{Stream::out, "partial"}})));
  Follower f("k", k_gone);
  Followed got;
  look(*store, f, got);
  REQUIRE(got.end);
  CHECK(got.end->kind == FollowEnd::Kind::abandoned);
  CHECK(got.out == "o:partial");  // what it published, before the end
  // A new attempt began meanwhile: the one followed is replaced.
  Follower g("k", k_alive);
  Followed first;
  look(*store, g, first);
  auto retry = request("k", k_t0 + 10, 200);
  retry.policy.retry_abandoned = true;
  REQUIRE(store->claim(retry, k_gone).attempt == 2);
  Followed after;
  look(*store, g, after);
  REQUIRE(after.end);
  CHECK(after.end->kind == FollowEnd::Kind::replaced);
}

}  // namespace unit_store_contract_live
