// The store factory: which URL names which backend, the precedence of --store, IDEM_STORE, --db,
// IDEM_DB and the default (contract §2), and the refusals (usage errors, a backend not built).
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "core/errors.hpp"
#include "env_guard.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_store_url {

using idem::StoreError;
using idem::UsageError;
using idem::store::parse_store_url;
using idem::store::store_location;
using idem::test::EnvGuard;
using idem::test::TempDir;

namespace {

std::string usage_error_of(const std::string& url) {
  try {
    parse_store_url(url, "--store");
  } catch (const UsageError& e) {
    CHECK(e.code() == idem::k_exit_usage);
    return e.what();
  }
  FAIL("no usage error for '" << url << "'");
  return "";
}

}  // namespace

TEST_CASE("store url: sqlite:PATH and bare paths name SQLite files", "[store][url]") {
  auto check = [](const std::string& url, const std::string& path) {
    auto where = parse_store_url(url, "--store");
    CHECK(where.scheme == "sqlite");
    CHECK(where.target == path);
    CHECK(where.display() == path);
  };
  check("sqlite:/var/lib/idem.db", "/var/lib/idem.db");
  check("sqlite:rel/idem.db", "rel/idem.db");
  check("sqlite:///abs/idem.db", "/abs/idem.db");
  check("sqlite:a:b.db", "a:b.db");
  check("/tmp/idem.db", "/tmp/idem.db");
  check("idem.db", "idem.db");
  check("./a:b.db", "./a:b.db");
  check("dir/a:b.db", "dir/a:b.db");
}

TEST_CASE("store url: postgres URLs are recognised, their password never displayed",
          "[store][url]") {
  for (const char* url : {"postgres://db.example/idem", "postgresql://db.example/idem"}) {
    auto where = parse_store_url(url, "--store");
    CHECK(where.scheme == "postgres");
    CHECK(where.target == url);
  }
  auto secret = parse_store_url("postgres://idem:hunter2@db.example:5432/idem", "--store");
  CHECK(secret.display() == "postgres://db.example:5432/idem");
}

TEST_CASE("store url: unknown schemes and empty paths are usage errors naming the URL",
          "[store][url]") {
  CHECK(usage_error_of("mysql://x/y").find("unknown store scheme 'mysql'") != std::string::npos);
  CHECK(usage_error_of("mysql://x/y").find("--store 'mysql://x/y'") != std::string::npos);
  CHECK(usage_error_of("sqlite:").find("no path") != std::string::npos);
  CHECK(usage_error_of("").find("empty") != std::string::npos);
  CHECK(usage_error_of("sqlite://host/idem.db").find("sqlite:PATH") != std::string::npos);
  CHECK(usage_error_of("a:b.db").find("unknown store scheme 'a'") != std::string::npos);
}

TEST_CASE("store url: --store, then IDEM_STORE, then --db, then IDEM_DB, then the default",
          "[store][url]") {
  EnvGuard no_store("IDEM_STORE", std::nullopt);
  EnvGuard no_db("IDEM_DB", std::nullopt);
  EnvGuard state("XDG_STATE_HOME", "/state");
  CHECK(store_location("", "").target == "/state/idem/idem.db");
  {
    EnvGuard db("IDEM_DB", "/env.db");
    CHECK(store_location("", "").target == "/env.db");
    CHECK(store_location("", "/flag.db").target == "/flag.db");
    {
      EnvGuard store("IDEM_STORE", "sqlite:/env-store.db");
      CHECK(store_location("", "/flag.db").target == "/env-store.db");
      CHECK(store_location("sqlite:/flag-store.db", "/flag.db").target == "/flag-store.db");
      EnvGuard empty("IDEM_STORE", "");  // empty counts as unset, as for IDEM_DB
      CHECK(store_location("", "/flag.db").target == "/flag.db");
    }
  }
  EnvGuard bad("IDEM_STORE", "nope:x");
  CHECK_THROWS_AS(store_location("", "/flag.db"), UsageError);
  try {
    store_location("", "");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("IDEM_STORE 'nope:x'") != std::string::npos);
  }
}

TEST_CASE("store url: open_store opens SQLite; an unreachable PostgreSQL is a transient error",
          "[store][url]") {
  TempDir dir;
  auto store = idem::store::open_store(parse_store_url("sqlite:" + (dir / "idem.db"), "--store"));
  CHECK_FALSE(store->get("k").has_value());
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
  try {
    idem::store::open_store(parse_store_url("postgres://u:pw@127.0.0.1:1/idem", "--store"));
    FAIL("a PostgreSQL URL opened");
  } catch (const StoreError& e) {
    CHECK(e.code() == idem::k_exit_store);
    const std::string what = e.what();
    if (idem::store::has_postgres_backend()) {
      CHECK(e.transient());
      CHECK(what.find("127.0.0.1") != std::string::npos);
    } else {
      CHECK_FALSE(e.transient());
      CHECK(what.find("no PostgreSQL backend") != std::string::npos);
    }
    CHECK(what.find("pw") == std::string::npos);
  }
}

}  // namespace unit_store_url
