// The contract suite's PostgreSQL backend (store_contract.hpp): a schema per case on the test
// cluster, made and dropped through libpq directly (the store itself is opened by URL).
#ifdef IDEM_TEST_POSTGRES
#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>

#include "store_contract.hpp"
#include "util/random.hpp"

namespace idem::test {

namespace {

std::string test_cluster_url() {
  const char* url = std::getenv("IDEM_TEST_PG_URL");
  if (url == nullptr || *url == '\0') {
    std::fprintf(stderr,
                 "SKIP: IDEM_TEST_PG_URL is not set (scripts/test.sh starts a cluster for it)\n");
    std::exit(77);
  }
  return url;
}

// Runs one statement of fixed text on a connection of its own; fails the test on an error.
void run_admin(const std::string& url, const std::string& sql) {
  PGconn* conn = PQconnectdb(url.c_str());
  const bool connected = PQstatus(conn) == CONNECTION_OK;
  std::string error = connected ? "" : PQerrorMessage(conn);
  if (connected) {
    PGresult* r = PQexec(conn, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK) error = PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(conn);
  if (!error.empty()) FAIL("test cluster: " << sql << ": " << error);
}

}  // namespace

PostgresBackend::PostgresBackend() {
  const std::string base = test_cluster_url();
  schema_ = "idem_test_" + util::random_hex(8);  // hex: nothing to quote
  run_admin(base, "CREATE SCHEMA " + schema_);
  url_ = base + (base.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
         schema_ + "&application_name=" + schema_;
}

PostgresBackend::~PostgresBackend() {
  PGconn* conn = PQconnectdb(test_cluster_url().c_str());
  if (PQstatus(conn) == CONNECTION_OK)
    PQclear(PQexec(
        conn, ("SET client_min_messages = warning; DROP SCHEMA " + schema_ + " CASCADE").c_str()));
  PQfinish(conn);
}

std::unique_ptr<store::Store> PostgresBackend::open(const store::StoreOptions& options) {
  return store::open_store(store::parse_store_url(url_, "IDEM_TEST_PG_URL"), options);
}

}  // namespace idem::test
#endif
