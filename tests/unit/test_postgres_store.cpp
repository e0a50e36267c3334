// What only the PostgreSQL backend has: its schema created once by concurrent first opens, its
// plans (ls's first page and gc through indexes on a large table), its refusals. The behaviour
// both backends share is the contract suite (store_contract.cpp), which runs against it too.
#ifdef IDEM_TEST_POSTGRES
#include <libpq-fe.h>

#include <string>
#include <vector>

#include "core/errors.hpp"
#include "fixtures.hpp"
#include "race.hpp"
#include "store/postgres/sql.hpp"
#include "store_contract.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_postgres_store {

using namespace idem;
using namespace idem::test;

namespace {

// A plain libpq connection to the backend's schema, for what the store never does itself.
class Admin {
 public:
  explicit Admin(const std::string& url) : conn_(PQconnectdb(url.c_str())) {
    REQUIRE(PQstatus(conn_) == CONNECTION_OK);
  }
  ~Admin() { PQfinish(conn_); }
  Admin(const Admin&) = delete;
  Admin& operator=(const Admin&) = delete;

  // The first column of every row, one line each.
  std::string query(const std::string& sql, const std::vector<std::string>& params = {},
                    const std::vector<Oid>& types = {}) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    PGresult* r =
        PQexecParams(conn_, sql.c_str(), int(values.size()), types.empty() ? nullptr : types.data(),
                     values.data(), nullptr, nullptr, 0);
    const ExecStatusType status = PQresultStatus(r);
    std::string out;
    if (status == PGRES_TUPLES_OK)
      for (int i = 0; i < PQntuples(r); ++i) out += std::string(PQgetvalue(r, i, 0)) + "\n";
    std::string error =
        status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK ? "" : PQresultErrorMessage(r);
    PQclear(r);
    if (!error.empty()) FAIL(sql << ": " << error);
    return out;
  }

 private:
  PGconn* conn_;
};

// Runs a script of several statements on the schema at `url`, as one transaction.
void run_script(const std::string& url, const std::string& script) {
  PGconn* conn = PQconnectdb(url.c_str());
  REQUIRE(PQstatus(conn) == CONNECTION_OK);
  PGresult* r = PQexec(conn, script.c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  std::string error = ok ? "" : PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(conn);
  REQUIRE(error.empty());
}

// n records rec-0000000.. one second apart, i % 100 == 1 expired, i % 100 == 98 running on
// another host, the rest live until 2096; then ANALYZE, as autovacuum would.
void fill(Admin& admin, int n) {
  admin.query(R"sql(
    INSERT INTO idem_records (key, fingerprint, kind, status, attempt, owner_host,
                              owner_boot_id, owner_pid, owner_start, started_at, finished_at,
                              ttl_ms, expires_at, exit_code, output, output_bytes, request)
    SELECT 'rec-' || lpad(i::text, 7, '0'), repeat('a', 64), 'run',
           CASE WHEN i % 100 = 98 THEN 'running' ELSE 'succeeded' END, 1, 'elsewhere.invalid',
           'boot', 1, 1, 1700000000000 + i * 1000::bigint,
           CASE WHEN i % 100 = 98 THEN NULL ELSE 1700000000000 + i * 1000::bigint + 5 END,
           86400000,
           CASE WHEN i % 100 = 98 THEN NULL
                WHEN i % 100 = 1 THEN 1700000000000 + i * 1000::bigint + 3600000
                ELSE 4000000000000 END,
           CASE WHEN i % 100 = 98 THEN NULL ELSE 0 END, '\x01'::bytea, 1, '{}'
    FROM generate_series(0, $1::int - 1) AS i)sql",
              {std::to_string(n)});
  admin.query("ANALYZE idem_records");
}

constexpr Oid k_int8 = 20, k_text = 25, k_text_array = 1009;

}  // namespace

TEST_CASE("postgres store: concurrent first opens create the schema once", "[store][postgres]") {
  PostgresBackend backend;
  constexpr int k_threads = 12;
  auto opens = race(k_threads, [&](int) {
    auto store = backend.open();
    store->claim(request("k"), k_alive);  // claim or running: one record either way
  });
  CHECK(opens.errors == "");
  Admin admin(backend.url());
  CHECK(admin.query("SELECT version FROM idem_schema") ==
        std::to_string(idem::store::postgres_sql::k_schema_version) + "\n");
  CHECK(admin.query("SELECT count(*) FROM idem_records") == "1\n");
}

