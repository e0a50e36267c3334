#include "core/record_json.hpp"

#include <vector>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "util/clock.hpp"
#include "util/hex.hpp"

namespace idem::core {

namespace {

nlohmann::json time_or_null(int64_t unix_ms) {
  if (unix_ms == 0) return nullptr;
  return util::iso8601_utc(unix_ms);
}

// The stored answer a duplicate request gets (its body is stdout_b64), or null: records of
// run, each and begin/end have none.
nlohmann::json response_json(const std::optional<Response>& response) {
  if (!response) return nullptr;
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& [name, value] : response->headers) headers.push_back({name, value});
  return {{"status", response->status}, {"headers", std::move(headers)}};
}

std::string stream_bytes(const std::vector<ChunkView>& chunks, Stream stream) {
  std::string bytes;
  for (const auto& chunk : chunks)
    if (chunk.stream == stream) bytes += chunk.bytes;
  return bytes;
}

}  // namespace

std::string effective_status(const Record& record, int64_t now_ms, bool owner_gone) {
  // A waiter that died in line never ran: it stays queued until its turn takes it out.
  if (record.status == Status::running &&
      owner_counts_gone(record, now_ms, [owner_gone](const Owner&) { return owner_gone; }))
    return "abandoned";
  return std::string(display_status(record, now_ms));
}

nlohmann::json record_json(const Record& r, int64_t now_ms, bool owner_gone) {
  nlohmann::json j;
  j["key"] = r.key;
  j["status"] = effective_status(r, now_ms, owner_gone);
  j["exit_code"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json(nullptr);
  j["signal"] = r.signal ? nlohmann::json(*r.signal) : nlohmann::json(nullptr);
  j["timed_out"] = r.timed_out;
  j["attempt"] = r.attempt;
  j["started_at"] = util::iso8601_utc(r.started_ms);
  j["finished_at"] = time_or_null(r.finished_ms);
  j["duration_ms"] =
      r.finished_ms != 0 ? nlohmann::json(r.finished_ms - r.started_ms) : nlohmann::json(nullptr);
  j["expires_at"] = time_or_null(r.expires_ms);
  j["ttl_ms"] = r.ttl_ms;
  j["fingerprint"] = r.fingerprint;
  j["kind"] = r.kind;
  j["output_bytes"] = r.output_bytes;
  j["truncated"] = r.output_truncated;
  j["owner"] = {{"host", r.owner.host}, {"pid", r.owner.pid}};
  return j;
}

nlohmann::json record_detail_json(const Record& r, int64_t now_ms, bool owner_gone,
                                  bool group_alive, bool with_streams) {
  // Views into the record's output: the stored bytes are not copied again.
  auto output = CapturedOutput::chunks_of(r.output);
  if (!output) throw StoreError("stored output of key '" + display_key(r.key) + "' is corrupt");
  nlohmann::json j = record_json(r, now_ms, owner_gone);
  j["replay_failures"] = r.replay_failures;
  // Which streams lost bytes to --max-output (empty when none did, or when a record from before
  // the marks does not say).
  j["truncated_streams"] = nlohmann::json::array();
  for (Stream stream : CapturedOutput::lost_streams(*output))
    j["truncated_streams"].push_back(stream_name(stream));
  // Who the owner is beyond ls's host and pid: what liveness is judged by (null: not recorded).
  j["owner"]["boot_id"] = r.owner.boot_id;
  j["owner"]["machine_id"] =
      r.owner.machine_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.owner.machine_id);
  j["owner"]["pid_ns"] = r.owner.pid_ns ? nlohmann::json(r.owner.pid_ns) : nlohmann::json(nullptr);
  j["process_group"] =
      r.process_group.pgid ? nlohmann::json(r.process_group.pgid) : nlohmann::json(nullptr);
  j["process_group_cgroup"] = r.process_group.cgroup.empty()
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(r.process_group.cgroup);
  j["process_group_alive"] = group_alive;
  j["lease_expires_at"] = time_or_null(r.lease_expires_ms);
  // null for a record that holds none (a discarded value would not serialise as JSON).
  j["request"] = nlohmann::json::parse(r.request, nullptr, false);
  if (j["request"].is_discarded()) j["request"] = nullptr;
  j["note"] = r.note;
  j["response"] = response_json(r.response);
  j["replays"] = r.replays;
  j["last_replay_at"] = time_or_null(r.last_replay_ms);
  // Serial groups (SPEC §9): the group as the store names it (null: none), and for a superseded
  // record the key that replaced it.
  j["serial_group"] =
      r.serial_group.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.serial_group);
  j["superseded_by"] =
      r.superseded_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.superseded_by);
  if (!with_streams) return j;
  j["stdout_b64"] = util::to_base64(stream_bytes(*output, Stream::out));
  j["stderr_b64"] = util::to_base64(stream_bytes(*output, Stream::err));
  return j;
}

}  // namespace idem::core
