// The JSON forms of a record (`ls --json`, `show --json`, the ledger's GET): status as a user
// sees it, the detail members, and never the attempt token.
#include <catch2/catch.hpp>

#include "core/output.hpp"
#include "core/record_json.hpp"
#include "util/hex.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_record_json {

using idem::core::Record;
using idem::core::Status;

namespace {
Record running_record() {
  Record r;
  r.key = "k";
  r.status = Status::running;
  r.started_ms = 1'000'000;
  r.lease_expires_ms = 2'000'000;
  r.attempt_token = "0123456789abcdef0123456789abcdef";
  r.request = R"({"api": "ledger"})";
  return r;
}
}  // namespace

TEST_CASE(
    "record_json: a running record is abandoned once its lease ran out or, without one, its "
    "owner is gone") {
  Record r = running_record();
  CHECK(idem::core::effective_status(r, 1'500'000, false) == "running");
  CHECK(idem::core::effective_status(r, 2'000'000, false) == "abandoned");
  // An unexpired lease is never overruled by this host's look at the owner.
  CHECK(idem::core::effective_status(r, 1'500'000, true) == "running");
  r.lease_expires_ms = 0;
  CHECK(idem::core::effective_status(r, 1'500'000, true) == "abandoned");
  CHECK(idem::core::effective_status(r, 1'500'000, false) == "running");
  r.lease_expires_ms = 2'000'000;
  CHECK(idem::core::record_json(r, 1'500'000, false)["status"] == "running");
  CHECK(idem::core::record_json(r, 2'000'000, false)["status"] == "abandoned");
}

TEST_CASE("record_json: the detail form adds outputs, request, lease; never the token") {
  Record r = running_record();
  idem::core::CapturedOutput out;
  out.append(idem::core::Stream::out, "hi");
  out.append(idem::core::Stream::err, std::string("\0", 1));
  r.output = out.encode();
  r.response = idem::core::Response{201, {{"Content-Type", "text/plain"}}};
  const auto j = idem::core::record_detail_json(r, 1'500'000, false, false);
  CHECK(j["stdout_b64"] == idem::util::to_base64("hi"));
  CHECK(j["stderr_b64"] == idem::util::to_base64(std::string("\0", 1)));
  CHECK(j["request"]["api"] == "ledger");
  CHECK(j["response"]["status"] == 201);
  CHECK(j["lease_expires_at"].is_string());
  CHECK(j["process_group"].is_null());
  CHECK(j["replay_failures"] == false);
  // The owner as liveness judges it; null where not recorded (an older record).
  CHECK(j["owner"]["machine_id"].is_null());
  CHECK(j["owner"]["pid_ns"].is_null());
  r.owner = {"h", "boot", 7, 8, std::string(32, 'c'), 4026531836};
  const auto owned = idem::core::record_detail_json(r, 1'500'000, false, false)["owner"];
  CHECK(owned == nlohmann::json{{"host", "h"},
                                {"pid", 7},
                                {"boot_id", "boot"},
                                {"machine_id", std::string(32, 'c')},
                                {"pid_ns", 4026531836}});
  CHECK(j.dump().find(r.attempt_token) == std::string::npos);
  r.replay_failures = true;
  CHECK(idem::core::record_detail_json(r, 1'500'000, false, false)["replay_failures"] == true);
  // ls's form leaves the policy out, as it leaves out everything but what ls lists.
  CHECK_FALSE(idem::core::record_json(r, 1'500'000, false).contains("replay_failures"));
  r.output = "not an encoding";
  CHECK_THROWS(idem::core::record_detail_json(r, 1'500'000, false, false));
}

}  // namespace unit_record_json
