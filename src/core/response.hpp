#pragma once
// The stored answer: what a duplicate request is answered with, the same for a hook's handler
// (`idem serve` today) and an upstream behind the Idempotency-Key proxy (later), so the record
// model knows nothing of either.
//
// Its body is not here: it is the outcome's stored stdout (the out stream of Record::output, a
// CapturedOutput). A hook answers with its handler's stdout, so that is already where the body
// is; a proxy stores the upstream's body as the attempt's stdout (and nothing as stderr). So a
// body is kept once, under the output cap and truncation flag every outcome has, and
// `idem show --stdout` prints it like any other outcome's.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::core {

// Of the headers of one response: names and values together (the stored form keeps no more).
inline constexpr size_t k_max_response_header_bytes = 256 * 1024;

struct Response {
  int status = 200;  // 100..599 (RFC 9110 §15)
  // The headers a replay must send again, in the order they were sent: Content-Type, Location,
  // ETag, ...; not what a replay adds of its own (Idempotent-Replayed) or derives from the
  // record (Idem-Output-Truncated, from Record::output_truncated: the truncation belongs to the
  // stored body, which the record describes already), and never what the replaying server
  // writes itself (see response_problem). A name as it was spelt; names may repeat.
  std::vector<std::pair<std::string, std::string>> headers;

  bool operator==(const Response&) const = default;
};

// Whether `text` is an RFC 9110 token (§5.6.2: one or more tchar), as header names and methods
// are; the one definition the stored answer and the HTTP parsers share.
bool is_token(std::string_view text);

// Whether two header names are the same name (ASCII case-insensitive, RFC 9110 §5.1); the HTTP
// parsers compare names and tokens with it too.
bool same_header_name(std::string_view a, std::string_view b);

// The value of the first header called `name` (ASCII case-insensitive), or nullopt.
std::optional<std::string> header_value(const Response& response, std::string_view name);

// Why `response` cannot be stored, or nullopt when it can: a status outside 100..599, a header
// name that is not an RFC 9110 token, a value holding a control byte other than HTAB (CR, LF,
// NUL: it could split a replayed head) or bytes that are not UTF-8 (obs-text, obsolete since RFC
// 7230: a proxy leaves such a header out), headers over k_max_response_header_bytes, or a header
// the replaying server frames or dates the answer with itself (Content-Length,
// Transfer-Encoding, Date) or a hop-by-hop one (Connection, Keep-Alive, Proxy-Connection, TE,
// Trailer, Upgrade): replayed beside the server's own, a second Content-Length would let a
// client and an intermediary frame the answer differently.
std::optional<std::string> response_problem(const Response& response);

// The stored form, compact JSON: {"status":201,"headers":[["Location","/orders/7"],...]}.
// Throws std::invalid_argument for a response that response_problem refuses.
std::string encode_response(const Response& response);

// The response in a stored form; nullopt for anything encode_response cannot have written (not
// JSON, a member of the wrong type, a header that is not a pair of strings, a response that
// response_problem refuses). Members it does not know are ignored. Throws nothing: a corrupt row
// reads as a record without a response, it does not fail the store.
std::optional<Response> decode_response(std::string_view stored);

}  // namespace idem::core
