// Signature headers (hooks/signature.hpp): whatever a sender puts in the signature headers and the
// body, verify() answers without crashing or throwing, never accepts a delivery for a scheme
// whose secret did not sign it, and explains every refusal in one line without the secret.
//
// Input layout: first byte picks the scheme; then the header value up to the first newline, a
// second header value (timestamp or id) up to the next newline, and the rest is the body.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "hooks/signature.hpp"

using idem::hooks::Scheme;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr Scheme k_schemes[] = {Scheme::github,  Scheme::stripe, Scheme::standard_webhooks,
                                         Scheme::shopify, Scheme::slack,  Scheme::hmac_sha256};
  const Scheme scheme = k_schemes[data[0] % 6];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  auto take_line = [&rest] {
    auto nl = rest.find('\n');
    std::string line(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    return line;
  };
  const std::string first = take_line();
  const std::string second = take_line();
  const std::string body(rest);

  idem::hooks::SignatureConfig config;
  config.scheme = scheme;
  // A secret the fuzzer cannot know: it must never see a signature accepted.
  config.secret = scheme == Scheme::standard_webhooks ? "whsec_c2VjcmV0LW5vYm9keS1rbm93cw=="
                                                      : "secret-nobody-knows";
  config.header = "X-Signature";
  config.encoding = (data[0] / 6) % 2 == 0 ? idem::hooks::SignatureConfig::Encoding::hex
                                           : idem::hooks::SignatureConfig::Encoding::base64;
  config.prefix = (data[0] / 12) % 2 == 0 ? "" : "sha256=";

  // Every header a scheme may read gets one of the two fuzzed values.
  auto headers = [&](std::string_view name) -> std::optional<std::string> {
    if (name == "webhook-id" || name == "X-Slack-Request-Timestamp" || name == "webhook-timestamp")
      return second;
    return first;
  };
  idem::hooks::SignatureCheck v = idem::hooks::verify(config, headers, body, 1'700'000'000);
  FUZZ_CHECK(!v.ok);
  FUZZ_CHECK(!v.problem.empty());
  FUZZ_CHECK(v.problem.find('\n') == std::string::npos);
  FUZZ_CHECK(v.problem.find("secret-nobody-knows") == std::string::npos);
  return 0;
}
