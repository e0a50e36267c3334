// The ledger API: its requests parsed and checked (pure), its helpers (percent-decoding, bearer
// tokens, the constant-time comparison), the token file, and its calls on a real SQLite store
// driven by a fake clock, so leases run out without waiting.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "fakes.hpp"
#include "ledger/ledger.hpp"
#include "temp_dir.hpp"
#include "util/hex.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_ledger {

using idem::ledger::BadField;
using idem::ledger::ClaimCall;
using idem::ledger::FinishCall;
using idem::ledger::HeartbeatCall;
using idem::ledger::Ledger;
using nlohmann::json;

namespace {

template <class Call, class Parsed>
Call ok(const Parsed& parsed) {
  if (const auto* bad = std::get_if<BadField>(&parsed)) FAIL(bad->field + ": " + bad->detail);
  return std::get<Call>(parsed);
}

template <class Parsed>
BadField bad(const Parsed& parsed) {
  REQUIRE(std::holds_alternative<BadField>(parsed));
  return std::get<BadField>(parsed);
}

}  // namespace

TEST_CASE("ledger: a claim's members, their defaults and their forms") {
  auto c = ok<ClaimCall>(idem::ledger::parse_claim(R"({"key": "order-42"})"));
  CHECK(c.key == "order-42");
  CHECK(c.fingerprint.empty());
  CHECK(c.ttl_ms == 24 * 3600 * 1000);
  CHECK(c.lease_ms == 5 * 60 * 1000);
  CHECK_FALSE(c.retry_abandoned);

  c = ok<ClaimCall>(idem::ledger::parse_claim(
      R"({"key": "k", "fingerprint": "v2", "ttl": "7d", "lease": 1.5, "retry_abandoned": true})"));
  CHECK(c.fingerprint == "v2");
  CHECK(c.ttl_ms == 7 * 86400 * 1000LL);
  CHECK(c.lease_ms == 1500);
  CHECK(c.retry_abandoned);
  CHECK(ok<ClaimCall>(idem::ledger::parse_claim(R"({"key": "k", "lease": "90s"})")).lease_ms ==
        90000);
}

TEST_CASE("ledger: a bad claim is refused naming its member") {
  CHECK(bad(idem::ledger::parse_claim("not json")).field.empty());
  CHECK(bad(idem::ledger::parse_claim("[1]")).field.empty());
  CHECK(bad(idem::ledger::parse_claim("{}")).field == "key");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": 7})")).field == "key");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": ""})")).field == "key");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "a\u0001b"})")).field == "key");
  CHECK(bad(idem::ledger::parse_claim(std::string(R"({"key": ")") + std::string(256, 'k') + "\"}"))
            .field == "key");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "k", "ttl": "soon"})")).field == "ttl");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "k", "ttl": -1})")).field == "ttl");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "k", "lease": "500ms"})")).field == "lease");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "k", "lease": 0.5})")).field == "lease");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "k", "retry_abandoned": "yes"})")).field ==
        "retry_abandoned");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "k", "retry_abandon": true})")).field ==
        "retry_abandon");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "k", "fingerprint": 3})")).field == "fingerprint");
}

TEST_CASE("ledger: a member given twice is refused, at any depth") {
  auto twice = bad(idem::ledger::parse_claim(R"({"key": "a", "key": "b"})"));
  CHECK(twice.field == "key");
  CHECK(twice.detail == "member 'key' is given twice");
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "a", "ttl": "1h", "ttl": "1h"})")).field == "ttl");
  CHECK(bad(idem::ledger::parse_heartbeat(
                R"({"key": "k", "attempt_token": "t", "attempt_token": "u"})"))
            .field == "attempt_token");
  CHECK(bad(idem::ledger::parse_finish(
                R"({"key": "k", "attempt_token": "t", "status": "failed", "status": "succeeded"})"))
            .field == "status");
  // Inside a value (refused for its type anyway, but named as given twice first).
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "k", "fingerprint": {"a": 1, "a": 2}})")).field ==
        "a");
  // The same name in two objects is no duplicate.
  CHECK(bad(idem::ledger::parse_claim(R"({"key": "k", "fingerprint": {"key": 1}})")).field ==
        "fingerprint");
}

