#include "core/notify.hpp"

#include <algorithm>

#include "core/record_json.hpp"
#include "util/clock.hpp"

namespace idem::core {

namespace {

nlohmann::json notify_time_or_null(int64_t unix_ms) {
  if (unix_ms == 0) return nullptr;
  return util::iso8601_utc(unix_ms);
}

}  // namespace

std::string_view to_string(NotifyEvent event) {
  switch (event) {
    case NotifyEvent::failed:
      return "failed";
    case NotifyEvent::abandoned:
      return "abandoned";
    case NotifyEvent::lease_lost:
      return "lease_lost";
    case NotifyEvent::recovered:
      return "recovered";
  }
  return "?";
}

std::string_view to_string(NotifyOn on) { return on == NotifyOn::change ? "change" : "failure"; }

std::optional<NotifyOn> notify_on_from_string(std::string_view text) {
  if (text == "failure") return NotifyOn::failure;
  if (text == "change") return NotifyOn::change;
  return std::nullopt;
}

std::vector<std::string> shell_command(const std::string& line) { return {"/bin/sh", "-c", line}; }

bool notifies(NotifyOn on, NotifyEvent event) {
  return event != NotifyEvent::recovered || on == NotifyOn::change;
}

bool outcome_failed(const Outcome& outcome) {
  return outcome.status == Status::failed || (outcome.response && outcome.response->status >= 500);
}

std::optional<NotifyEvent> finish_event(std::optional<Status> previous, const Outcome& outcome) {
  if (outcome_failed(outcome)) return NotifyEvent::failed;
  if (previous == Status::failed || previous == Status::abandoned) return NotifyEvent::recovered;
  return std::nullopt;
}

std::string ended_by(const Record& r, std::optional<NotifyEvent> event) {
  if (event == NotifyEvent::lease_lost) return "lease lost";
  if (r.status == Status::abandoned)
    return r.note == k_note_lease_ran_out ? "lease ran out" : "owner died";
  if (r.status == Status::running) return "running";
  if (r.timed_out) return "timeout";
  if (r.signal) return "signal";
  return r.exit_code ? "exit" : "error";
}

nlohmann::json attempt_json(const Record& r, std::optional<NotifyEvent> event) {
  nlohmann::json j;
  j["number"] = r.attempt;
  j["owner"] = {{"host", r.owner.host}, {"pid", r.owner.pid}};
  j["started_at"] = notify_time_or_null(r.started_ms);
  j["finished_at"] = notify_time_or_null(r.finished_ms);
  j["duration_ms"] = r.finished_ms != 0 && r.started_ms != 0
                         ? nlohmann::json(r.finished_ms - r.started_ms)
                         : nlohmann::json(nullptr);
  j["exit_code"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json(nullptr);
  j["signal"] = r.signal ? nlohmann::json(*r.signal) : nlohmann::json(nullptr);
  j["http_status"] = r.response ? nlohmann::json(r.response->status) : nlohmann::json(nullptr);
  j["outcome"] = std::string(to_string(r.status));
  j["ended_by"] = ended_by(r, event);
  j["note"] = r.note;
  return j;
}

std::string notify_document(NotifyEvent event, const Record& record, int64_t now_ms) {
  nlohmann::json doc;
  doc["event"] = std::string(to_string(event));
  doc["key"] = record.key;
  doc["time"] = util::iso8601_utc(now_ms);
  // The record as the store keeps it: its status is the one recorded, never re-judged here.
  doc["record"] = record_detail_json(record, now_ms, false, false);
  doc["attempt"] = attempt_json(record, event);
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace idem::core
