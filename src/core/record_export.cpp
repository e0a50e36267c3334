#include "core/record_export.hpp"

#include <stdexcept>

#include "core/key.hpp"
#include "core/output.hpp"
#include "core/trace.hpp"
#include "util/hex.hpp"

namespace idem::core {

namespace {

using nlohmann::json;

json optional_int(const std::optional<int>& value) { return value ? json(*value) : json(nullptr); }

[[noreturn]] void bad(const std::string& member, const std::string& why) {
  throw std::invalid_argument("member \"" + member + "\" " + why);
}

const json& member(const json& object, const std::string& name) {
  auto it = object.find(name);
  if (it == object.end()) bad(name, "is missing");
  return *it;
}

std::string text(const json& object, const std::string& name) {
  const json& value = member(object, name);
  if (!value.is_string()) bad(name, "is not a string");
  return value.get<std::string>();
}

int64_t integer(const json& object, const std::string& name, int64_t min = 0) {
  const json& value = member(object, name);
  if (!value.is_number_integer()) bad(name, "is not an integer");
  const int64_t n = value.get<int64_t>();
  if (n < min) bad(name, "is below " + std::to_string(min));
  return n;
}

bool boolean(const json& object, const std::string& name) {
  const json& value = member(object, name);
  if (!value.is_boolean()) bad(name, "is not true or false");
  return value.get<bool>();
}

std::optional<int> optional_int(const json& object, const std::string& name) {
  const json& value = member(object, name);
  if (value.is_null()) return std::nullopt;
  if (!value.is_number_integer() || value.get<int64_t>() < INT32_MIN ||
      value.get<int64_t>() > INT32_MAX)
    bad(name, "is not null or a 32-bit integer");
  return int(value.get<int64_t>());
}

std::optional<Response> response_of(const json& object) {
  const json& value = member(object, "response");
  if (value.is_null()) return std::nullopt;
  auto response = decode_response(value.dump());
  if (!response) bad("response", "is not a stored answer (status, headers)");
  return response;
}

std::string output_of(const json& object) {
  auto bytes = util::from_base64(text(object, "output_b64"));
  if (!bytes) bad("output_b64", "is not base64");
  if (!bytes->empty() && !CapturedOutput::chunks_of(*bytes))
    bad("output_b64", "is not captured output");
  return *bytes;
}

// A record's span: ids checked as traces write them, so an import never stores what a replay's
// link could not carry.
SpanIds span_of(const json& value) {
  if (!value.is_object()) bad("span", "is not an object");
  SpanIds span{text(value, "trace_id"), text(value, "span_id"), text(value, "parent_span_id")};
  if (!valid_trace_id(span.trace_id, 32)) bad("span.trace_id", "is not 32 hex digits");
  if (!valid_trace_id(span.span_id, 16)) bad("span.span_id", "is not 16 hex digits");
  if (!span.parent_span_id.empty() && !valid_trace_id(span.parent_span_id, 16))
    bad("span.parent_span_id", "is not empty or 16 hex digits");
  return span;
}

}  // namespace

json export_json(const Record& r, const std::vector<HistoryEntry>& history) {
  json j;
  j["format"] = k_export_format;
  j["key"] = r.key;
  j["fingerprint"] = r.fingerprint;
  j["kind"] = r.kind;
  j["status"] = std::string(to_string(r.status));
  j["attempt"] = r.attempt;
  j["replay_failures"] = r.replay_failures;
  j["owner"] = {{"host", r.owner.host},
                {"boot_id", r.owner.boot_id},
                {"pid", r.owner.pid},
                {"start_ticks", r.owner.start_ticks},
                {"machine_id", r.owner.machine_id},
                {"pid_ns", r.owner.pid_ns}};
  j["lease_expires_ms"] = r.lease_expires_ms;
  j["process_group"] = {{"pgid", r.process_group.pgid},
                        {"leader_start_ticks", r.process_group.leader_start_ticks},
                        {"cgroup", r.process_group.cgroup}};
  j["started_ms"] = r.started_ms;
  j["finished_ms"] = r.finished_ms;
  j["ttl_ms"] = r.ttl_ms;
  j["expires_ms"] = r.expires_ms;
  j["exit_code"] = optional_int(r.exit_code);
  j["signal"] = optional_int(r.signal);
  j["timed_out"] = r.timed_out;
  j["output_bytes"] = r.output_bytes;
  j["output_truncated"] = r.output_truncated;
  j["output_b64"] = util::to_base64(r.output);
  j["request"] = r.request;
  j["note"] = r.note;
  j["response"] = r.response ? json::parse(encode_response(*r.response)) : json(nullptr);
  j["replays"] = r.replays;
  j["last_replay_ms"] = r.last_replay_ms;
  // Serial groups (SPEC §9): written only where the record has them.
  if (!r.serial_group.empty()) j["serial_group"] = r.serial_group;
  if (r.queue_seq != 0) j["queue_seq"] = r.queue_seq;
  if (!r.superseded_by.empty()) j["superseded_by"] = r.superseded_by;
  // The current attempt's span (SPEC §12): written only where traces were on.
  if (!r.span.span_id.empty())
    j["span"] = {{"trace_id", r.span.trace_id},
                 {"span_id", r.span.span_id},
                 {"parent_span_id", r.span.parent_span_id}};
  if (!history.empty()) {
    json attempts = json::array();
    for (const HistoryEntry& e : history)
      attempts.push_back({{"number", e.number},
                          {"trigger", e.trigger},
                          {"host", e.host},
                          {"pid", e.pid},
                          {"started_ms", e.started_ms},
                          {"ended_ms", e.ended_ms},
                          {"outcome", std::string(to_string(e.outcome))},
                          {"reason", e.reason},
                          {"exit_code", optional_int(e.exit_code)},
                          {"signal", optional_int(e.signal)},
                          {"http_status", optional_int(e.http_status)},
                          {"note", e.note}});
    j["attempts"] = std::move(attempts);
  }
  return j;
}

std::vector<HistoryEntry> history_from_export(const json& line) {
  std::vector<HistoryEntry> history;
  auto it = line.find("attempts");
  if (it == line.end()) return history;
  if (!it->is_array()) bad("attempts", "is not an array");
  for (const json& a : *it) {
    if (!a.is_object()) bad("attempts", "holds an entry that is not an object");
    HistoryEntry e;
    e.number = integer(a, "number", 1);
    if (!history.empty() && e.number <= history.back().number)
      bad("attempts", "is not in the order of the attempts' numbers");
    e.trigger = text(a, "trigger");
    e.host = text(a, "host");
    e.pid = integer(a, "pid");
    e.started_ms = integer(a, "started_ms");
    e.ended_ms = integer(a, "ended_ms");
    auto outcome = status_from_string(text(a, "outcome"));
    if (!outcome) bad("outcome", "is not running, succeeded, failed or abandoned");
    e.outcome = *outcome;
    e.reason = text(a, "reason");
    e.exit_code = optional_int(a, "exit_code");
    e.signal = optional_int(a, "signal");
    e.http_status = optional_int(a, "http_status");
    e.note = text(a, "note");
    history.push_back(std::move(e));
  }
  return history;
}

Record record_from_export(const json& line) {
  if (!line.is_object()) throw std::invalid_argument("the line is not a JSON object");
  if (integer(line, "format") != k_export_format)
    bad("format", "is not " + std::to_string(k_export_format) + " (another idem's export?)");
  Record r;
  r.key = text(line, "key");
  if (auto problem = record_name_problem(r.key)) bad("key", *problem);
  r.fingerprint = text(line, "fingerprint");
  r.kind = text(line, "kind");
  auto status = status_from_string(text(line, "status"));
  if (!status) bad("status", "is not running, succeeded, failed or abandoned");
  r.status = *status;
  r.attempt = integer(line, "attempt", 1);
  r.replay_failures = boolean(line, "replay_failures");
  const json& owner = member(line, "owner");
  if (!owner.is_object()) bad("owner", "is not an object");
  // machine_id and pid_ns are absent from exports of idems that did not record them: such an
  // owner's pid is never judged.
  r.owner = Owner{text(owner, "host"),
                  text(owner, "boot_id"),
                  integer(owner, "pid"),
                  integer(owner, "start_ticks"),
                  owner.contains("machine_id") ? text(owner, "machine_id") : std::string(),
                  owner.contains("pid_ns") ? integer(owner, "pid_ns") : 0};
  r.lease_expires_ms = integer(line, "lease_expires_ms");
  const json& group = member(line, "process_group");
  if (!group.is_object()) bad("process_group", "is not an object");
  // An export from before cgroups has none.
  r.process_group = ProcessGroup{integer(group, "pgid"), integer(group, "leader_start_ticks"),
                                 group.contains("cgroup") ? text(group, "cgroup") : std::string()};
  r.started_ms = integer(line, "started_ms");
  r.finished_ms = integer(line, "finished_ms");
  r.ttl_ms = integer(line, "ttl_ms");
  r.expires_ms = integer(line, "expires_ms");
  r.exit_code = optional_int(line, "exit_code");
  r.signal = optional_int(line, "signal");
  r.timed_out = boolean(line, "timed_out");
  r.output_bytes = integer(line, "output_bytes");
  r.output_truncated = boolean(line, "output_truncated");
  r.output = output_of(line);
  r.request = text(line, "request");
  r.note = text(line, "note");
  r.response = response_of(line);
  r.replays = line.contains("replays") ? integer(line, "replays") : 0;
  r.last_replay_ms = line.contains("last_replay_ms") ? integer(line, "last_replay_ms") : 0;
  r.serial_group = line.contains("serial_group") ? text(line, "serial_group") : "";
  r.queue_seq = line.contains("queue_seq") ? integer(line, "queue_seq") : 0;
  r.superseded_by = line.contains("superseded_by") ? text(line, "superseded_by") : "";
  if (line.contains("span")) r.span = span_of(line["span"]);
  return r;
}

}  // namespace idem::core
