#pragma once
// Notifications: which end of an attempt is told to a notify command, and what it is told (the
// event, the record and its last attempt, as one JSON document on its stdin). Pure: running the
// command is the engine's (engine/notify.hpp).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/output.hpp"
#include "core/record.hpp"

namespace idem::core {

enum class NotifyEvent {
  failed,      // an attempt's outcome was recorded as a failure
  abandoned,   // a claim found an attempt whose owner is gone, and marked it abandoned
  lease_lost,  // the owner lost its attempt's lease: nothing was recorded, the key is abandoned
  recovered,   // an attempt succeeded where the one before it had failed or been abandoned
  // A schedule's findings (SPEC §11, core/schedule.hpp), told by the daemon; a schedule's
  // `failed` and `recovered` are the two above.
  missed,     // no real attempt started within grace of a due time
  overrun,    // an attempt runs past the expectation's --max-runtime
  too_often,  // more real attempts in one period than --at-most
};

std::string_view to_string(NotifyEvent event);

// Which events run the command: `failure` the three that are bad news (--on-failure), `change`
// those and recovered (--on-change). change takes in failure, so one word says which.
enum class NotifyOn { failure, change };

std::string_view to_string(NotifyOn on);
std::optional<NotifyOn> notify_on_from_string(std::string_view text);

inline constexpr int64_t k_notify_timeout_ms = 30 * 1000;
// How much of each output stream a notify document carries by default: its first and its last
// this many bytes (all of it when it is no longer than twice this).
inline constexpr int64_t k_notify_stream_bytes = 64 * 1024;

// The daemon's limits on notify commands (the config's "notifications").
struct NotifyLimits {
  int max_running = 4;  // commands running at once, every key's
  int max_queue = 64;   // notifications waiting for their turn
};

struct NotifySpec {
  // The command as run: {"/bin/sh", "-c", LINE} for a command line (the CLI's flags, a config
  // string), or the config's array as is.
  std::vector<std::string> argv;
  NotifyOn on = NotifyOn::failure;
  // How long it may run before its process group gets TERM (then KILL shortly after).
  int64_t timeout_ms = k_notify_timeout_ms;
  // Variables kept out of its environment: the daemon's secrets.
  std::vector<std::string> withheld_env;
  // The document carries the first and the last this many bytes of each stream (the config's
  // "output_bytes"), and the stream's whole size.
  int64_t stream_bytes = k_notify_stream_bytes;
};

// The argv of a command line run through the shell, as cron runs its lines.
std::vector<std::string> shell_command(const std::string& line);

bool notifies(NotifyOn on, NotifyEvent event);

// Whether an outcome is a failure to tell: a failed status, or an HTTP answer of 5xx that was
// stored (the proxy records an upstream's stored 5xx as an outcome that answered).
bool outcome_failed(const Outcome& outcome);

// The event of a recorded outcome, given the status of the record the attempt's claim replaced
// (nullopt: the key had none): failed for a failure, recovered for a success after a failed or
// abandoned attempt, else none. Under `change`, a failure after a failure is no change: none.
std::optional<NotifyEvent> finish_event(std::optional<Status> previous, const Outcome& outcome,
                                        NotifyOn on = NotifyOn::failure);

// Why an attempt ended, as its history entry says it (core::end_reason's words: "exit",
// "status" for an HTTP answer, "signal", "timeout", "owner died", "lease ran out", "error" for a
// failure that is no exit: could not start, a daemon error, the record's note says more), plus
// "lease lost" for that event and "running".
std::string ended_by(const Record& record, std::optional<NotifyEvent> event = std::nullopt);

// The record's current attempt as the notify document shows it: number, owner, start, end,
// duration, exit code, signal, HTTP status, outcome and why it ended.
nlohmann::json attempt_json(const Record& record, std::optional<NotifyEvent> event = std::nullopt);

// The document the notify command reads on stdin: {"event", "key", "time", "record" (what
// `idem show --json` prints, but for each stream only its first and last `stream_bytes`: see
// below), "attempt" (attempt_json)}. Per stream ("stdout", "stderr"): "<s>_bytes" its whole size;
// "<s>_b64" all of it when it is at most 2 * stream_bytes, else its first stream_bytes, with
// "<s>_tail_b64" its last stream_bytes and "<s>_omitted_bytes" the bytes between. Reads the
// stored output in place: nothing of it is copied beyond what the document carries; with
// `output`, the record comes without its output (Store::get_without_output) and the output is
// read through `output` a window at a time instead, so the document costs at most its own size
// whatever the output's. Throws StoreError for a corrupt output.
std::string notify_document(NotifyEvent event, const Record& record, int64_t now_ms,
                            int64_t stream_bytes = k_notify_stream_bytes,
                            const EncodedReader* output = nullptr);

}  // namespace idem::core
