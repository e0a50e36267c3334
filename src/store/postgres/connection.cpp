#include "store/postgres/connection.hpp"

namespace idem::store::postgres {

namespace {

// How long opening the connection may take before the store counts as unreachable.
constexpr const char* k_connect_timeout_s = "10";

}  // namespace

Connection::Connection(const StoreLocation& where) {
  // expand_dbname: "dbname", last, holds the whole URL, so its own parameters win over ours.
  // A network cut shows as a failed call within about ten seconds (keepalives while waiting
  // for an answer, tcp_user_timeout while a request goes unacknowledged), not after the
  // kernel's fifteen minutes: an owner must learn in time that it cannot renew its lease.
  const char* keys[] = {
      "application_name", "connect_timeout",  "keepalives_idle", "keepalives_interval",
      "keepalives_count", "tcp_user_timeout", "dbname",          nullptr};
  const char* values[] = {"idem",  k_connect_timeout_s,  "5",    "2", "3",
                          "10000", where.target.c_str(), nullptr};
  conn_ = PQconnectdbParams(keys, values, 1);
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    std::string why = conn_ != nullptr ? PQerrorMessage(conn_) : "out of memory";
    PQfinish(conn_);
    conn_ = nullptr;
    throw PgError{"", first_line(why)};
  }
  // The server's notices ("relation already exists, skipping") are not the user's business.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
}

}  // namespace idem::store::postgres
