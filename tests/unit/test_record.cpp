// The record model: status names, expiry, the exit code a replay returns.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "core/exit_code.hpp"
#include "core/record.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_record {

using idem::core::display_status;
using idem::core::is_expired;
using idem::core::Record;
using idem::core::replay_exit_code;
using idem::core::Status;
using idem::core::status_from_string;
using idem::core::to_string;

TEST_CASE("status: names round trip", "[record]") {
  for (Status s : {Status::running, Status::succeeded, Status::failed, Status::abandoned}) {
    INFO(to_string(s));
    CHECK(status_from_string(to_string(s)) == s);
  }
  CHECK(to_string(Status::running) == "running");
  CHECK(to_string(Status::succeeded) == "succeeded");
  CHECK(to_string(Status::failed) == "failed");
  CHECK(to_string(Status::abandoned) == "abandoned");
  // "expired" and "none" are what users see, not stored states.
  CHECK_FALSE(status_from_string("expired").has_value());
  CHECK_FALSE(status_from_string("none").has_value());
  CHECK_FALSE(status_from_string("").has_value());
  CHECK_FALSE(status_from_string("Running").has_value());
  CHECK_FALSE(status_from_string("running ").has_value());
  CHECK_FALSE(status_from_string("succeed").has_value());
}

TEST_CASE("record: expiry", "[record]") {
  Record r;
  r.status = Status::succeeded;
  r.expires_ms = 0;
  CHECK_FALSE(is_expired(r, 0));
  CHECK_FALSE(is_expired(r, INT64_MAX));  // 0 means never
  r.expires_ms = 1000;
  CHECK_FALSE(is_expired(r, 999));
  CHECK(is_expired(r, 1000));  // the expiry instant itself is past
  CHECK(is_expired(r, 1001));
}

TEST_CASE("record: display_status shows expired records as expired", "[record]") {
  Record r;
  r.status = Status::succeeded;
  r.expires_ms = 5000;
  CHECK(display_status(r, 4999) == "succeeded");
  CHECK(display_status(r, 5000) == "expired");
  r.status = Status::failed;
  CHECK(display_status(r, 4000) == "failed");
  CHECK(display_status(r, 6000) == "expired");
  r.status = Status::running;
  r.expires_ms = 0;
  CHECK(display_status(r, INT64_MAX) == "running");
  r.status = Status::abandoned;
  CHECK(display_status(r, INT64_MAX) == "abandoned");
}

TEST_CASE("replay_exit_code: stored code, 128+signal, 124 for a timeout", "[record]") {
  Record r;
  r.status = Status::succeeded;
  r.exit_code = 0;
  CHECK(replay_exit_code(r) == 0);

  r.status = Status::failed;
  r.exit_code = 3;
  CHECK(replay_exit_code(r) == 3);
  r.exit_code = 255;
  CHECK(replay_exit_code(r) == 255);
  r.exit_code = 127;  // could not start
  CHECK(replay_exit_code(r) == 127);

  r.exit_code.reset();
  r.signal = 9;
  CHECK(replay_exit_code(r) == 137);
  r.signal = 15;
  CHECK(replay_exit_code(r) == 143);
  r.signal = 2;
  CHECK(replay_exit_code(r) == idem::k_exit_signal_base + 2);

  // --timeout stops the command with TERM (or KILL): the timeout wins over the signal.
  r.timed_out = true;
  CHECK(replay_exit_code(r) == 124);
  r.signal = 9;
  CHECK(replay_exit_code(r) == idem::k_exit_timeout);
  r.signal.reset();
  r.exit_code = 0;  // the command trapped TERM and exited 0, still a timeout
  CHECK(replay_exit_code(r) == 124);
}

TEST_CASE("record: defaults describe a fresh running claim", "[record]") {
  Record r;
  CHECK(r.status == Status::running);
  CHECK(r.attempt == 1);
  CHECK(r.kind == "run");
  CHECK(r.expires_ms == 0);
  CHECK(r.finished_ms == 0);
  CHECK_FALSE(r.exit_code.has_value());
  CHECK_FALSE(r.signal.has_value());
  CHECK_FALSE(r.timed_out);
}

TEST_CASE("exit codes: the documented values", "[record]") {
  CHECK(idem::k_exit_ok == 0);
  CHECK(idem::k_exit_already_done == 1);
  CHECK(idem::k_exit_usage == 64);
  CHECK(idem::k_exit_conflict == 65);
  CHECK(idem::k_exit_abandoned == 69);
  CHECK(idem::k_exit_store == 74);
  CHECK(idem::k_exit_running == 75);
  CHECK(idem::k_exit_timeout == 124);
  CHECK(idem::k_exit_not_executable == 126);
  CHECK(idem::k_exit_not_found == 127);
  CHECK(idem::k_exit_signal_base == 128);
}

TEST_CASE("record: only a running record's lease runs out, at its expiry instant", "[record]") {
  using idem::core::lease_expired;
  Record r;
  r.status = Status::running;
  CHECK_FALSE(lease_expired(r, 0));  // no lease: never
  CHECK_FALSE(lease_expired(r, INT64_MAX));
  r.lease_expires_ms = 5000;
  CHECK_FALSE(lease_expired(r, 4999));
  CHECK(lease_expired(r, 5000));
  CHECK(lease_expired(r, 5001));
  for (Status s : {Status::succeeded, Status::failed, Status::abandoned}) {
    r.status = s;
    CHECK_FALSE(lease_expired(r, 5001));
  }
}

}  // namespace unit_record
