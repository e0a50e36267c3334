#pragma once
// The JSON forms of a record: the object of `idem ls --json`, and the whole record of
// `idem show --json`, which the ledger API's GET /v1/records/{key} answers with too. One function
// each, so every front shows a record the same way. Pure: what only a look at processes can tell
// (is the owner gone, is its process group alive) comes from the caller.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/record.hpp"

namespace idem::core {

// The status a user sees: "expired" past the TTL, "abandoned" for a running record whose lease ran
// out or, without a lease, whose owner is gone (`owner_gone`; the store records that at the next
// claim).
std::string effective_status(const Record& record, int64_t now_ms, bool owner_gone);

// The object of `ls --json`: no output, request or response.
nlohmann::json record_json(const Record& record, int64_t now_ms, bool owner_gone);

// The object of `show --json`: record_json plus the replay policy of the attempt
// (`replay_failures`: its failure is final), the process group (`group_alive`: it still has
// live processes), the lease (never the attempt token: it is the owner's capability), the request,
// the note, the stored response, and both streams as base64 (unless `with_streams` is false: the
// caller adds what it shows of them). Throws StoreError for a corrupt stored output.
nlohmann::json record_detail_json(const Record& record, int64_t now_ms, bool owner_gone,
                                  bool group_alive, bool with_streams = true);

}  // namespace idem::core
