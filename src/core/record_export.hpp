#pragma once
// The form of a record in `idem export` / `idem import`: one JSON object per line holding every
// stored field (times as Unix ms, the captured output in its stored encoding as base64, so both
// streams' interleaving survives), and never the attempt token (an owner's capability, which
// means nothing on another store). Pure. A record read back from its line is the record written,
// so a round trip between any two stores is byte-exact.
#include <nlohmann/json.hpp>

#include "core/record.hpp"

namespace idem::core {

// The line's object; its "format" member names this form (k_export_format).
nlohmann::json export_json(const Record& record);

// The record a line holds. Throws std::invalid_argument naming the first member that is missing,
// of the wrong type or out of range (an invalid key, an unknown status, a corrupt output).
Record record_from_export(const nlohmann::json& line);

inline constexpr int k_export_format = 1;

}  // namespace idem::core
