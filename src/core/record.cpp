#include "core/record.hpp"

#include "core/exit_code.hpp"
#include "util/sha256.hpp"

namespace idem::core {

std::string_view to_string(Status status) {
  switch (status) {
    case Status::running:
      return "running";
    case Status::succeeded:
      return "succeeded";
    case Status::failed:
      return "failed";
    case Status::abandoned:
      return "abandoned";
    case Status::queued:
      return "queued";
    case Status::superseded:
      return "superseded";
  }
  return "unknown";
}

std::string attempt_mark(std::string_view key, int64_t attempt, const Owner& owner) {
  std::string text = "idem attempt mark\n";
  for (const std::string& part :
       {owner.boot_id, std::to_string(owner.pid_ns), std::to_string(owner.pid),
        std::to_string(owner.start_ticks), std::to_string(attempt)})
    text += part + "\n";
  text += key;  // last: the only part that may hold a newline
  return util::sha256_hex(text).substr(0, 32);
}

std::string processes_place(const ProcessGroup& group) {
  return group.cgroup.empty() ? "process group " + std::to_string(group.pgid)
                              : "cgroup " + group.cgroup;
}

std::string attempt_mark(const Record& record) {
  // begin's group is its caller's own, whose processes idem did not start: none carries a mark.
  if (record.kind == "begin") return "";
  return attempt_mark(record.key, record.attempt, record.owner);
}

std::optional<Status> status_from_string(std::string_view text) {
  if (text == "running") return Status::running;
  if (text == "succeeded") return Status::succeeded;
  if (text == "failed") return Status::failed;
  if (text == "abandoned") return Status::abandoned;
  if (text == "queued") return Status::queued;
  if (text == "superseded") return Status::superseded;
  return std::nullopt;
}

bool is_expired(const Record& record, int64_t now_ms) {
  return record.expires_ms != 0 && record.expires_ms <= now_ms;
}

bool has_run(const Record& record) {
  return record.status != Status::queued && record.status != Status::superseded;
}

bool held_by_owner(const Record& record) {
  return record.status == Status::running ||
         (record.status == Status::queued && record.kind == "run");
}

bool lease_expired(const Record& record, int64_t now_ms) {
  return held_by_owner(record) && record.lease_expires_ms != 0 && record.lease_expires_ms <= now_ms;
}

bool owner_counts_gone(const Record& record, int64_t now_ms,
                       const std::function<bool(const Owner&)>& locally_gone) {
  if (!held_by_owner(record)) return false;
  if (record.lease_expires_ms != 0) return lease_expired(record, now_ms);
  return locally_gone(record.owner);
}

std::string_view display_status(const Record& record, int64_t now_ms) {
  if (is_expired(record, now_ms)) return "expired";
  return to_string(record.status);
}

int replay_exit_code(const Record& record) {
  if (record.timed_out) return k_exit_timeout;
  if (record.signal) return k_exit_signal_base + *record.signal;
  return record.exit_code.value_or(0);
}

std::string result_class(const Record& r) {
  if (r.response) return std::to_string(r.response->status / 100) + "xx";
  if (r.exit_code && *r.exit_code == 0) return "exit0";
  if (r.exit_code || r.signal || r.timed_out) return "exit_nonzero";
  return "";
}

}  // namespace idem::core
