#pragma once
// The daemon's log (one JSON object a line on stderr) and the Response an Answer becomes.
#include <nlohmann/json.hpp>
#include <string>

#include "net/answer.hpp"
#include "net/server.hpp"

namespace idem::http {

// Writes `j` as one line; lines of several threads never interleave.
void log_line(const nlohmann::json& j);
std::string now_iso();  // the wall clock, for the log's "time"

// The Response of an Answer, with its key, outcome and error as log fields (and `hook`'s name).
Response to_response(Answer a, const std::string& hook = "");

}  // namespace idem::http
