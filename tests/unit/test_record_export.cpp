// The export form of a record (`idem export` / `idem import`): every stored field survives the
// round trip, the attempt token never leaves, and a bad line is refused naming its member.
#include <catch2/catch.hpp>

#include "core/output.hpp"
#include "core/record_export.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_record_export {

using idem::core::Record;
using idem::core::Status;

namespace {

Record full_record() {
  Record r;
  r.key = "/hooks/deploy#order-42";
  r.fingerprint = std::string(64, 'a');
  r.kind = "hook";
  r.status = Status::failed;
  r.attempt = 3;
  r.replay_failures = true;
  r.owner = {"host-1", "boot-id", 4242, 987654, std::string(32, 'd'), 4026531836};
  r.attempt_token = "0123456789abcdef0123456789abcdef";
  r.lease_expires_ms = 0;
  r.process_group = {4243, 987655, "/system.slice/cron.service/idem-4243-987655"};
  r.started_ms = 1'700'000'000'000;
  r.finished_ms = 1'700'000'000'500;
  r.ttl_ms = 86'400'000;
  r.expires_ms = r.finished_ms + r.ttl_ms;
  r.exit_code = 3;
  r.timed_out = false;
  idem::core::CapturedOutput out;
  out.append(idem::core::Stream::out, std::string("out\0", 4));
  out.append(idem::core::Stream::err, "err");
  out.append(idem::core::Stream::out, "again");
  r.output = out.encode();
  r.output_bytes = out.stored_bytes();
  r.output_truncated = true;
  r.request = R"({"argv": ["deploy"], "cwd": "/srv"})";
  r.note = "a note";
  r.response = idem::core::Response{502, {{"Content-Type", "text/plain"}, {"X-A", "1"}}};
  return r;
}

}  // namespace

TEST_CASE("record_export: a record read back from its line is the record, less its token") {
  Record r = full_record();
  const nlohmann::json line = idem::core::export_json(r);
  CHECK_FALSE(line.contains("attempt_token"));
  CHECK(line["format"] == idem::core::k_export_format);
  Record back = idem::core::record_from_export(nlohmann::json::parse(line.dump()));
  CHECK(back.attempt_token.empty());
  CHECK(idem::core::export_json(back).dump() == line.dump());
  CHECK(back.output == r.output);
  CHECK(back.response == r.response);
  CHECK(back.exit_code == 3);
  CHECK_FALSE(back.signal.has_value());
  CHECK(back.process_group.pgid == 4243);
  CHECK(back.process_group.cgroup == "/system.slice/cron.service/idem-4243-987655");
  CHECK(back.owner.start_ticks == 987654);
  CHECK(back.owner.machine_id == std::string(32, 'd'));
  CHECK(back.owner.pid_ns == 4026531836);
  CHECK(back.replay_failures);
}

TEST_CASE("record_export: an owner exported without machine id and pid namespace imports so") {
  // An export of an idem that did not record them: the owner's pid is then never judged.
  nlohmann::json line = idem::core::export_json(full_record());
  line["owner"].erase("machine_id");
  line["owner"].erase("pid_ns");
  Record back = idem::core::record_from_export(line);
  CHECK(back.owner.host == "host-1");
  CHECK(back.owner.machine_id.empty());
  CHECK(back.owner.pid_ns == 0);
  // Nor a cgroup: the attempt then has its process group only.
  line["process_group"].erase("cgroup");
  CHECK(idem::core::record_from_export(line).process_group.cgroup.empty());
}

TEST_CASE("record_export: a record without output or response round-trips too") {
  Record r;
  r.key = "k";
  r.started_ms = 5;
  const nlohmann::json line = idem::core::export_json(r);
  CHECK(line["output_b64"] == "");
  CHECK(line["response"].is_null());
  Record back = idem::core::record_from_export(line);
  CHECK(back.output.empty());
  CHECK_FALSE(back.response.has_value());
  CHECK(back.status == Status::running);
}

TEST_CASE("record_export: a bad line is refused, naming the member") {
  const nlohmann::json good = idem::core::export_json(full_record());
  auto refused = [&](const char* member, const nlohmann::json& value) {
    nlohmann::json line = good;
    if (value.is_discarded())
      line.erase(member);
    else
      line[member] = value;
    try {
      idem::core::record_from_export(line);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what()).find(std::string("\"") + member + "\"") != std::string::npos;
    }
    return false;
  };
  const nlohmann::json missing(nlohmann::json::value_t::discarded);
  CHECK(refused("key", missing));
  CHECK(refused("key", ""));
  CHECK(refused("key", "bad\nkey"));
  CHECK(refused("status", "done"));
  CHECK(refused("attempt", 0));
  CHECK(refused("attempt", "1"));
  CHECK(refused("format", 2));
  CHECK(refused("output_b64", "%%%"));
  CHECK(refused("output_b64", "aGVsbG8="));  // base64, but not captured output
  CHECK(refused("exit_code", 1LL << 40));
  CHECK(refused("response", nlohmann::json{{"status", 1000}}));
  CHECK(refused("owner", "me"));
  CHECK(refused("timed_out", 0));
  CHECK_THROWS_AS(idem::core::record_from_export(nlohmann::json::array()), std::invalid_argument);
}

}  // namespace unit_record_export
