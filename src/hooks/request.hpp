#pragma once
// A delivery as the hooks see it, made from the request the transport read: its headers as the
// handler's environment, what the store keeps of it, its form fields, its signature check.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "front/answer.hpp"
#include "hooks/config.hpp"
#include "net/server.hpp"

namespace idem::hooks {

struct Delivery {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;  // as received, in order
  std::string body;
  std::string query;   // the request target's query, without '?' (a hooks file's rules read it)
  std::string remote;  // the sender's address as a hooks file's "request remote-addr" reads it
  // The value of the header `name` as the handler sees it in IDEM_HEADER_<NAME>, and as
  // signatures and keys read it: every header whose name maps to the same variable
  // (header_variable: X-A, x-a, X_A and X.A all do), their values joined with ", " in the order
  // received, as RFC 9110 combines a repeated field. nullopt when there is none.
  std::optional<std::string> header(std::string_view name) const;
};

// The environment variable of a request header: IDEM_HEADER_ + the name upper-cased, with every
// byte other than an ASCII letter or digit turned into '_' (X-GitHub-Event ->
// IDEM_HEADER_X_GITHUB_EVENT).
std::string header_variable(std::string_view name);

// The handler's IDEM_HEADER_ variables: one per distinct header_variable, in the order of its
// first header, valued as Delivery::header.
std::vector<std::pair<std::string, std::string>> header_environment(const Delivery& delivery);

// What the store keeps of a delivery's value for a header that carries a credential.
inline constexpr std::string_view k_redacted = "[redacted]";

// Whether the store keeps `name` by name only: Authorization, Cookie, Proxy-Authorization, the
// signature header of every scheme, and the header the hook's generic scheme is configured with;
// also any header whose variable is one of theirs (Proxy_Authorization, X.Hub.Signature.256).
bool is_credential_header(const Hook& hook, std::string_view name);

// The request as the store keeps it (JSON: method, path, headers, body_b64), for
// `idem show --request`. Headers are an object by name (as first spelled; a repeated name's
// values joined with ", " in order); credential headers keep their name with the value
// k_redacted.
std::string stored_request(const Hook& hook, const Delivery& delivery);

// The delivery a stored request describes (stored_request's JSON), or nullopt when it is not one.
// Credential headers read k_redacted: their values were never kept.
std::optional<Delivery> stored_delivery(const std::string& stored);

// The values of the field `name` of an application/x-www-form-urlencoded body, in order: split on
// '&', name and value split at the first '=', '+' read as a space and %XX as the byte XX (a '%'
// not followed by two hex digits stays as it is), as the WHATWG URL standard parses forms. Empty
// when the field is absent. The body itself is never changed.
std::vector<std::string> form_values(std::string_view body, std::string_view name);

// The delivery of a request: its method, path and headers as received, and `body`.
Delivery delivery_of(const net::RequestHead& head, std::string body = {});

// The 401 for a delivery whose signature `hook` checks and that fails it (headers from
// `delivery`, `body` byte for byte); nullopt when it passes or the hook checks none. Nothing is
// stored or run before it (contract §8.5).
std::optional<front::Answer> signature_refusal(const Hook& hook, const Delivery& delivery,
                                               std::string_view body);

}  // namespace idem::hooks
