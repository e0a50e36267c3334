// The `idem serve` config (serve/config.hpp): whatever the file holds, parse_config either returns
// a config that keeps every documented invariant or throws ConfigError with a one-line, UTF-8
// message that starts with the file name and never shows a secret. Nothing else may escape it.
// Each input is parsed twice with different secrets in the environment: the outcome must not
// change, which is how a secret leaking into a message would show.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/key.hpp"
#include "fuzz_check.hpp"
#include "serve/config.hpp"
#include "utf8_oracle.hpp"
#include "util/hex.hpp"

namespace {

constexpr std::string_view k_file = "fuzz.json";

// Variables named UNSET* are not set, EMPTY* are empty, WHSEC* hold a standard-webhooks secret
// ("whsec_" + base64 of `salt` + the name), any other holds `salt` + its name (which is not
// base64, so standard-webhooks refuses it).
std::optional<std::string> fake_secret(const std::string& salt, const std::string& name) {
  if (name.starts_with("UNSET")) return std::nullopt;
  if (name.starts_with("EMPTY")) return std::string();
  if (name.starts_with("WHSEC")) return "whsec_" + idem::util::to_base64(salt + name);
  return salt + name;
}

struct Outcome {
  std::optional<idem::serve::Config> config;
  std::string message;  // when config is nullopt
};

Outcome parse(const std::string& text, const std::string& salt) {
  try {
    return {
        idem::serve::parse_config(std::string(k_file), text,
                                  [&](const std::string& name) { return fake_secret(salt, name); }),
        {}};
  } catch (const idem::front::ConfigError& e) {
    return {std::nullopt, e.what()};
  } catch (...) {
    FUZZ_CHECK(!"parse_config threw something other than ConfigError");
  }
  return {};
}

void check_message(std::string_view message, std::string_view input) {
  FUZZ_CHECK(message.starts_with(std::string(k_file) + ": "));
  FUZZ_CHECK(message.size() > k_file.size() + 2);
  for (char c : message) FUZZ_CHECK(uint8_t(c) >= 0x20 && uint8_t(c) != 0x7f);
  FUZZ_CHECK(well_formed_utf8(message));
  FUZZ_CHECK(message.find("[json.exception") == std::string_view::npos ||
             input.find("[json.exception") != std::string_view::npos);
}

bool upper_token(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < 'A' || c > 'Z') return false;
  return true;
}

void check_hook(const idem::hooks::Hook& hook, const std::string& salt,
                const std::set<std::string>& secret_envs) {
  FUZZ_CHECK(hook.path.starts_with('/'));
  FUZZ_CHECK(hook.path.size() <= idem::core::k_max_hook_path_bytes);
  // Every secret of the config is kept from every handler, once each.
  FUZZ_CHECK(std::set<std::string>(hook.withheld_env.begin(), hook.withheld_env.end()) ==
             secret_envs);
  FUZZ_CHECK(hook.withheld_env.size() == secret_envs.size());
  for (char c : hook.path)
    FUZZ_CHECK(uint8_t(c) > 0x20 && uint8_t(c) < 0x7f && c != '?' && c != '#');
  FUZZ_CHECK(!hook.command.empty() && !hook.command[0].empty());
  for (const auto& arg : hook.command) FUZZ_CHECK(arg.find('\0') == std::string::npos);

  FUZZ_CHECK(hook.signature.has_value() == !hook.secret_env.empty());
  if (hook.signature) {
    const auto& sig = *hook.signature;
    FUZZ_CHECK(sig.secret == fake_secret(salt, hook.secret_env));
    FUZZ_CHECK(!sig.secret.empty());
    FUZZ_CHECK(sig.tolerance_s >= 1);
    FUZZ_CHECK(!idem::hooks::secret_problem(sig.scheme, sig.secret).has_value());
    if (sig.scheme == idem::hooks::Scheme::hmac_sha256)
      FUZZ_CHECK(!sig.header.empty());
    else
      FUZZ_CHECK(sig.header.empty() && sig.prefix.empty() &&
                 sig.encoding == idem::hooks::SignatureConfig::Encoding::hex);
  }
  if (hook.key) {
    FUZZ_CHECK(!hook.key->name.empty() || hook.key->kind == idem::hooks::KeySource::json);
    if (hook.key->kind == idem::hooks::KeySource::json) {
      try {
        nlohmann::json::json_pointer pointer(hook.key->name);
      } catch (...) {
        FUZZ_CHECK(!"an accepted key pointer does not parse");
      }
    }
  }
  FUZZ_CHECK(hook.ttl_ms > 0);
  FUZZ_CHECK(hook.timeout_ms > 0);
  FUZZ_CHECK(hook.max_body > 0 && hook.max_body <= (int64_t(1) << 30));
  FUZZ_CHECK(hook.max_concurrency >= 1 && hook.max_concurrency <= 1024);
  FUZZ_CHECK(hook.max_queue >= 0 && hook.max_queue <= 100000);
  FUZZ_CHECK(!hook.methods.empty());
  std::set<std::string> methods;
  for (const auto& method : hook.methods) {
    FUZZ_CHECK(upper_token(method));
    FUZZ_CHECK(methods.insert(method).second);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  Outcome first = parse(text, "alpha:");
  Outcome second = parse(text, "omega:");
  FUZZ_CHECK(first.config.has_value() == second.config.has_value());
  if (!first.config) {
    check_message(first.message, text);
    FUZZ_CHECK(first.message == second.message);
    return 0;
  }
  FUZZ_CHECK(!first.config->hooks.empty());
  FUZZ_CHECK(first.config->hooks.size() == second.config->hooks.size());
  std::set<std::string> paths;
  std::set<std::string> secret_envs;
  for (const auto& hook : first.config->hooks)
    if (!hook.secret_env.empty()) secret_envs.insert(hook.secret_env);
  for (size_t i = 0; i < first.config->hooks.size(); ++i) {
    check_hook(first.config->hooks[i], "alpha:", secret_envs);
    check_hook(second.config->hooks[i], "omega:", secret_envs);
    FUZZ_CHECK(paths.insert(first.config->hooks[i].path).second);
  }
  return 0;
}