TEST_CASE(
    "postgres store: a connection the server dropped is made again, and only "
    "repeatable writes are repeated",
    "[store][postgres]") {
  PostgresBackend backend;
  auto store = backend.open();
  REQUIRE(store->claim(request("a"), k_alive).verdict == core::Verdict::claim);
  auto drop_connections = [&] {
    Admin(backend.url())
        .query(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
            " WHERE application_name = $1 AND pid <> pg_backend_pid()",
            {backend.schema()});
  };
  // A claim begins with BEGIN: lost there, nothing reached the server, so it runs again on a
  // new connection (a server restarted while a pooled connection sat idle).
  drop_connections();
  CHECK(store->claim(request("b"), k_alive).verdict == core::Verdict::claim);
  // A single-statement write that is not repeatable may have committed before the loss: it is
  // not repeated, the error is transient, and the next operation connects again.
  drop_connections();
  try {
    const store::ReplayCount one{"a", 1, 1000};
    store->count_replays({&one, 1});
    FAIL("a write on a dropped connection succeeded");
  } catch (const StoreError& e) {
    CHECK(e.transient());
  }
  CHECK(store->get("a")->replays == 0);
  // A finish is repeatable: done again on a new connection, and a repeat of one that landed
  // (its answer lost) says it is recorded.
  drop_connections();
  const core::Outcome done = outcome(core::Status::succeeded, 0, k_t0 + 5);
  CHECK(store->finish("b", 1, done));
  CHECK(store->get("b")->status == core::Status::succeeded);
  CHECK(store->finish("b", 1, done));
  CHECK_FALSE(store->finish("b", 1, outcome(core::Status::failed, 1, k_t0 + 6)));
  CHECK(store->get("b")->exit_code == 0);
}

TEST_CASE(
    "postgres store: a version 1 schema is migrated, its records kept, no failure final, "
    "no owner's pid judged",
    "[store][postgres]") {
  PostgresBackend backend;
  // A version 1 store: the schema as version 1 created it, and records it wrote.
  run_script(backend.url(), fixture("schema/postgres-v1.sql"));
  auto store = backend.open();
  Admin admin(backend.url());
  CHECK(admin.query("SELECT version FROM idem_schema") ==
        std::to_string(idem::store::postgres_sql::k_schema_version) + "\n");
  CHECK(admin.query("SELECT key || ' ' || replay_failures FROM idem_records ORDER BY key") ==
        "done false\nfailed false\n");
  // The partial index of unfinished records (version 3's, queued ones too since version 8),
  // which holds none of these finished ones.
  CHECK(
      admin
          .query("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()"
                 " AND indexname = 'idem_records_unfinished'")
          .find(
              "WHERE (status = ANY (ARRAY['running'::text, 'abandoned'::text, 'queued'::text]))") !=
      std::string::npos);
  // Version 4's owner columns: no machine id and no pid namespace for the records from before,
  // whose pids are then never judged (proc::owner_gone).
  CHECK(admin.query("SELECT key || ' ' || quote_literal(owner_machine_id) || ' ' || owner_pid_ns"
                    " FROM idem_records ORDER BY key") == "done '' 0\nfailed '' 0\n");
  auto failed = store->get("failed");
  REQUIRE(failed);
  CHECK(failed->owner.machine_id.empty());
  CHECK(failed->owner.pid_ns == 0);
  CHECK_FALSE(failed->replay_failures);
  CHECK(failed->exit_code == 3);
  auto done = store->get("done");
  REQUIRE(done);
  CHECK(done->output == std::string("\x01\x01\x03\0\0\0ok\n", 9));
  store::ClaimRequest retry = request("failed", 3000);
  retry.fingerprint = "fp";
  store::ClaimResult again = store->claim(retry, k_alive);
  REQUIRE(again.verdict == core::Verdict::claim);
  CHECK(again.attempt == 3);
  CHECK(admin.query("SELECT replay_failures FROM idem_records WHERE key = 'failed'") == "f\n");
  CHECK(store->get("failed")->owner.machine_id == retry.owner.machine_id);
  CHECK(store->get("failed")->owner.pid_ns == retry.owner.pid_ns);
}

TEST_CASE("postgres store: a newer schema is refused, permanently", "[store][postgres]") {
  PostgresBackend backend;
  backend.open();
  Admin(backend.url()).query("UPDATE idem_schema SET version = 99");
  try {
    backend.open();
    FAIL("a newer schema opened");
  } catch (const StoreError& e) {
    CHECK_FALSE(e.transient());
    CHECK(std::string(e.what()).find("newer than this idem") != std::string::npos);
  }
}

