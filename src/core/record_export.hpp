#pragma once
// The form of a record in `idem export` / `idem import`: one JSON object per line holding every
// stored field (times as Unix ms, the captured output in its stored encoding as base64, so both
// streams' interleaving survives), and never the attempt token (an owner's capability, which
// means nothing on another store). Pure. A record read back from its line is the record written,
// so a round trip between any two stores is byte-exact.
#include <nlohmann/json.hpp>
#include <vector>

#include "core/history.hpp"
#include "core/record.hpp"

namespace idem::core {

// The line's object; its "format" member names this form (k_export_format). With `history`
// (the attempts the store keeps, oldest first) as "attempts"; the replay count is the record's.
nlohmann::json export_json(const Record& record, const std::vector<HistoryEntry>& history = {});

// The record a line holds. Throws std::invalid_argument naming the first member that is missing,
// of the wrong type or out of range (an invalid key, an unknown status, a corrupt output).
// "replays" and "last_replay_ms" are optional (0: lines of idems that did not write them).
Record record_from_export(const nlohmann::json& line);
// The attempts a line holds, oldest first; none for a line without "attempts" (an idem that did
// not write them: the record's current attempt is then its history). Throws as
// record_from_export.
std::vector<HistoryEntry> history_from_export(const nlohmann::json& line);

inline constexpr int k_export_format = 1;

}  // namespace idem::core
