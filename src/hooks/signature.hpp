#pragma once
// Webhook signature verification (contract §6): `idem serve` checks a delivery with `verify` before
// it stores or runs anything. The only user of OpenSSL's HMAC. Pure: no I/O; the headers and the
// clock come from the caller, so every scheme is tested without a server or a sleep.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace idem::hooks {

enum class Scheme { github, stripe, standard_webhooks, shopify, slack, hmac_sha256 };

// The names used in the config file: "github", "stripe", "standard-webhooks", "shopify", "slack",
// "hmac-sha256". Exact match; anything else is nullopt (a typo must not disable a check).
std::optional<Scheme> scheme_from_string(std::string_view name);
std::string_view to_string(Scheme scheme);

struct SignatureConfig {
  Scheme scheme;
  // The secret exactly as the environment variable holds it. Stripe keys the HMAC with the text
  // itself, `whsec_` included; standard-webhooks base64-decodes what follows `whsec_`.
  std::string secret;
  // hmac-sha256 only: the header carrying the signature (required there).
  std::string header;
  // hmac-sha256 only: how the signature is written.
  enum class Encoding { hex, base64 } encoding = Encoding::hex;
  // hmac-sha256 only: a prefix such as "sha256=" the header must start with; stripped before
  // decoding. Empty: no prefix.
  std::string prefix;
  // Schemes with a timestamp (stripe, standard-webhooks, slack): how far, in seconds and in either
  // direction, the signed timestamp may be from now. Bounds how long a captured delivery can be
  // replayed.
  int64_t tolerance_s = 300;
};

// Returns the value of a request header, looked up case-insensitively by the caller, or nullopt
// when the request has none.
using HeaderLookup = std::function<std::optional<std::string>(std::string_view name)>;

struct SignatureCheck {
  bool ok = false;
  // When !ok, one line saying why, e.g. "X-Hub-Signature-256 is missing", "signature does not
  // match", "timestamp 1700000000 is 412s away from now (tolerance 300s)". Never contains the
  // secret, the expected signature or a header value other than a validated timestamp.
  std::string problem;
};

// Checks the delivery's signature under `config`. `body` is the raw request body, byte for byte;
// `now_unix_s` is the current time for the schemes with a timestamp. Throws nothing the request
// can provoke.
SignatureCheck verify(const SignatureConfig& config, const HeaderLookup& headers,
                      std::string_view body, int64_t now_unix_s);

// Where a scheme's deliveries carry their own unique id: the idempotency key used when a hook's
// config names none. `name` is a header name or a JSON Pointer into the body.
struct DefaultKey {
  enum Kind { header, json } kind;
  std::string name;
};
// github: header X-GitHub-Delivery; stripe: json /id; standard-webhooks: header webhook-id;
// shopify: header X-Shopify-Webhook-Id; slack: json /event_id (its timestamp header is not unique);
// hmac-sha256: nullopt, a generic sender has no known id.
std::optional<DefaultKey> default_key(Scheme scheme);
// The same for one delivery: standard-webhooks takes svix-id when the delivery is signed under
// the svix- names (see standard_webhooks_headers), so the key is always the id that was signed.
std::optional<DefaultKey> default_key(Scheme scheme, const HeaderLookup& headers);

// The header names a standard-webhooks delivery is signed under: webhook-id, webhook-timestamp,
// webhook-signature, or Svix's svix-id, svix-timestamp, svix-signature. One set, never a mix:
// the webhook- set when the delivery has any of its headers, else the svix- set when it has any
// of those, else the webhook- set (whose absence verify then reports).
struct StandardWebhooksHeaders {
  std::string_view id, timestamp, signature;
};
StandardWebhooksHeaders standard_webhooks_headers(const HeaderLookup& headers);

// Why `secret` cannot check signatures under `scheme`, or nullopt when it can. Every scheme needs
// a non-empty secret; standard-webhooks also needs base64 (an optional whsec_ prefix, then
// standard base64 with its padding, as the Standard Webhooks libraries decode it) of at least
// one byte. Never contains the secret. `idem serve` asks at start and reload, so that a secret
// that could verify nothing is refused there instead of failing every delivery.
std::optional<std::string> secret_problem(Scheme scheme, std::string_view secret);

// The request headers that carry a signature under some scheme: X-Hub-Signature (GitHub's SHA-1
// one) and X-Hub-Signature-256, Stripe-Signature, webhook-signature, svix-signature,
// X-Shopify-Hmac-Sha256, X-Slack-Signature. The store keeps such headers by name only.
std::span<const std::string_view> signature_header_names();

}  // namespace idem::hooks
