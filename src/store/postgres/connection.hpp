#pragma once
// The PostgreSQL store's connection wrappers: one libpq connection, its parameterised statements
// (binary results), and transactions. With postgres/store.cpp, postgres/schema.cpp and
// postgres/sql.hpp, the only code that includes <libpq-fe.h>.
#include <endian.h>
#include <libpq-fe.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace idem::store::postgres {

// Tries of a transaction that the server aborted as a serialization failure or a deadlock.
constexpr int k_serialization_tries = 8;

// Type OIDs of the parameters (pg_type.h), given so the server never has to guess one.
constexpr Oid k_int8 = 20;
constexpr Oid k_text = 25;
constexpr Oid k_bytea = 17;
constexpr Oid k_text_array = 1009;

// A server error with its SQLSTATE, before it becomes a StoreError.
struct PgError {
  std::string sqlstate;  // empty: no answer (the connection is gone)
  std::string message;
  bool retryable() const { return sqlstate == "40001" || sqlstate == "40P01"; }
  // A later try may get past it by itself: a lost connection, a lock wait that timed out, a
  // server shutting down or short of resources, a transaction retried too often.
  bool transient() const {
    if (sqlstate.empty() || retryable()) return true;
    const std::string cls = sqlstate.substr(0, 2);
    return cls == "08" || cls == "53" || cls == "57" || sqlstate == "55P03";
  }
};

// The parameters of one statement: text values (integers in decimal), NULLs, and bytea passed
// as binary without a copy (an output can be 900 MiB: it must outlive the statement's run).
class Params {
 public:
  Params& text(std::string value) { return add(k_text, std::move(value)); }
  Params& integer(int64_t value) { return add(k_int8, std::to_string(value)); }
  Params& optional_integer(const std::optional<int>& value) {
    return value ? integer(*value) : null(k_int8);
  }
  Params& optional_text(const std::optional<std::string>& value) {
    return value ? text(*value) : null(k_text);
  }
  Params& integer_or_null(int64_t value) { return value != 0 ? integer(value) : null(k_int8); }
  Params& text_array(const std::vector<std::string>& values) {
    std::string literal = "{";
    for (size_t i = 0; i < values.size(); ++i) literal += (i ? "," : "") + values[i];
    return add(k_text_array, literal + "}");  // status names: letters only, nothing to quote
  }
  Params& bytes(const std::string& value) {
    items_.push_back({k_bytea, {}, &value, false});
    return *this;
  }
  Params& null(Oid type) {
    items_.push_back({type, {}, nullptr, true});
    return *this;
  }

  int size() const { return int(items_.size()); }
  // Arrays for PQexecParams, valid while this object lives and is not changed.
  void arrays(std::vector<Oid>& types, std::vector<const char*>& values, std::vector<int>& lengths,
              std::vector<int>& formats) const {
    for (const Item& item : items_) {
      types.push_back(item.type);
      const std::string* value = item.binary != nullptr ? item.binary : &item.value;
      values.push_back(item.null ? nullptr : value->data());
      lengths.push_back(item.null ? 0 : int(value->size()));
      formats.push_back(item.binary != nullptr ? 1 : 0);
    }
  }

 private:
  struct Item {
    Oid type;
    std::string value;
    const std::string* binary;
    bool null;
  };
  Params& add(Oid type, std::string value) {
    items_.push_back({type, std::move(value), nullptr, false});
    return *this;
  }
  std::vector<Item> items_;
};

// A result in binary format: integers big-endian, booleans one byte, text and bytea raw.
class Result {
 public:
  explicit Result(PGresult* result) : result_(result) {}
  ~Result() { PQclear(result_); }
  Result(Result&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;

  int rows() const { return PQntuples(result_); }
  // Rows a write changed.
  int64_t changed() const { return std::atoll(PQcmdTuples(result_)); }
  bool is_null(int row, int col) const { return PQgetisnull(result_, row, col) != 0; }
  std::string bytes_at(int row, int col) const {
    return std::string(PQgetvalue(result_, row, col), size_t(PQgetlength(result_, row, col)));
  }
  int64_t int_at(int row, int col) const {
    if (is_null(row, col)) return 0;
    const char* p = PQgetvalue(result_, row, col);
    switch (PQgetlength(result_, row, col)) {
      case 8: {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return int64_t(be64toh(v));
      }
      case 4: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return int32_t(be32toh(v));
      }
      case 2: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return int16_t(be16toh(v));
      }
      case 1:
        return p[0] != 0;  // boolean
      default:
        return 0;
    }
  }
  std::optional<int> optional_int_at(int row, int col) const {
    if (is_null(row, col)) return std::nullopt;
    return int(int_at(row, col));
  }

 private:
  PGresult* result_;
};

// The connection, its statements and transactions. Throws PgError.
class Connection {
 public:
  explicit Connection(const StoreLocation& where);
  ~Connection() { PQfinish(conn_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Result exec(const char* sql, const Params& params = Params()) {
    std::vector<Oid> types;
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    params.arrays(types, values, lengths, formats);
    return check(PQexecParams(conn_, sql, params.size(), types.data(), values.data(),
                              lengths.data(), formats.data(), 1));
  }
  Result exec(const std::string& sql, const Params& params = Params()) {
    return exec(sql.c_str(), params);
  }
  // Several statements of fixed text (the schema), no parameters.
  void exec_script(const char* sql) { check(PQexec(conn_, sql)); }

  // Statements that succeeded on this connection so far.
  int64_t succeeded() const { return succeeded_; }
  bool lost() const { return PQstatus(conn_) == CONNECTION_BAD; }
  // Connects again with the same parameters (a server restart, a dropped connection).
  void reconnect() {
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK)
      throw PgError{"", "reconnecting: " + first_line(PQerrorMessage(conn_))};
  }

 private:
  Result check(PGresult* raw) {
    Result result(raw);
    const ExecStatusType status = PQresultStatus(raw);
    if (raw != nullptr && (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)) {
      ++succeeded_;
      return result;
    }
    const char* state = raw != nullptr ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
    const char* primary =
        raw != nullptr ? PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string message = primary != nullptr ? primary : first_line(PQerrorMessage(conn_));
    // A connection that broke has no SQLSTATE to give: it counts as lost.
    if (PQstatus(conn_) == CONNECTION_BAD) throw PgError{"", "connection lost: " + message};
    throw PgError{state != nullptr ? state : "", message};
  }

  static std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    return line.empty() ? "no answer from the server" : line;
  }

  PGconn* conn_ = nullptr;
  int64_t succeeded_ = 0;
};

// BEGIN ... COMMIT on a connection, rolled back unless commit() is called. Its lock_timeout is
// its own (SET LOCAL, in the BEGIN's round trip): behind a transaction pooler the session's
// setting belongs to whichever client set it last on that server connection.
class Transaction {
 public:
  Transaction(Connection& conn, int64_t lock_timeout_ms) : conn_(conn) {
    const std::string begin = "BEGIN; SET LOCAL lock_timeout = " + std::to_string(lock_timeout_ms);
    conn_.exec_script(begin.c_str());
  }
  ~Transaction() {
    if (!open_) return;
    try {
      conn_.exec("ROLLBACK");
    } catch (const PgError&) {
      // The connection is gone: the server rolls the transaction back itself.
    }
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    open_ = false;
    conn_.exec("COMMIT");
  }

 private:
  Connection& conn_;
  bool open_ = true;
};

}  // namespace idem::store::postgres