TEST_CASE("postgres store: ls's first page and gc go through their indexes on a large table",
          "[store][postgres]") {
  PostgresBackend backend;
  auto store = backend.open();
  Admin admin(backend.url());
  fill(admin, 100000);
  const std::string now = std::to_string(k_t0);
  const std::vector<Oid> list_types{k_int8, k_text_array, k_text, k_int8, k_text, k_int8};
  auto explain_list = [&](const store::ListQuery& q) {
    return admin.query("EXPLAIN " + store::postgres_sql::list_page(q, false),
                       {now, "{succeeded}", "rec-%", "0", "", "20"}, list_types);
  };
  store::ListQuery live;
  std::string plan = explain_list(live);
  CHECK(plan.find("idem_records_by_recent") != std::string::npos);
  CHECK(plan.find("Sort") == std::string::npos);
  store::ListQuery done;
  done.statuses = {core::Status::succeeded};
  plan = explain_list(done);
  CHECK(plan.find("idem_records_by_recent") != std::string::npos);
  CHECK(plan.find("Sort") == std::string::npos);
  // Unfinished records alone (`ls --status running`, doctor) from their partial index, which
  // holds no finished record.
  auto explain_unfinished = [&](const store::ListQuery& q, const char* statuses) {
    return admin.query("EXPLAIN " + store::postgres_sql::list_page(q, true),
                       {now, statuses, "rec-%", "4000000000000", "", "20"}, list_types);
  };
  store::ListQuery unfinished;
  unfinished.statuses = {core::Status::running};
  plan = explain_unfinished(unfinished, "{running}");
  INFO(plan);
  CHECK(plan.find("idem_records_unfinished") != std::string::npos);
  CHECK(plan.find("Sort") == std::string::npos);
  unfinished.statuses = {core::Status::running, core::Status::abandoned};
  unfinished.prefix = "rec-";
  plan = explain_unfinished(unfinished, "{running,abandoned}");
  INFO(plan);
  CHECK(plan.find("idem_records_unfinished") != std::string::npos);
  CHECK(plan.find("Sort") == std::string::npos);
  CHECK(admin.query("SELECT count(*) FROM idem_records WHERE status IN ('running', 'abandoned')"
                    " AND key LIKE 'rec-%'") == "1000\n");

  const std::vector<Oid> gc_types{k_int8, k_int8, k_int8};
  plan = admin.query("EXPLAIN " + store::postgres_sql::gc_delete_batch(false), {now, "0", "500"},
                     gc_types);
  CHECK(plan.find("idem_records_expiring") != std::string::npos);
  CHECK(plan.find("Seq Scan") == std::string::npos);
  plan =
      admin.query("EXPLAIN " + store::postgres_sql::gc_count(false), {now, "0", "500"}, gc_types);
  CHECK(plan.find("idem_records_expiring") != std::string::npos);

  // And the store agrees: a first page of 20, then the expired records gone, running ones kept.
  CHECK(listed(*store,
               [&] {
                 store::ListQuery q;
                 q.limit = 20;
                 q.now_ms = k_t0;
                 return q;
               }())
            .size() == 20);
  CHECK(store->gc(store::GcQuery{k_t0, 0, false}).removed == 1000);
  CHECK(admin.query("SELECT count(*) FROM idem_records WHERE status = 'running'") == "1000\n");
}

TEST_CASE(
    "postgres store: a version 4 schema's records get their current attempt as their "
    "history",
    "[store][postgres][history]") {
  PostgresBackend backend;
  // A version 4 store: the schema as steps 0 -> 4 created it, and records version 4 wrote.
  run_script(backend.url(), fixture("schema/postgres-v4.sql"));
  auto store = backend.open();
  Admin admin(backend.url());
  CHECK(admin.query("SELECT version FROM idem_schema") ==
        std::to_string(idem::store::postgres_sql::k_schema_version) + "\n");
  CHECK(admin.query("SELECT key || ' ' || number || ' ' || started_by || ' ' || outcome || ' ' || "
                    "reason || ' ' || coalesce(http_status::text, '-') || ' ' || "
                    "coalesce(ended_at::text, '-') FROM idem_attempts ORDER BY key") ==
        "failed 2 run failed exit - 2000\n"
        "hook 1 hook succeeded status 202 2100\n"
        "leased 1 ledger abandoned lease ran out - -\n"
        "running 1 begin running  - -\n"
        "slow 1 each failed timeout - 1400\n");
  CHECK(admin.query("SELECT sum(replays) FROM idem_records") == "0\n");
  // The history goes on from there, and goes with its record.
  store::ClaimRequest retry = request("failed", 3000);
  retry.fingerprint = "fp";
  REQUIRE(store->claim(retry, k_alive).verdict == core::Verdict::claim);
  auto h = store->history("failed");
  REQUIRE(h.size() == 2);
  CHECK(h[0].number == 2);
  CHECK(h[1].number == 3);
  REQUIRE(store->remove("hook", false, k_alive) == store::RemoveResult::removed);
  CHECK(admin.query("SELECT count(*) FROM idem_attempts WHERE key = 'hook'") == "0\n");
}

}  // namespace unit_postgres_store
#endif
