#include "hooks/signature.hpp"

#include <charconv>
#include <climits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "util/hex.hpp"
#include "util/secret.hpp"

namespace idem::hooks {

namespace {

constexpr std::string_view k_github_signature = "X-Hub-Signature-256";
constexpr std::string_view k_stripe_signature = "Stripe-Signature";
constexpr std::string_view k_webhook_id = "webhook-id";
constexpr std::string_view k_webhook_timestamp = "webhook-timestamp";
constexpr std::string_view k_webhook_signature = "webhook-signature";
constexpr std::string_view k_svix_id = "svix-id";
constexpr std::string_view k_svix_timestamp = "svix-timestamp";
constexpr std::string_view k_svix_signature = "svix-signature";
constexpr std::string_view k_shopify_signature = "X-Shopify-Hmac-Sha256";
constexpr std::string_view k_slack_timestamp = "X-Slack-Request-Timestamp";
constexpr std::string_view k_slack_signature = "X-Slack-Signature";
constexpr std::string_view k_standard_secret_prefix = "whsec_";

using Encoding = SignatureConfig::Encoding;

// The key bytes of a standard-webhooks secret, or nullopt with `problem` set.
std::optional<std::string> standard_webhooks_key(std::string_view secret, std::string& problem) {
  if (secret.substr(0, k_standard_secret_prefix.size()) == k_standard_secret_prefix)
    secret.remove_prefix(k_standard_secret_prefix.size());
  if (secret.empty()) {
    problem = "secret is empty";
    return std::nullopt;
  }
  std::optional<std::string> key = util::from_base64(secret);
  if (!key) problem = "secret is not base64";
  return key;
}

SignatureCheck signature_passed() { return {true, {}}; }
SignatureCheck signature_failed(std::string problem) { return {false, std::move(problem)}; }

// HTTP's optional whitespace around a header value or a list item.
std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A header the scheme cannot do without, trimmed; nullopt with `problem` set when it is absent or
// blank.
std::optional<std::string> required_header(const HeaderLookup& headers, std::string_view name,
                                           std::string& problem) {
  std::optional<std::string> value = headers(name);
  if (!value) {
    problem = std::string(name) + " is missing";
    return std::nullopt;
  }
  std::string_view trimmed = trim(*value);
  if (trimmed.empty()) {
    problem = std::string(name) + " is empty";
    return std::nullopt;
  }
  return std::string(trimmed);
}

// Hex of either case to bytes. The input is the sender's claimed signature, not a secret, so
// decoding it may take data-dependent time; only the comparison with our MAC must not.
std::optional<std::string> from_hex(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  std::string bytes;
  bytes.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    int high = util::hex_digit(text[i]);
    int low = util::hex_digit(text[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    bytes.push_back(char((high << 4) | low));
  }
  return bytes;
}

std::optional<std::string> decode(std::string_view text, Encoding encoding) {
  return encoding == Encoding::hex ? from_hex(text) : util::from_base64(text);
}

// Unix seconds as the providers write them: decimal digits only, no sign, no fraction.
std::optional<int64_t> parse_unix_seconds(std::string_view text) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end) return std::nullopt;  // too large for int64
  return value;
}

// Both directions: a timestamp far in the future is as suspect as an old one (a clock gone wrong
// or a delivery signed ahead of time to be replayed later).
SignatureCheck check_timestamp(int64_t timestamp, int64_t now_unix_s, int64_t tolerance_s) {
  // The distance between two int64 values always fits in uint64, and unsigned subtraction
  // computes it without overflow.
  uint64_t distance = timestamp >= now_unix_s ? uint64_t(timestamp) - uint64_t(now_unix_s)
                                              : uint64_t(now_unix_s) - uint64_t(timestamp);
  uint64_t tolerance = tolerance_s > 0 ? uint64_t(tolerance_s) : 0;
  if (distance <= tolerance) return signature_passed();
  return signature_failed("timestamp " + std::to_string(timestamp) + " is " +
                          std::to_string(distance) + "s away from now (tolerance " +
                          std::to_string(tolerance) + "s)");
}

// A header holding `prefix` then the MAC in `encoding`: the shape of github, shopify, slack's
// signature and the generic scheme.
SignatureCheck check_encoded_mac(std::string_view header_name, std::string_view value,
                                 std::string_view prefix, Encoding encoding, std::string_view mac) {
  std::optional<std::string> claimed;
  if (value.size() > prefix.size() && value.substr(0, prefix.size()) == prefix)
    claimed = decode(value.substr(prefix.size()), encoding);
  if (!claimed) {
    return signature_failed(std::string(header_name) + " is not in the form " +
                            std::string(prefix) +
                            (encoding == Encoding::hex ? "<hex>" : "<base64>"));
  }
  if (!util::same_secret(*claimed, mac)) return signature_failed("signature does not match");
  return signature_passed();
}

SignatureCheck verify_github(const SignatureConfig& config, const HeaderLookup& headers,
                             std::string_view body) {
  std::string problem;
  std::optional<std::string> value = required_header(headers, k_github_signature, problem);
  if (!value) return signature_failed(problem);
  return check_encoded_mac(k_github_signature, *value, "sha256=", Encoding::hex,
                           util::hmac_sha256(config.secret, body));
}

SignatureCheck verify_shopify(const SignatureConfig& config, const HeaderLookup& headers,
                              std::string_view body) {
  std::string problem;
  std::optional<std::string> value = required_header(headers, k_shopify_signature, problem);
  if (!value) return signature_failed(problem);
  return check_encoded_mac(k_shopify_signature, *value, "", Encoding::base64,
                           util::hmac_sha256(config.secret, body));
}

SignatureCheck verify_generic(const SignatureConfig& config, const HeaderLookup& headers,
                              std::string_view body) {
  if (trim(config.header).empty()) return signature_failed("no signature header is configured");
  std::string problem;
  std::optional<std::string> value = required_header(headers, config.header, problem);
  if (!value) return signature_failed(problem);
  return check_encoded_mac(config.header, *value, config.prefix, config.encoding,
                           util::hmac_sha256(config.secret, body));
}

SignatureCheck verify_slack(const SignatureConfig& config, const HeaderLookup& headers,
                            std::string_view body, int64_t now_unix_s) {
  std::string problem;
  std::optional<std::string> timestamp_text = required_header(headers, k_slack_timestamp, problem);
  if (!timestamp_text) return signature_failed(problem);
  std::optional<std::string> signature = required_header(headers, k_slack_signature, problem);
  if (!signature) return signature_failed(problem);
  std::optional<int64_t> timestamp = parse_unix_seconds(*timestamp_text);
  if (!timestamp)
    return signature_failed(std::string(k_slack_timestamp) + " is not a unix timestamp");

  // Signed as the header's text, not the parsed number: that is what Slack put in the base string.
  std::string base;
  base.reserve(4 + timestamp_text->size() + body.size());
  base.append("v0:").append(*timestamp_text).append(":").append(body);
  SignatureCheck verdict = check_encoded_mac(k_slack_signature, *signature, "v0=", Encoding::hex,
                                             util::hmac_sha256(config.secret, base));
  if (!verdict.ok) return verdict;
  return check_timestamp(*timestamp, now_unix_s, config.tolerance_s);
}

// Stripe-Signature: comma-separated key=value items, exactly one `t`, any number of `v1` (several
// while a secret is being rolled), other schemes such as `v0` ignored.
SignatureCheck verify_stripe(const SignatureConfig& config, const HeaderLookup& headers,
                             std::string_view body, int64_t now_unix_s) {
  std::string problem;
  std::optional<std::string> value = required_header(headers, k_stripe_signature, problem);
  if (!value) return signature_failed(problem);

  std::optional<std::string_view> timestamp_text;
  std::vector<std::string_view> v1_signatures;
  std::string_view rest = *value;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    size_t equals = item.find('=');
    if (equals == std::string_view::npos || equals == 0)
      return signature_failed(std::string(k_stripe_signature) +
                              " is not a list of key=value items");
    std::string_view key = item.substr(0, equals);
    std::string_view item_value = item.substr(equals + 1);
    if (key == "t") {
      if (timestamp_text)
        return signature_failed(std::string(k_stripe_signature) + " has more than one t=");
      timestamp_text = item_value;
    } else if (key == "v1") {
      v1_signatures.push_back(item_value);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (!timestamp_text)
    return signature_failed(std::string(k_stripe_signature) + " has no t= timestamp");
  std::optional<int64_t> timestamp = parse_unix_seconds(*timestamp_text);
  if (!timestamp)
    return signature_failed(std::string(k_stripe_signature) + " has a malformed t= timestamp");
  if (v1_signatures.empty())
    return signature_failed(std::string(k_stripe_signature) + " has no v1= signature");

  std::string signed_payload;
  signed_payload.reserve(timestamp_text->size() + 1 + body.size());
  signed_payload.append(*timestamp_text).append(".").append(body);
  std::string mac = util::hmac_sha256(config.secret, signed_payload);
  // Every candidate is compared, matched or not, so the time taken says nothing about which.
  bool matched = false;
  for (std::string_view candidate : v1_signatures) {
    std::optional<std::string> claimed = from_hex(candidate);
    matched |= claimed.has_value() && util::same_secret(*claimed, mac);
  }
  if (!matched) return signature_failed("signature does not match");
  return check_timestamp(*timestamp, now_unix_s, config.tolerance_s);
}

// Standard Webhooks: the key is the base64 after `whsec_`; webhook-signature is a space-separated
// list of `version,signature` entries of which only v1 (HMAC-SHA256, base64) is ours to check.
SignatureCheck verify_standard_webhooks(const SignatureConfig& config, const HeaderLookup& headers,
                                        std::string_view body, int64_t now_unix_s) {
  std::string problem;
  std::optional<std::string> key = standard_webhooks_key(config.secret, problem);
  if (!key) return signature_failed(problem);

  const StandardWebhooksHeaders names = standard_webhooks_headers(headers);
  std::optional<std::string> id = required_header(headers, names.id, problem);
  if (!id) return signature_failed(problem);
  std::optional<std::string> timestamp_text = required_header(headers, names.timestamp, problem);
  if (!timestamp_text) return signature_failed(problem);
  std::optional<std::string> signatures = required_header(headers, names.signature, problem);
  if (!signatures) return signature_failed(problem);
  std::optional<int64_t> timestamp = parse_unix_seconds(*timestamp_text);
  if (!timestamp)
    return signature_failed(std::string(names.timestamp) + " is not a unix timestamp");

  std::string content;
  content.reserve(id->size() + 1 + timestamp_text->size() + 1 + body.size());
  content.append(*id).append(".").append(*timestamp_text).append(".").append(body);
  std::string mac = util::hmac_sha256(*key, content);

  bool saw_v1 = false;
  bool matched = false;
  std::string_view rest = *signatures;
  while (!rest.empty()) {
    size_t space = rest.find(' ');
    std::string_view entry = rest.substr(0, space);
    rest.remove_prefix(space == std::string_view::npos ? rest.size() : space + 1);
    size_t comma = entry.find(',');
    if (comma == std::string_view::npos || entry.substr(0, comma) != "v1") continue;
    saw_v1 = true;
    std::optional<std::string> claimed = util::from_base64(entry.substr(comma + 1));
    matched |= claimed.has_value() && util::same_secret(*claimed, mac);
  }
  if (!saw_v1) return signature_failed(std::string(names.signature) + " has no v1 signature");
  if (!matched) return signature_failed("signature does not match");
  return check_timestamp(*timestamp, now_unix_s, config.tolerance_s);
}

}  // namespace

std::optional<Scheme> scheme_from_string(std::string_view name) {
  for (Scheme scheme : {Scheme::github, Scheme::stripe, Scheme::standard_webhooks, Scheme::shopify,
                        Scheme::slack, Scheme::hmac_sha256}) {
    if (to_string(scheme) == name) return scheme;
  }
  return std::nullopt;
}

std::string_view to_string(Scheme scheme) {
  switch (scheme) {
    case Scheme::github:
      return "github";
    case Scheme::stripe:
      return "stripe";
    case Scheme::standard_webhooks:
      return "standard-webhooks";
    case Scheme::shopify:
      return "shopify";
    case Scheme::slack:
      return "slack";
    case Scheme::hmac_sha256:
      return "hmac-sha256";
  }
  return "unknown";
}

SignatureCheck verify(const SignatureConfig& config, const HeaderLookup& headers,
                      std::string_view body, int64_t now_unix_s) {
  // An empty key would make every MAC computable by anyone: refuse rather than "verify".
  if (config.secret.empty()) return signature_failed("secret is empty");
  switch (config.scheme) {
    case Scheme::github:
      return verify_github(config, headers, body);
    case Scheme::stripe:
      return verify_stripe(config, headers, body, now_unix_s);
    case Scheme::standard_webhooks:
      return verify_standard_webhooks(config, headers, body, now_unix_s);
    case Scheme::shopify:
      return verify_shopify(config, headers, body);
    case Scheme::slack:
      return verify_slack(config, headers, body, now_unix_s);
    case Scheme::hmac_sha256:
      return verify_generic(config, headers, body);
  }
  return signature_failed("unknown signature scheme");
}

std::optional<DefaultKey> default_key(Scheme scheme) {
  switch (scheme) {
    case Scheme::github:
      return DefaultKey{DefaultKey::header, "X-GitHub-Delivery"};
    case Scheme::stripe:
      return DefaultKey{DefaultKey::json, "/id"};
    case Scheme::standard_webhooks:
      return DefaultKey{DefaultKey::header, "webhook-id"};
    case Scheme::shopify:
      return DefaultKey{DefaultKey::header, "X-Shopify-Webhook-Id"};
    // X-Slack-Request-Timestamp is shared by unrelated requests; the event id is unique.
    case Scheme::slack:
      return DefaultKey{DefaultKey::json, "/event_id"};
    case Scheme::hmac_sha256:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<DefaultKey> default_key(Scheme scheme, const HeaderLookup& headers) {
  if (scheme == Scheme::standard_webhooks)
    return DefaultKey{DefaultKey::header, std::string(standard_webhooks_headers(headers).id)};
  return default_key(scheme);
}

StandardWebhooksHeaders standard_webhooks_headers(const HeaderLookup& headers) {
  const StandardWebhooksHeaders standard{k_webhook_id, k_webhook_timestamp, k_webhook_signature};
  const StandardWebhooksHeaders svix{k_svix_id, k_svix_timestamp, k_svix_signature};
  auto any_of = [&](const StandardWebhooksHeaders& names) {
    return headers(names.id) || headers(names.timestamp) || headers(names.signature);
  };
  if (any_of(standard)) return standard;
  return any_of(svix) ? svix : standard;
}

std::optional<std::string> secret_problem(Scheme scheme, std::string_view secret) {
  if (secret.empty()) return "the secret is empty";
  if (scheme != Scheme::standard_webhooks) return std::nullopt;
  std::string problem;
  if (!standard_webhooks_key(secret, problem))
    return "a standard-webhooks secret is whsec_ followed by base64, and this one " +
           std::string(problem == "secret is empty" ? "has nothing after whsec_" : "is not base64");
  return std::nullopt;
}

std::span<const std::string_view> signature_header_names() {
  static constexpr std::string_view k_names[] = {
      "X-Hub-Signature", k_github_signature,  k_stripe_signature, k_webhook_signature,
      k_svix_signature,  k_shopify_signature, k_slack_signature};
  return k_names;
}

}  // namespace idem::hooks
