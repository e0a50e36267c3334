#include "ledger/rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "core/duration.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "net/message.hpp"
#include "util/hex.hpp"

namespace idem::ledger {

namespace {

using json = nlohmann::json;

// --- Request bodies ------------------------------------------------------------------------------

// Reads the members of one call's body, each checked once; the first problem found is kept.
class Fields {
 public:
  Fields(std::string_view body, std::initializer_list<const char*> known) {
    // nlohmann::json keeps the last of two members of one name where another parser may keep
    // the first: a body that names a member twice says two things, so it is refused.
    std::vector<std::set<std::string>> names;  // of each object being read, innermost last
    std::optional<std::string> twice;
    doc_ = json::parse(
        body,
        [&](int, json::parse_event_t event, json& parsed) {
          if (event == json::parse_event_t::object_start) names.emplace_back();
          if (event == json::parse_event_t::object_end) names.pop_back();
          if (event == json::parse_event_t::key &&
              !names.back().insert(parsed.get<std::string>()).second && !twice)
            twice = parsed.get<std::string>();
          return true;
        },
        false);
    if (doc_.is_discarded()) {
      bad_ = BadField{"", "the body is not JSON"};
      return;
    }
    if (twice) {
      bad_ = BadField{*twice, "member '" + *twice + "' is given twice"};
      return;
    }
    if (!doc_.is_object()) {
      bad_ = BadField{"", "the body must be a JSON object"};
      return;
    }
    for (const auto& item : doc_.items()) {
      const std::string& name = item.key();  // a structured binding cannot be captured (clang 14)
      if (std::find_if(known.begin(), known.end(), [&](const char* k) { return name == k; }) ==
          known.end()) {
        refuse(name, "unknown member '" + name + "'");
        return;
      }
    }
  }

  const std::optional<BadField>& bad() const { return bad_; }
  bool has(const char* name) const { return !bad_ && doc_.contains(name); }

  std::string string(const char* name, bool required) {
    if (bad_) return {};
    if (!doc_.contains(name)) {
      if (required) refuse(name, std::string("'") + name + "' is missing");
      return {};
    }
    const json& v = doc_[name];
    if (!v.is_string()) refuse(name, std::string("'") + name + "' must be a string");
    return v.is_string() ? v.get<std::string>() : std::string();
  }

  // The key, as the ledger takes keys; nullopt once the body is refused.
  std::optional<core::Key> usable_key() {
    std::string text = string("key", true);
    if (bad_) return std::nullopt;
    std::string why;
    std::optional<core::Key> key = ledger_key(text, why);
    if (!key) refuse("key", "bad 'key': " + why);
    return key;
  }

  // The key of a call about an attempt claimed already (heartbeat, finish): checked the same.
  std::string key() {
    std::optional<core::Key> key = usable_key();
    return key ? key->str() : std::string();
  }

  // Never empty: a record from before attempt tokens has an empty one, which nothing may match.
  std::string token() {
    std::string token = string("attempt_token", true);
    if (!bad_ && token.empty()) refuse("attempt_token", "'attempt_token' is empty");
    return token;
  }

  // contract §1's forms ("90s"), or a number of seconds.
  std::optional<int64_t> duration(const char* name) {
    if (!has(name)) return std::nullopt;
    const json& v = doc_[name];
    std::optional<int64_t> ms;
    if (v.is_string()) ms = core::parse_duration_ms(v.get<std::string>());
    if (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0 &&
        v.get<double>() <= 100.0 * 365 * 86400)
      ms = int64_t(std::llround(v.get<double>() * 1000));
    if (!ms)
      refuse(name, std::string("bad '") + name + "': use a duration such as \"90s\", \"15m\", " +
                       "\"24h\" or a number of seconds");
    return ms;
  }

  std::optional<int64_t> lease() {
    auto ms = duration("lease");
    if (ms && *ms < k_ledger_min_lease_ms) refuse("lease", "'lease' must be at least 1s");
    return ms;
  }

  std::optional<int64_t> integer(const char* name, int64_t low, int64_t high) {
    if (!has(name)) return std::nullopt;
    const json& v = doc_[name];
    if (!v.is_number_integer() || v.get<int64_t>() < low || v.get<int64_t>() > high) {
      refuse(name, std::string("'") + name + "' must be an integer from " + std::to_string(low) +
                       " to " + std::to_string(high));
      return std::nullopt;
    }
    return v.get<int64_t>();
  }

