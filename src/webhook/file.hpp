#pragma once
// The hooks files of the Go `webhook` server (contract §6b), read unchanged: JSON or YAML,
// optionally a template first (webhook/template.hpp). Parsing is pure: the caller reads the file
// and supplies the environment and file lookups, so tests need neither. What a hook does with a
// request is webhook/request.hpp's; how it is served, the daemon's.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hooks/config.hpp"
#include "webhook/regex.hpp"

namespace idem::webhook {

// Where a value comes from (webhook's "parameter"/argument objects): `source` is one of header,
// url (also spelled query), payload, request, raw-request-body, string, entire-payload,
// entire-query, entire-headers; `name` is a header name, a query field, a dot path into the
// payload ("commits.0.id"), "method" or "remote-addr" for request, the constant for string;
// unused by raw-request-body and the entire-* sources.
struct Argument {
  enum class Source {
    header,
    url,
    payload,
    request,
    raw_request_body,
    string,
    entire_payload,
    entire_query,
    entire_headers
  };
  Source source = Source::payload;
  std::string name;
  std::string envname;        // pass-environment-to-command / pass-file-to-command: the variable
  bool base64decode = false;  // pass-file-to-command: the file holds the value base64-decoded
};

struct MatchRule {
  enum class Type {
    value,              // the parameter equals `value` (constant-time)
    regex,              // the parameter matches `regex` (search, not whole match, as Go's)
    payload_hmac_sha1,  // the parameter holds signatures of the raw body under `secret`
    payload_hmac_sha256,
    payload_hmac_sha512,
    ip_whitelist,    // the request's remote address lies in `ip_range` (ip_range.hpp)
    scalr_signature  // Scalr's X-Signature / Date headers under `secret`
  };
  Type type = Type::value;
  Argument parameter;
  std::string value;
  std::string regex_text;              // as written, for messages
  std::shared_ptr<const Regex> regex;  // compiled once, at load (RE2 syntax, as Go's)
  std::string secret;                  // the HMAC types and scalr-signature; never logged
  std::string ip_range;                // ip-whitelist: one or more CIDRs or addresses
};

// A trigger rule: exactly one of and / or / not / match.
struct Rule {
  enum class Kind { all, any, negate, match };  // and, or, not, match
  Kind kind = Kind::match;
  std::vector<Rule> children;  // all / any: any number; negate: exactly one
  MatchRule match;             // match only
};

// One hook of a hooks file, with webhook's properties and idem's extra ones.
struct WebhookHook {
  std::string id;  // non-empty, unique across every loaded file; any bytes, '/' included
  // Where it is served: "/" + urlprefix + "/" + id, as a request's path reads once
  // percent-decoded (its native.path is this path encoded).
  std::string served_path;
  std::string file;               // the hooks file it came from, for messages
  std::string execute_command;    // run as is: never split on spaces, as webhook does
  std::string working_directory;  // command-working-directory; empty: the daemon's
  std::string response_message;
  std::vector<std::pair<std::string, std::string>> response_headers;  // in order
  bool capture_output = false;           // include-command-output-in-response
  bool capture_output_on_error = false;  // include-command-output-in-response-on-error
  std::vector<Argument> pass_environment;
  std::vector<Argument> pass_arguments;
  std::vector<Argument> pass_file;
  std::vector<Argument> parse_as_json;  // parse-parameters-as-json
  std::optional<Rule> trigger_rule;
  // trigger-rule-mismatch-http-response-code and success-http-response-code, any integer as
  // webhook loads them: 0 (not set) or a code Go does not know (known_status) answers 200.
  int mismatch_code = 0;
  bool signature_soft_failures = false;
  std::string incoming_content_type;  // incoming-payload-content-type; empty: the request's
  int success_code = 0;
  std::vector<std::string> http_methods;  // trimmed, upper-case; empty: every method

  // idem's extra properties, from the hook's "idem" object (absent: none of them). The key is a
  // parameter source; without one every delivery runs, as in webhook.
  std::optional<Argument> key;
  // The rest as a native hook's (hooks/config.hpp): path (served_path with the bytes a request
  // target cannot hold raw percent-encoded, and '%', '?' and '#': printable ASCII, so that its
  // records are named as a native hook's, e.g. "/hooks/a%20b#KEY"), command
  // ({execute_command}), signature and secret_env, ttl_ms, timeout_ms (0 here unless the idem
  // object sets one: webhook has no timeout), max_body, max_concurrency, max_queue,
  // retry_abandoned, methods (= http_methods, possibly empty), withheld_env. Its `key` and
  // `no_key` are unused.
  hooks::Hook native;
};

struct HooksFileOptions {
  std::string urlprefix = "hooks";  // --urlprefix: hooks are served at /{urlprefix}/{id}
  bool as_template = false;         // --template
};

// Looks up a file's content for the template's `cat` and `credential` (nullopt: unreadable).
using FileLookup = std::function<std::optional<std::string>(const std::string& path)>;

struct HooksFiles {
  std::vector<WebhookHook> hooks;  // every file's, in order
  // Every environment variable the templates read with getenv and every secret_env of an idem
  // signature: no handler gets them in its environment.
  std::vector<std::string> withheld_env;
  // What deserves a warning in the log but does not stop the load, one line each naming the
  // file: a variable a template read that is unset (it expanded to ""), a file cat or credential
  // could not read, a deprecated match type (payload-hash-*: payload-hmac-* under its old name).
  std::vector<std::string> warnings;
};

// One file's name and text.
struct HooksFileText {
  std::string name;
  std::string text;
};

// Parses every file as one set: an id twice, in one file or across files, is an error. Every
// file is read as YAML, as webhook reads them, JSON included (a file that starts with '[' or '{'
// and is not YAML to yaml-cpp is read as JSON, whose messages then say what is wrong). Throws
// ConfigError with one line naming the file, the hook (by index and id) and the property, e.g.
// "hooks.yaml: hooks[2] (deploy): trigger-rule.match.type: unknown type 'hmac-sha384'". Unknown
// properties are errors, as in idem's own config. As webhook reads them: property names match
// whatever the case of their letters, null is absent, a number or boolean stands for its text
// where a string is expected (`"value": 42` is "42"), and \' in a double-quoted string is an
// apostrophe. Hooks with no "idem" object get timeout 0 (none), max_body 10 MiB and idem's other
// defaults; `native.async` stays false (a hook without include-command-output-in-response
// answers at once all the same). Warnings: a response code Go does not know, an id whose path is
// not clean (cleaned_path), which webhook's router never serves.
HooksFiles parse_hooks_files(const std::vector<HooksFileText>& files,
                             const HooksFileOptions& options, const front::EnvLookup& env,
                             const FileLookup& read_file);

// Request paths as webhook's router (Go's net/http and gorilla/mux) reads them.
// The path with each %XX replaced by its byte, '+' kept; nullopt when a '%' is not followed by
// two hex digits (Go's server answers such a request 400).
std::optional<std::string> decoded_path(std::string_view path);
// gorilla/mux's cleanPath: rooted, "//" as "/", without "." and ".." segments (none above the
// root), a trailing slash kept. A request for a path whose cleaned form differs is redirected.
std::string cleaned_path(std::string_view path);
// The path as Go's URL.EscapedPath writes it (in a redirect's Location): letters, digits and
// -._~$&+,/:;=@ as they are, every other byte as %XX (upper-case hex).
std::string go_escaped_path(std::string_view path);

// Whether Go's http.StatusText knows `status`: webhook answers 200 in place of a configured
// success or mismatch code it does not know.
bool known_status(int status);

}  // namespace idem::webhook
