#pragma once
// What a hook of a webhook hooks file (webhook/file.hpp) makes of one request: the payload
// decoded by its content type, parameter values by source, trigger rules, and the command's
// arguments, environment and files. Pure: no I/O, no clock of its own.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "webhook/file.hpp"

namespace idem::webhook {

// The request as the hook sees it.
struct Request {
  std::string method;
  std::string remote_addr;  // the peer's address and port as webhook shows it: "127.0.0.1:54321"
  std::vector<std::pair<std::string, std::string>> headers;  // as received
  std::vector<std::pair<std::string, std::string>> query;    // decoded, in order
  std::string body;                                          // raw, untouched
  std::string content_type;  // the hook's incoming-payload-content-type, else the header's
  // The decoded payload (webhook/payload.hpp): JSON when the content type contains "json" (an
  // object; a top-level array is the payload's member "root", as webhook has it: "root.0.id"),
  // with numbers kept as written (json_number values); form-encoded when it contains
  // "x-www-form-urlencoded" (one string per field, the first of a repeated one); XML when it
  // contains "xml" (as mxj maps it: elements by name, attributes as "-name", text beside
  // attributes as "#text", repeated elements as arrays); multipart/form-data when it starts with
  // "multipart/form-data;" and holds none of those (webhook/multipart.hpp): each form value by
  // name (the first of a repeated one), and each file part that the hook's
  // parse-parameters-as-json names with source payload, or whose own Content-Type is
  // application/json, as the JSON object it holds (nil_map when it holds none); other file parts
  // are left out. Null when the body is of no such type or does not parse (webhook then goes on
  // with no payload). Render it with go_json.
  nlohmann::json payload;
  std::string payload_error;  // why payload is null, for the log ("" when it parsed)
  // webhook leaves the body of a multipart/form-data request to Go's form parser and never
  // reads it itself: its raw-request-body is empty then, and payload signatures are checked
  // against an empty body. `body` stays as received (for idem's delivery record).
  bool multipart = false;
  // Why Go's ParseMultipartForm refused the body (or the query beside it): webhook then answers
  // 500 "Error occurred while parsing multipart form." before any rule. "" when it did not.
  std::string form_error;
  // The parameters of the header and url sources as webhook keeps them: an object of the first
  // value of each header by its canonical name ("X-Hub-Signature"; Host and Transfer-Encoding
  // are not among them, as in Go's net/http) and of each query field by its name.
  nlohmann::json header_values;
  nlohmann::json query_values;
  // For the log: each parse-parameters-as-json value that was missing or not a JSON object.
  std::vector<std::string> problems;
  int64_t now_unix_s = 0;  // for scalr-signature's date check
};

// Builds a Request: decodes the query string (raw, after '?'), picks the content type, decodes
// the payload, then applies the hook's parse-parameters-as-json (a string value replaced by the
// JSON it holds).
Request make_request(const WebhookHook& hook, std::string method, std::string remote_addr,
                     std::vector<std::pair<std::string, std::string>> headers,
                     std::string_view raw_query, std::string body, int64_t now_unix_s);

// The value of a parameter, as webhook renders it: strings as they are, numbers as written,
// booleans "true"/"false", objects and arrays as JSON. nullopt when the source has no such value.
// Header names are looked up case-insensitively.
std::optional<std::string> value_of(const Argument& argument, const Request& request);

struct RuleResult {
  bool ok = false;
  // A failure that is the request's fault, not a mismatch: a signature that does not verify
  // (unless the hook allows soft failures, when it only makes its match false) or a rule that
  // cannot be evaluated. webhook answers 500 "Error occurred while evaluating hook rules." then.
  // A missing parameter is not an error: it only makes its match false.
  std::optional<std::string> error;
};

// Evaluates the hook's trigger rule (none: ok) against the request. Constant-time comparisons
// for value and signatures.
RuleResult evaluate(const WebhookHook& hook, const Request& request);

struct CommandFile {
  std::string envname;  // the variable that names the file's path
  std::string content;  // already base64-decoded when asked
};

// What the command gets: argv (execute-command then pass-arguments-to-command, a missing value
// passed as an empty string, as webhook does), the environment it adds (pass-environment-to-
// command: envname, else HOOK_ + the name; a missing value is left out), and the files to write
// (pass-file-to-command: envname, else HOOK_ + the name upper-cased). `problems` lists each value
// that was missing, for the log.
struct Command {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<CommandFile> files;
  std::vector<std::string> problems;
};
Command command_for(const WebhookHook& hook, const Request& request);

}  // namespace idem::webhook