  bool boolean(const char* name) {
    if (!has(name)) return false;
    if (!doc_[name].is_boolean()) refuse(name, std::string("'") + name + "' must be true or false");
    return doc_[name].is_boolean() && doc_[name].get<bool>();
  }

  std::string base64(const char* name) {
    std::string text = string(name, false);
    if (bad_ || text.empty()) return {};
    auto bytes = util::from_base64(text);
    if (!bytes) refuse(name, std::string("'") + name + "' is not valid base64");
    return bytes.value_or(std::string());
  }

  void refuse(const std::string& field, std::string detail) {
    if (!bad_) bad_ = BadField{field, std::move(detail)};
  }

 private:
  json doc_;
  std::optional<BadField> bad_;
};

template <class Call>
Parsed<Call> done(const Fields& fields, Call call) {
  if (fields.bad()) return *fields.bad();
  return call;
}

}  // namespace

std::optional<core::Key> ledger_key(const std::string& text, std::string& why) {
  std::optional<core::Key> key = core::Key::parse(text, why);
  if (!key) return std::nullopt;
  auto front = core::served_front_of(text);
  if (!front) return key;
  why = *front == "proxy" ? "keys that start with 'proxy#' are the proxy's records"
                          : "keys that start with '/' and hold '#' are the hooks' records";
  return std::nullopt;
}

std::optional<std::string> ledger_key_problem(const std::string& key) {
  std::string why;
  if (ledger_key(key, why)) return std::nullopt;
  return why;
}

Parsed<ClaimCall> parse_claim(std::string_view body) {
  Fields f(body, {"key", "fingerprint", "ttl", "lease", "retry_abandoned"});
  std::optional<core::Key> key = f.usable_key();
  std::string fingerprint = f.string("fingerprint", false);
  const std::optional<int64_t> ttl = f.duration("ttl");
  const std::optional<int64_t> lease = f.lease();
  const bool retry_abandoned = f.boolean("retry_abandoned");
  if (f.bad() || !key) return f.bad().value_or(BadField{"key", "bad 'key'"});
  ClaimCall call{std::move(*key), std::move(fingerprint)};
  if (ttl) call.ttl_ms = *ttl;
  if (lease) call.lease_ms = *lease;
  call.retry_abandoned = retry_abandoned;
  return call;
}

Parsed<HeartbeatCall> parse_heartbeat(std::string_view body) {
  Fields f(body, {"key", "attempt_token", "lease"});
  HeartbeatCall call;
  call.key = f.key();
  call.attempt_token = f.token();
  call.lease_ms = f.lease();
  return done(f, std::move(call));
}

Parsed<FinishCall> parse_finish(std::string_view body) {
  Fields f(body, {"key", "attempt_token", "status", "exit_code", "http_status", "stdout_b64",
                  "stderr_b64"});
  FinishCall call;
  call.key = f.key();
  call.attempt_token = f.token();
  const std::string status = f.string("status", true);
  if (!f.bad() && status != "succeeded" && status != "failed")
    f.refuse("status", "'status' must be \"succeeded\" or \"failed\"");
  call.status = status == "failed" ? core::Status::failed : core::Status::succeeded;
  auto exit_code = f.integer("exit_code", 0, 255);
  call.exit_code = int(exit_code.value_or(call.status == core::Status::failed ? 1 : 0));
  if (call.status == core::Status::succeeded && call.exit_code != 0)
    f.refuse("exit_code", "a succeeded outcome has exit code 0");
  if (auto http = f.integer("http_status", 100, 599)) call.http_status = int(*http);
  call.stdout_bytes = f.base64("stdout_b64");
  call.stderr_bytes = f.base64("stderr_b64");
  return done(f, std::move(call));
}

std::optional<std::string> percent_decode(std::string_view text) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = hex(text[i + 1]), low = hex(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out.push_back(char((high << 4) | low));
    i += 2;
  }
  return out;
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() <= scheme.size() ||
      !net::equals_ignore_case(authorization.substr(0, scheme.size()), scheme))
    return std::nullopt;
  std::string_view token = authorization.substr(scheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return token;
}

}  // namespace idem::ledger
