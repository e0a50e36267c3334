#pragma once
// The daemon's log: one JSON object a line on stderr.
#include <nlohmann/json.hpp>
#include <string>

namespace idem::serve {

// Writes `j` as one line; lines of several threads never interleave.
void log_line(const nlohmann::json& j);
std::string now_iso();  // the wall clock, for the log's "time"

}  // namespace idem::serve
