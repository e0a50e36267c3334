#pragma once
// A key's attempt history: one entry per attempt made at it, kept with its record until the
// record expires (its next claim starts afresh) or is removed. Pure: the stores write and read the
// entries, the fronts print them.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.hpp"

namespace idem::core {

// Why an attempt ended (HistoryEntry::reason). A finished attempt ended by its exit code or its
// answer's status, its timeout, a signal, or an error of its own (no code: an upstream that could
// not be reached, a command that could not start); an abandoned one because its owner died, its
// lease ran out, or it was released (given up without an outcome, Store::release).
inline constexpr const char* k_ended_exit = "exit";
inline constexpr const char* k_ended_status = "status";
inline constexpr const char* k_ended_timeout = "timeout";
inline constexpr const char* k_ended_signal = "signal";
inline constexpr const char* k_ended_error = "error";
inline constexpr const char* k_ended_owner_died = "owner died";
inline constexpr const char* k_ended_lease_ran_out = "lease ran out";
inline constexpr const char* k_ended_released = "released";

// The trigger of a manual re-run (ClaimRequest::trigger), for a front that runs a key again on a
// user's request rather than its own schedule.
inline constexpr const char* k_trigger_rerun = "rerun";

struct HistoryEntry {
  // 1, 2, ... in the order the attempts were claimed: every attempt counts, a released one too, so
  // after a release this runs ahead of the record's own attempt number.
  int64_t number = 0;
  std::string trigger;  // run, each, begin, hook, proxy, ledger, rerun
  std::string host;     // the owner's
  int64_t pid = 0;
  int64_t started_ms = 0;
  int64_t ended_ms = 0;  // 0: still running, or abandoned (when it ended is not known)
  Status outcome = Status::running;
  std::string reason;  // the k_ended_* that ended it; empty while running
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::optional<int> http_status;  // an answer's status (a hook's, an upstream's)
  std::string note;
};

// The trigger a claim of `kind` records when it names none: the kind, a hook's ("http") as
// "hook".
std::string trigger_of_kind(std::string_view kind);
// The record kind of a front as `ls --front` names it (run, each, begin, hook, proxy, ledger);
// nullopt for another word.
std::optional<std::string> kind_of_front(std::string_view front);
// The fronts kind_of_front knows, for messages: "run, each, begin, hook, proxy, ledger".
std::string_view known_fronts();
// The same, one name each, in that order (the page's front filter).
std::vector<std::string_view> front_names();

// Why a finished attempt ended, from its outcome.
const char* end_reason(const Outcome& outcome);
// Why an abandoned attempt ended, from the note the claim flow gave it.
const char* abandon_reason(std::string_view note);

// One entry as `idem log --json`, `show --json` and the ledger show it.
nlohmann::json history_json(const HistoryEntry& entry);
// The entries, oldest first, as a JSON array.
nlohmann::json history_array(const std::vector<HistoryEntry>& entries);
// A key's history as `idem log --json` prints it and GET /v1/records/{key}/attempts answers:
// {"key", "replays", "last_replay_at", "attempts": [...]}.
nlohmann::json history_document(const Record& record, const std::vector<HistoryEntry>& entries);

// A bound of `ls --since`/`--until`: a duration back from `now_ms` ("90m", "2d"), or an RFC 3339
// time ("2026-12-01T08:00:00Z", with a fraction or an offset); Unix ms, or nullopt for neither.
std::optional<int64_t> parse_time_bound(std::string_view text, int64_t now_ms);

}  // namespace idem::core
