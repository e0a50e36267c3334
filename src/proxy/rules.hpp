#pragma once
// The Idempotency-Key proxy's rules (contract §7), pure: no I/O. Which requests are keyed, how a
// key is read and scoped, what a request's fingerprint is, which headers go to the upstream and
// which of its answer are stored, which answers are stored at all, and the problem answers. The
// route that applies them (claim, forward, record or release) is route.cpp.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/key.hpp"
#include "core/notify.hpp"
#include "core/response.hpp"
#include "net/ip_range.hpp"
#include "net/request_parser.hpp"
#include "net/server.hpp"
#include "net/upstream.hpp"

namespace idem::proxy {

// Which of the upstream's answers are stored and replayed, by status (the config's
// `store_statuses`): items that take a status ("404") or a class ("4xx"), and items that refuse
// them ("!429"). A status is stored when an item takes it and none refuses it.
struct StatusSet {
  struct Item {
    int low = 0, high = 0;  // the statuses it names, 200..599
    bool refuses = false;   // written with a leading '!'
  };
  std::vector<Item> items;

  bool stores(int status) const;
  // Reads one item: a status 200..599 or a class 2xx..5xx, as text or (a status) a number,
  // with a leading '!' to refuse. nullopt when it is none of these.
  static std::optional<Item> read_item(std::string_view text);
};

// The default: every final answer but 5xx and those that say "not done, try again" (408 Request
// Timeout, 409 Conflict, 425 Too Early, 429 Too Many Requests), as Stripe does not store
// rate-limited or conflicting requests: a retry of those must reach the upstream again.
StatusSet default_store_statuses();

// What applies to the requests under one prefix (or to all, at the top of the section).
struct ProxySettings {
  // Keyed methods: these need an Idempotency-Key and are stored; any other method is passed
  // through. Upper-case, distinct, never GET, HEAD or OPTIONS.
  std::vector<std::string> methods = {"POST", "PATCH"};
  int64_t ttl_ms = 24 * 3600 * 1000;  // how long a stored answer is replayed, > 0
  int64_t timeout_ms = 30 * 1000;     // how long a client waits for the answer; past it 504, > 0
  // How much longer a keyed request's answer is awaited (and then stored) after its client got
  // the 504; past it the outcome is unknown for good. >= 0.
  int64_t late_answer_ms = 10 * 60 * 1000;
  int64_t max_body = 1 << 20;                           // request bodies, bytes; over it 413
  StatusSet store_statuses = default_store_statuses();  // others release the key
  bool store_server_errors = false;  // store 5xx answers too, whatever store_statuses says

  bool keyed(std::string_view method) const;
};

struct ProxyRouteSettings {
  // Starts with '/'. Takes the path equal to it and the paths below it ("/v1/pay" takes
  // "/v1/pay" and "/v1/pay/7", not "/v1/payments"; "/v1/" takes everything under /v1/).
  std::string prefix;
  ProxySettings settings;  // the section's, with the route's own fields over them
};

struct ProxyConfig {
  std::string upstream;  // the URL as given
  net::UpstreamTarget target;
  ProxySettings settings;
  // Stored bytes of an answer's body. A longer answer reaches its client whole, and is kept as
  // too large to replay (duplicates get a 409).
  int64_t max_response = 10 << 20;
  std::string scope_header;  // "" or the header that scopes keys in place of Authorization
  // Keyed forwards under way at once: those whose client waits and those whose answer is still
  // awaited after a 504 (late_answer). One more is refused with 503, nothing sent and its key
  // released: a flood of slow requests cannot pile up threads without end. Duplicates, answered
  // from the store, take no slot. 0: the daemon's --max-connections, the requests it serves at
  // once (more forwards are reached only by those still awaited after their client's 504).
  int64_t max_forwards = 0;
  std::vector<ProxyRouteSettings> routes;
  // The peers whose requests are forwarded; others get 403 before the body is read. Empty: all.
  std::vector<net::IpRange> allow;
  // "notify": run when a keyed request's recorded outcome failed (an upstream's stored 5xx, an
  // exchange cut off after the request went out) or, on "change", recovered; null: none.
  std::shared_ptr<core::NotifySpec> notify;