TEST_CASE("ledger: keys of the daemon's other fronts are refused") {
  for (const char* body : {R"({"key": "/hooks/x#k"})", R"({"key": "/#"})"}) {
    auto b = bad(idem::ledger::parse_claim(body));
    CHECK(b.field == "key");
    CHECK(b.detail == "bad 'key': keys that start with '/' and hold '#' are the hooks' records");
  }
  auto proxy = bad(idem::ledger::parse_claim(R"({"key": "proxy#-#k"})"));
  CHECK(proxy.detail == "bad 'key': keys that start with 'proxy#' are the proxy's records");
  CHECK(bad(idem::ledger::parse_heartbeat(R"({"key": "proxy#-#k", "attempt_token": "t"})")).field ==
        "key");
  CHECK(bad(idem::ledger::parse_finish(
                R"({"key": "/hooks/x#k", "attempt_token": "t", "status": "failed"})"))
            .field == "key");
  CHECK(ok<ClaimCall>(idem::ledger::parse_claim(R"({"key": "/hooks/x"})")).key == "/hooks/x");
  CHECK(ok<ClaimCall>(idem::ledger::parse_claim(R"({"key": "a#b"})")).key == "a#b");
  CHECK(ok<ClaimCall>(idem::ledger::parse_claim(R"({"key": "Proxy#-#k"})")).key == "Proxy#-#k");
}

TEST_CASE("ledger: a heartbeat needs a token, and may name a lease") {
  auto h =
      ok<HeartbeatCall>(idem::ledger::parse_heartbeat(R"({"key": "k", "attempt_token": "t"})"));
  CHECK(h.attempt_token == "t");
  CHECK_FALSE(h.lease_ms);
  h = ok<HeartbeatCall>(
      idem::ledger::parse_heartbeat(R"({"key": "k", "attempt_token": "t", "lease": "2m"})"));
  CHECK(h.lease_ms == 120000);
  CHECK(bad(idem::ledger::parse_heartbeat(R"({"key": "k"})")).field == "attempt_token");
  CHECK(bad(idem::ledger::parse_heartbeat(R"({"key": "k", "attempt_token": ""})")).field ==
        "attempt_token");
}

TEST_CASE("ledger: a finish's outcome") {
  const std::string base = R"("key": "k", "attempt_token": "t")";
  auto f = ok<FinishCall>(idem::ledger::parse_finish("{" + base + R"(, "status": "succeeded",
      "stdout_b64": "aGk=", "stderr_b64": "AAE=", "http_status": 201})"));
  CHECK(f.status == idem::core::Status::succeeded);
  CHECK(f.exit_code == 0);
  CHECK(f.stdout_bytes == "hi");
  CHECK(f.stderr_bytes == std::string("\0\1", 2));
  CHECK(f.http_status == 201);
  f = ok<FinishCall>(idem::ledger::parse_finish("{" + base + R"(, "status": "failed"})"));
  CHECK(f.exit_code == 1);
  f = ok<FinishCall>(
      idem::ledger::parse_finish("{" + base + R"(, "status": "failed", "exit_code": 3})"));
  CHECK(f.exit_code == 3);

  CHECK(bad(idem::ledger::parse_finish("{" + base + "}")).field == "status");
  CHECK(bad(idem::ledger::parse_finish("{" + base + R"(, "status": "done"})")).field == "status");
  CHECK(bad(idem::ledger::parse_finish("{" + base + R"(, "status": "succeeded", "exit_code": 2})"))
            .field == "exit_code");
  CHECK(bad(idem::ledger::parse_finish("{" + base + R"(, "status": "failed", "exit_code": 256})"))
            .field == "exit_code");
  CHECK(bad(idem::ledger::parse_finish("{" + base + R"(, "status": "failed", "exit_code": 1.5})"))
            .field == "exit_code");
  CHECK(
      bad(idem::ledger::parse_finish("{" + base + R"(, "status": "succeeded", "http_status": 99})"))
          .field == "http_status");
  CHECK(bad(idem::ledger::parse_finish("{" + base +
                                       R"(, "status": "succeeded", "stdout_b64": "a!"})"))
            .field == "stdout_b64");
}

TEST_CASE("ledger: percent-decoding of keys in paths") {
  CHECK(idem::ledger::percent_decode("order-42") == "order-42");
  CHECK(idem::ledger::percent_decode("a%2Fb%20c%25") == "a/b c%");
  CHECK(idem::ledger::percent_decode("%e2%82%ac") == "\xe2\x82\xac");
  CHECK(idem::ledger::percent_decode("+") == "+");  // a path is no form: '+' stays
  CHECK_FALSE(idem::ledger::percent_decode("%"));
  CHECK_FALSE(idem::ledger::percent_decode("a%2"));
  CHECK_FALSE(idem::ledger::percent_decode("%G0"));
  CHECK_FALSE(idem::ledger::percent_decode("%0g"));
}

TEST_CASE("ledger: bearer tokens") {
  CHECK(idem::ledger::bearer_token("Bearer abc") == std::string_view("abc"));
  CHECK(idem::ledger::bearer_token("bearer  abc ") == std::string_view("abc"));
  CHECK_FALSE(idem::ledger::bearer_token("Basic abc"));
  CHECK_FALSE(idem::ledger::bearer_token("Bearer "));
  CHECK_FALSE(idem::ledger::bearer_token("Bearerabc"));
}

TEST_CASE("ledger: the token file is made 0600 once, and a loose one is refused") {
  idem::test::TempDir dir;
  const std::string path = dir / "state/idem/idem.db.token";
  const std::string token = idem::ledger::load_ledger_token(path);
  CHECK(token.size() == 64);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat((dir / "state/idem").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(idem::ledger::load_ledger_token(path) == token);

  ::chmod(path.c_str(), 0640);
  CHECK_THROWS_AS(idem::ledger::load_ledger_token(path), idem::StoreError);
  ::chmod(path.c_str(), 0600);
  const std::string link = dir / "link.token";
  REQUIRE(::symlink(path.c_str(), link.c_str()) == 0);
  CHECK_THROWS_AS(idem::ledger::load_ledger_token(link), idem::StoreError);
  const std::string empty = dir / "empty.token";
  std::ofstream(empty).close();
  ::chmod(empty.c_str(), 0600);
  CHECK_THROWS_AS(idem::ledger::load_ledger_token(empty), idem::StoreError);
}

TEST_CASE("ledger: token file paths follow the store") {
  CHECK(idem::ledger::ledger_token_path({"sqlite", "/x/idem.db"}) == "/x/idem.db.token");
}

namespace {

struct LedgerFixture {
  idem::test::TempDir dir;
  idem::test::FakeClock clock;
  std::shared_ptr<idem::store::StoreProvider> stores;
  Ledger ledger;

  LedgerFixture()
      : stores(std::make_shared<idem::store::StoreProvider>(
            [path = dir / "idem.db"] { return idem::store::open_sqlite_store(path); }, 2)),
        ledger(stores, Ledger::client_owner("test-host"), clock) {}

  json body(const idem::front::Answer& a) { return json::parse(a.body); }
};

}  // namespace

TEST_CASE("ledger: claim, heartbeat, finish, replay") {
  LedgerFixture f;
  auto a = f.ledger.claim(R"({"key": "k", "lease": "10s"})");
  REQUIRE(a.status == 201);
  CHECK(a.outcome == "claimed");
  const std::string token = f.body(a)["attempt_token"];
  CHECK(f.body(a)["attempt"] == 1);
  CHECK(f.ledger.claim(R"({"key": "k"})").status == 409);
  CHECK(f.ledger.claim(R"({"key": "k", "fingerprint": "other"})").status == 422);

  f.clock.advance(8000);
  a = f.ledger.heartbeat(json{{"key", "k"}, {"attempt_token", token}}.dump());
  CHECK(a.status == 200);
  CHECK(f.body(a)["lease_ms"] == 10000);  // the claim's lease
  f.clock.advance(8000);                  // past the claim's lease, within the renewed one
  CHECK(f.ledger.claim(R"({"key": "k"})").outcome == "running");
  std::string other = token;  // the token with its first digit changed
  other[0] = other[0] == '0' ? '1' : '0';
  CHECK(
      f.ledger.finish(json{{"key", "k"}, {"attempt_token", other}, {"status", "succeeded"}}.dump())
          .status == 409);
  a = f.ledger.finish(json{{"key", "k"},
                           {"attempt_token", token},
                           {"status", "succeeded"},
                           {"stdout_b64", idem::util::to_base64("done\n")}}
                          .dump());
  REQUIRE(a.status == 200);
  CHECK(a.outcome == "finished");

  a = f.ledger.claim(R"({"key": "k"})");
  REQUIRE(a.status == 200);
  CHECK(a.outcome == "replayed");
  CHECK(f.body(a)["record"]["status"] == "succeeded");
  CHECK(f.body(a)["record"]["stdout_b64"] == idem::util::to_base64("done\n"));
  CHECK(f.body(a)["record"]["kind"] == "ledger");
  CHECK(f.ledger.heartbeat(json{{"key", "k"}, {"attempt_token", token}}.dump()).status == 409);
}

TEST_CASE("ledger: a lease that runs out abandons the attempt and fences its owner off") {
  LedgerFixture f;
  auto a = f.ledger.claim(R"({"key": "k", "lease": "1s"})");
  REQUIRE(a.status == 201);
  const std::string old_token = f.body(a)["attempt_token"];
  f.clock.advance(1000);
  a = f.ledger.claim(R"({"key": "k"})");
  CHECK(a.status == 409);
  CHECK(a.outcome == "abandoned");
  CHECK(f.body(f.ledger.get("k"))["status"] == "abandoned");
  // The paused owner wakes up: its heartbeat is too late even before anyone claimed.
  CHECK(f.ledger.heartbeat(json{{"key", "k"}, {"attempt_token", old_token}}.dump()).status == 409);

  a = f.ledger.claim(R"({"key": "k", "retry_abandoned": true})");
  REQUIRE(a.status == 201);
  CHECK(f.body(a)["attempt"] == 2);
  const std::string new_token = f.body(a)["attempt_token"];
  const auto finish = [&](const std::string& token, const char* out) {
    return f.ledger.finish(json{{"key", "k"},
                                {"attempt_token", token},
                                {"status", "succeeded"},
                                {"stdout_b64", idem::util::to_base64(out)}}
                               .dump());
  };
  a = finish(old_token, "old");
  CHECK(a.status == 409);
  CHECK(a.outcome == "stale");
  CHECK(finish(new_token, "new").status == 200);
  CHECK(finish(old_token, "old").status == 409);
  CHECK(f.body(f.ledger.get("k"))["stdout_b64"] == idem::util::to_base64("new"));
}

TEST_CASE("ledger: records by percent-encoded key, removed unless running") {
  LedgerFixture f;
  REQUIRE(f.ledger.claim(R"({"key": "a/b c", "lease": "1s"})").status == 201);
  auto a = f.ledger.get("a%2Fb%20c");
  REQUIRE(a.status == 200);
  CHECK(f.body(a)["key"] == "a/b c");
  CHECK(f.body(a)["status"] == "running");
  CHECK(f.ledger.get("a%2").status == 400);
  CHECK(f.ledger.get("nope").status == 404);
  CHECK(f.ledger.remove("a%2Fb%20c", false).status == 409);
  f.clock.advance(1000);  // abandoned now: removed without force
  CHECK(f.ledger.remove("a%2Fb%20c", false).status == 204);
  CHECK(f.ledger.remove("a%2Fb%20c", false).status == 404);
  REQUIRE(f.ledger.claim(R"({"key": "r"})").status == 201);
  CHECK(f.ledger.remove("r", true).status == 204);
  // Another front's records are out of reach by path too.
  CHECK(f.ledger.get("%2Fhooks%2Fx%23k").status == 400);
  CHECK(f.ledger.get("proxy%23-%23k").status == 400);
  CHECK(f.ledger.remove("%2Fhooks%2Fx%23k", true).status == 400);
  CHECK(f.ledger.remove("proxy%23-%23k", true).status == 400);
}

}  // namespace unit_ledger
