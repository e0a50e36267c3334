#pragma once
// The record model: what the store keeps per key.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/response.hpp"

namespace idem::core {

// queued: waiting its turn in a serial group (SPEC §9), nothing run yet; superseded: a queued
// attempt a newer one of its `latest` group replaced before it ran (final, never run).
enum class Status { running, succeeded, failed, abandoned, queued, superseded };

std::string_view to_string(Status status);
std::optional<Status> status_from_string(std::string_view text);

// The process that claimed a key. The host is known by its machine id (/etc/machine-id; its host
// name where either side has none) and its boot by the boot id; the pid is a number of one pid
// namespace (its inode), and with its start time (clock ticks since boot, /proc/PID/stat field
// 22) identifies the process even across pid reuse. Host names repeat (cloned machines,
// containers given one name) and a pid means nothing in another namespace, so a pid is judged
// only where machine id, boot and namespace all match (proc::owner_gone).
struct Owner {
  std::string host;
  std::string boot_id;
  int64_t pid = 0;
  int64_t start_ticks = 0;
  // 32 lower-case hex digits; empty where the claimer had none (no /etc/machine-id), and for
  // records claimed before it was recorded.
  std::string machine_id = {};
  // The inode of the claimer's pid namespace (/proc/self/ns/pid); 0: unknown (a record claimed
  // before it was recorded), so its pid is never judged.
  int64_t pid_ns = 0;
};

// The process group the command of an attempt runs in (its own: the command is its leader).
// pgid 0: none recorded (begin/end, serve, or a store from before groups were recorded). The
// leader's start time tells the original group from a later one that reused the number; host and
// boot are the owner's.
struct ProcessGroup {
  int64_t pgid = 0;
  int64_t leader_start_ticks = 0;
  // The attempt's own cgroup (v2), where one could be made: its path under the cgroup2 mount
  // ("/system.slice/cron.service/idem-PID-START-N": proc/cgroup.hpp), holding every process the
  // command started, those that left its process group (setsid) too. Empty: none (cgroups not
  // writable here, IDEM_CGROUP=off, or a record from before them); the process group alone then
  // tells.
  std::string cgroup = {};
};

// The mark each process of an attempt's command carries in its environment, as
// IDEM_ATTEMPT_MARK: 32 hex digits of SHA-256 over the key, the attempt's number and its owner
// (boot, pid namespace, pid and start time), so a record alone tells it. Once a recorded group
// has lost its leader, its number may lead another group; a later look (proc::look_at_group)
// counts a member as the attempt's only by this mark.
inline constexpr const char* k_attempt_mark_env = "IDEM_ATTEMPT_MARK";
std::string attempt_mark(std::string_view key, int64_t attempt, const Owner& owner);

// Where an attempt's processes are, for messages: "cgroup /idem-7-9" when one is recorded, else
// "process group 7".
std::string processes_place(const ProcessGroup& group);

// The span of an attempt (SPEC §12), kept with its record so that a replay links to it and an
// attempt ended by another process (idem end, the ledger) ends it: ids as lower-case hex (32, 16,
// 16 digits); all empty when traces were off, parent_span_id when it had no parent.
struct SpanIds {
  std::string trace_id;
  std::string span_id;
  std::string parent_span_id;
};

struct Record {
  std::string key;
  std::string fingerprint;  // lower-case hex SHA-256
  std::string kind = "run";
  Status status = Status::running;
  int64_t attempt = 1;  // times the command has been started for this key
  // The replay policy the current attempt was claimed under (--replay-failures): its failure is
  // final, replayed to every later attempt whatever that one asks. Kept with the attempt, so a
  // later attempt that claims over a failure (which it may only without this) records its own.
  bool replay_failures = false;
  Owner owner;
  // The current attempt's capability: 128 random bits as 32 lower-case hex digits, handed to the
  // claimer alone. heartbeat and release need it, so an owner on any host can prove it holds the
  // attempt. Empty for records claimed before tokens existed (nothing can match it).
  std::string attempt_token;
  // Unix ms at which a running attempt whose owner has not renewed its lease counts as abandoned,
  // on any host; 0: no lease (the owner's liveness is only known from its pid and boot id).
  int64_t lease_expires_ms = 0;
  ProcessGroup process_group;  // of the current attempt's command, once it was spawned
  int64_t started_ms = 0;      // Unix ms when the current attempt was claimed
  int64_t finished_ms = 0;     // 0 while running or abandoned
  int64_t ttl_ms = 0;
  // Unix ms after which the record behaves as absent; 0 = never (running and abandoned records
  // do not expire: an abandoned attempt must be looked at, not silently run again).
  int64_t expires_ms = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool timed_out = false;
  std::string output;  // CapturedOutput encoding
  bool output_truncated = false;
  int64_t output_bytes = 0;  // stored bytes (both streams)
  std::string request;       // JSON: what was asked (argv, cwd)
  std::string note;          // why a failure happened when it is not an exit code
  // The answer a duplicate gets (a hook's, later a proxied upstream's), its body the stored
  // stdout (see core/response.hpp); nothing for a command's outcome.
  std::optional<Response> response;
  // Duplicates answered from this record (replays) since it was first claimed, and when the last
  // was (Unix ms; 0: none). Counted apart from the claim, without a sync (Store::count_replays).
  int64_t replays = 0;
  int64_t last_replay_ms = 0;
  // The serial group the key's attempt runs in (a front's prefix, then the group's name: "run:"
  // + --serial's value, a hook's path + "#" + its group), empty: none. At most one record of a
  // group is running, store-wide; the queued ones wait in queue_seq order.
  std::string serial_group;
  int64_t queue_seq = 0;      // queued: its place in the group's line (lower runs first)
  std::string superseded_by;  // superseded: the key that replaced it
  SpanIds span;               // the current attempt's (SPEC §12)
};

// The notes of an attempt the store marked abandoned: its owner is gone, or its lease ran out.
inline constexpr const char* k_note_owner_died = "owner died mid-run";
inline constexpr const char* k_note_lease_ran_out = "lease ran out mid-run";

// What a finished attempt produced.
struct Outcome {
  Status status = Status::failed;  // succeeded or failed
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool timed_out = false;
  std::string output;
  bool output_truncated = false;
  int64_t output_bytes = 0;
  int64_t finished_ms = 0;
  std::string note;
  std::optional<Response> response;  // see Record::response
  // No expiry: kept until someone removes it (idem rm), as an abandoned record is. For an outcome
  // unknown for good (the proxy's request sent, no answer): after the TTL, a retry would send it
  // again.
  bool kept_until_removed = false;
};

// The mark of the record's attempt (attempt_mark of its key, number and owner); empty for a
// group idem did not start (begin's: its caller's own group), whose members carry none.
std::string attempt_mark(const Record& record);

bool is_expired(const Record& record, int64_t now_ms);
// Whether an attempt of the record has started: false for a queued one (none yet) and a
// superseded one (none ever), which have no history entry of their own.
bool has_run(const Record& record);
// Whether the record holds its owner's process: a running attempt, or a queued one waiting in
// its owner's process (`idem run --serial`; a daemon's queued delivery is any daemon's to run).
bool held_by_owner(const Record& record);
// A record held by its owner (held_by_owner) whose lease ran out: its owner is gone as far as any
// host can tell.
bool lease_expired(const Record& record, int64_t now_ms);
// Whether the owner of a record held by its owner (held_by_owner) counts as gone. A record with a
// lease is judged by its lease alone: any host can tell, and what this host sees never overrules an
// unexpired lease (its owner may be a process this host mistakes for one of its own). One without
// is judged by `locally_gone`, called only then: proc::owner_gone, this host's look at its pid and
// boot.
bool owner_counts_gone(const Record& record, int64_t now_ms,
                       const std::function<bool(const Owner&)>& locally_gone);
// The status a user sees: expired records show as "expired".
std::string_view display_status(const Record& record, int64_t now_ms);
// The exit code idem returns when replaying this record: the code, 128+signal, or 124.
int replay_exit_code(const Record& record);

// The result classes a listing can ask for (ListQuery::result, the page's result=), in order.
inline constexpr const char* k_result_classes[] = {"2xx", "3xx",   "4xx",
                                                   "5xx", "exit0", "exit_nonzero"};
// A record's result class, as the stores index it: its answer's HTTP class ("2xx" ... "5xx")
// where it holds an answer (hooks, hooks files, the proxy, the ledger), else "exit0" for exit
// code 0 and "exit_nonzero" for another exit code, a signal or a timeout; empty while it has no
// result (running, abandoned).
std::string result_class(const Record& record);

}  // namespace idem::core