  // The settings of the longest route prefix that takes `path`, else the section's.
  const ProxySettings& settings_for(std::string_view path) const;
};

// Whether `prefix` takes `path` (see ProxyRouteSettings::prefix).
bool prefix_takes(std::string_view prefix, std::string_view path);

inline constexpr std::string_view k_idempotency_key = "Idempotency-Key";

// The Idempotency-Key of a request: a structured-field string (RFC 8941: "abc", with backslash
// escapes of '"' and itself, printable ASCII) or a bare value (what most clients send: a UUID,
// Stripe's "stripe-node-retry-<uuid>"), which must be a valid key (core/key.hpp) and not start with
// '"'.
struct KeyReading {
  enum Kind { ok, missing, malformed } kind = missing;
  std::string key;                  // the key, unquoted, as far as it was read
  std::optional<core::Key> usable;  // ok: the key, checked
  std::string reason;               // malformed: why, one line
};
KeyReading read_idempotency_key(const net::Headers& headers);

// The scope of a request's key: 16 hex digits of SHA-256 over its scope header's value when
// `scope_header` is set and the request has it, else over its Authorization value (each framed
// by name and length, so which one holds a value matters), or "-" when it has neither. One
// client can never reach another's stored answer; with a scope header, a client whose token is
// refreshed between an attempt and its retry stays the same client.
std::string key_scope(const net::Headers& headers, std::string_view scope_header);

// The record's name: "proxy#" + scope + "#" + key.
std::string stored_key(std::string_view scope, std::string_view key);
// The part of stored_key's name before the key's "#": "proxy#" + scope.
std::string stored_scope(std::string_view scope);

// SHA-256 over method, path, query and body, with boundaries (core/fingerprint).
std::string request_fingerprint(const net::RequestHead& head, std::string_view body);

// The request as the store keeps it (for `idem show --request`): method, target, headers (the
// credential ones, Authorization, Cookie, Proxy-Authorization, by name only) and body_b64.
std::string proxy_stored_request(const net::RequestHead& head, std::string_view body);

// Whether a header is hop-by-hop (RFC 9110 §7.6.1: Connection, Keep-Alive, Proxy-Connection, TE,
// Trailer, Transfer-Encoding, Upgrade), or named by the message's Connection header.
bool is_hop_by_hop(std::string_view name, const std::vector<std::string>& connection_names);

// The names a message's Connection headers list (lower-case).
std::vector<std::string> connection_names(
    const std::vector<std::pair<std::string, std::string>>& headers);

// The headers sent upstream: the request's in order, without hop-by-hop ones, Host,
// Content-Length (the client sets it), Expect (the proxy answered it), X-Forwarded-Host and
// X-Forwarded-Proto; then Host (the upstream's authority), X-Forwarded-For (a received one with
// `remote` appended), X-Forwarded-Host (the request's Host, when it had one) and
// X-Forwarded-Proto: http.
std::vector<std::pair<std::string, std::string>> forwarded_headers(
    const net::RequestHead& head, const std::string& remote, const net::UpstreamTarget& target);

// The upstream's answer as the proxy sends it to the client that asked: its status and headers
// in order, without hop-by-hop ones and those the server writes itself (Content-Length, Date);
// the first Content-Type goes to content_type. Set-Cookie is kept: this client is the one it was
// meant for.
net::Response answer_head(const net::UpstreamHead& head);

// What a replay sends again: the answer's status and headers without Set-Cookie (a cookie is
// given to the client that asked, never to whoever replays the key), hop-by-hop ones, Date, and
// any header core::response_problem refuses (it is left out; so are the last headers when they
// are over its size limit).
core::Response stored_response(const net::UpstreamHead& head);

// Whether an upstream's answer with `status` is stored (and replayed) or the key released so a
// retry goes through: as store_statuses says, and 5xx too with store_server_errors.
bool stores_status(int status, const ProxySettings& settings);

// RFC 9457 problem details, with the `error` member payment SDKs look for:
// {"type", "title", "status", "detail", "error": {"type": error_type, "message": detail}}.
net::Response proxy_problem(int status, const std::string& title, const std::string& detail,
                            const std::string& error_type = "idempotency_error");

}  // namespace idem::proxy
