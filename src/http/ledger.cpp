#include "http/ledger.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "core/duration.hpp"
#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "core/record_json.hpp"
#include "engine/attempt.hpp"
#include "proc/liveness.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"
#include "util/random.hpp"

namespace idem::http {

namespace {

using json = nlohmann::json;

// --- Request bodies ------------------------------------------------------------------------------

// Why a key is not one the ledger takes: an invalid key (SPEC §1), or one that names a record
// of another front of the daemon (core::served_front_of), which a ledger client could otherwise
// read, finish or remove.
std::optional<std::string> ledger_key_problem(const std::string& key) {
  if (auto why = core::key_problem(key)) return why;
  auto front = core::served_front_of(key);
  if (!front) return std::nullopt;
  return *front == "proxy"
             ? std::string("keys that start with 'proxy#' are the proxy's records")
             : std::string("keys that start with '/' and hold '#' are the hooks' records");
}

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

  std::string key() {
    std::string key = string("key", true);
    if (bad_) return key;
    if (auto why = ledger_key_problem(key)) refuse("key", "bad 'key': " + *why);
    return key;
  }

  // Never empty: a record from before attempt tokens has an empty one, which nothing may match.
  std::string token() {
    std::string token = string("attempt_token", true);
    if (!bad_ && token.empty()) refuse("attempt_token", "'attempt_token' is empty");
    return token;
  }

  // SPEC §1's forms ("90s"), or a number of seconds.
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

Parsed<ClaimCall> parse_claim(std::string_view body) {
  Fields f(body, {"key", "fingerprint", "ttl", "lease", "retry_abandoned"});
  ClaimCall call;
  call.key = f.key();
  call.fingerprint = f.string("fingerprint", false);
  if (auto ttl = f.duration("ttl")) call.ttl_ms = *ttl;
  if (auto lease = f.lease()) call.lease_ms = *lease;
  call.retry_abandoned = f.boolean("retry_abandoned");
  return done(f, std::move(call));
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
      !equals_ignore_case(authorization.substr(0, scheme.size()), scheme))
    return std::nullopt;
  std::string_view token = authorization.substr(scheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return token;
}

bool same_secret(std::string_view a, std::string_view b) {
  // Every byte of the longer is looked at whatever the contents; lengths may differ in the open.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

// --- The calls -----------------------------------------------------------------------------------

namespace {

// Outputs are kept up to this, as a hook's are; a finish body may carry both streams in base64.
constexpr int64_t k_max_stored_output = 16 * 1024 * 1024;
constexpr uint64_t k_max_finish_body = 48u << 20;
constexpr uint64_t k_max_call_body = 64u << 10;

Answer json_answer(int status, const json& body, const char* outcome, const std::string& key) {
  Answer a;
  a.status = status;
  a.content_type = "application/json";
  a.body = body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  a.outcome = outcome;
  a.key = key;
  return a;
}

Answer refusal(int status, const std::string& title, const std::string& detail,
               const char* outcome, const std::string& key) {
  Answer a = problem(status, title, detail);
  a.outcome = outcome;
  a.key = key;
  return a;
}

Answer bad_request(const BadField& bad) {
  json body{{"type", "about:blank"}, {"title", "Bad request"}, {"status", 400},
            {"detail", bad.detail}};
  if (!bad.field.empty()) body["field"] = bad.field;
  Answer a = json_answer(400, body, "bad_request", "");
  a.content_type = "application/problem+json";
  return a;
}

std::string shown(const std::string& key) { return "key '" + core::display_key(key) + "'"; }

// A record as `idem show --json` prints it, the owner's liveness looked up here.
json shown_record(const core::Record& r, int64_t now_ms) {
  const bool gone = core::owner_counts_gone(r, now_ms, proc::owner_gone);
  return core::record_detail_json(r, now_ms, gone,
                                  proc::process_group_alive(r.owner, r.process_group));
}

engine::AttemptRequest claim_request(const ClaimCall& call, const core::Owner& owner) {
  engine::AttemptRequest req;
  core::Fingerprinter f;
  f.add_field("kind", "ledger");
  f.add_field("fingerprint", call.fingerprint);
  req.claim.key = call.key;
  req.claim.fingerprint = f.hex();
  req.claim.kind = "ledger";
  req.claim.owner = owner;
  req.claim.ttl_ms = call.ttl_ms;
  // The lease is kept with the claim: a heartbeat that names none renews for as long.
  req.claim.request = json{{"api", "ledger"}, {"fingerprint", call.fingerprint},
                           {"lease_ms", call.lease_ms}}
                          .dump(-1, ' ', false, json::error_handler_t::replace);
  req.claim.policy = core::Policy{false, call.retry_abandoned};
  req.claim.lease_ms = call.lease_ms;
  return req;  // no wait: a held key is answered 409 at once, the client retries
}

Answer claim_answer(const ClaimCall& call, const engine::Claimed& c, int64_t now_ms) {
  switch (c.verdict) {
    case engine::Verdict::claimed:
      return json_answer(201,
                         {{"key", call.key},
                          {"attempt", c.attempt},
                          {"attempt_token", c.attempt_token},
                          {"lease_ms", call.lease_ms},
                          {"lease_expires_at", util::iso8601_utc(c.lease_expires_ms)}},
                         "claimed", call.key);
    case engine::Verdict::replay:
      return json_answer(200, {{"record", shown_record(*c.existing, now_ms)}}, "replayed",
                         call.key);
    case engine::Verdict::conflict:
      return refusal(422, "Key reused with another fingerprint",
                     shown(call.key) + " was claimed before for something else (another "
                                       "fingerprint, or another kind of attempt)",
                     "conflict", call.key);
    case engine::Verdict::running: {
      Answer a = refusal(409, "Key is running",
                         shown(call.key) + " is held by attempt " +
                             std::to_string(c.existing->attempt) + " now",
                         "running", call.key);
      a.headers.emplace_back("Retry-After", "1");
      return a;
    }
    case engine::Verdict::abandoned:
      return refusal(409, "Earlier attempt abandoned",
                     shown(call.key) + ": attempt " + std::to_string(c.existing->attempt) +
                         " ended without an outcome (its lease ran out, or its owner died); claim "
                         "with \"retry_abandoned\": true to run it again",
                     "abandoned", call.key);
    case engine::Verdict::declined:
      break;
  }
  throw Error(k_exit_internal, "unexpected verdict " + std::string(engine::to_string(c.verdict)));
}

// A token that is not the key's current running attempt's: nothing was changed.
Answer stale(const std::string& key, const std::optional<core::Record>& r, int64_t now_ms) {
  std::string where = !r ? "there is no record" : "it is at attempt " + std::to_string(r->attempt) +
                                                      ", " + core::effective_status(*r, now_ms, false);
  return refusal(409, "Attempt is not current",
                 "the attempt_token is not that of the running attempt of " + shown(key) + " (" +
                     where + "); nothing changed",
                 "stale", key);
}

bool holds(const std::optional<core::Record>& r, const std::string& token) {
  return r && r->status == core::Status::running && same_secret(r->attempt_token, token);
}

int64_t claimed_lease_ms(const core::Record& r) {
  json request = json::parse(r.request, nullptr, false);
  if (request.is_object() && request.contains("lease_ms") && request["lease_ms"].is_number_integer())
    return std::max<int64_t>(request["lease_ms"].get<int64_t>(), k_ledger_min_lease_ms);
  return k_ledger_default_lease_ms;
}

core::Outcome outcome_of(const FinishCall& call, int64_t now_ms) {
  core::Outcome o;
  o.status = call.status;
  o.exit_code = call.exit_code;
  core::CapturedOutput output(k_max_stored_output);
  if (!call.stdout_bytes.empty()) output.append(core::Stream::out, call.stdout_bytes);
  if (!call.stderr_bytes.empty()) output.append(core::Stream::err, call.stderr_bytes);
  o.output_bytes = output.stored_bytes();
  o.output_truncated = output.truncated();
  o.output = output.take_encoded();
  if (call.http_status) o.response = core::Response{*call.http_status, {}};
  o.finished_ms = now_ms;
  return o;
}

// The key of a /v1/records/ path, or the 400 for it.
std::variant<std::string, Answer> path_key(std::string_view encoded) {
  auto key = percent_decode(encoded);
  if (!key) return bad_request({"key", "the key in the path is not validly percent-encoded"});
  if (auto why = ledger_key_problem(*key)) return bad_request({"key", "bad key: " + *why});
  return *key;
}

}  // namespace

core::Owner Ledger::client_owner(const std::string& host) {
  core::Owner owner;
  owner.host = host;  // no boot id and pid 0: proc::owner_gone never says gone, the lease decides
  return owner;
}

Answer Ledger::claim(std::string_view body) const {
  auto parsed = parse_claim(body);
  if (auto* bad = std::get_if<BadField>(&parsed)) return bad_request(*bad);
  const ClaimCall& call = std::get<ClaimCall>(parsed);
  try {
    auto store = stores_->lease();
    engine::Engine engine(*store, engine::make_front(clock_));
    engine::AttemptRequest req = claim_request(call, owner_);
    const engine::Claimed claimed = engine.claim(req);
    return claim_answer(call, claimed, clock_.now_ms());
  } catch (const std::exception& e) {
    return store_failure(e, call.key);
  }
}

Answer Ledger::heartbeat(std::string_view body) const {
  auto parsed = parse_heartbeat(body);
  if (auto* bad = std::get_if<BadField>(&parsed)) return bad_request(*bad);
  const HeartbeatCall& call = std::get<HeartbeatCall>(parsed);
  try {
    auto store = stores_->lease();
    const int64_t now = clock_.now_ms();
    auto record = store->get(call.key);
    if (!holds(record, call.attempt_token)) return stale(call.key, record, now);
    const int64_t lease_ms = call.lease_ms.value_or(claimed_lease_ms(*record));
    // Conditioned on the token and on the lease not having run out by now (Store::heartbeat).
    if (!store->heartbeat(call.key, call.attempt_token, lease_ms, now))
      return stale(call.key, store->get(call.key), now);
    return json_answer(200,
                       {{"key", call.key},
                        {"attempt", record->attempt},
                        {"lease_ms", lease_ms},
                        {"lease_expires_at", util::iso8601_utc(now + lease_ms)}},
                       "renewed", call.key);
  } catch (const std::exception& e) {
    return store_failure(e, call.key);
  }
}

Answer Ledger::finish(std::string_view body) const {
  auto parsed = parse_finish(body);
  if (auto* bad = std::get_if<BadField>(&parsed)) return bad_request(*bad);
  const FinishCall& call = std::get<FinishCall>(parsed);
  try {
    auto store = stores_->lease();
    engine::Engine engine(*store, engine::make_front(clock_));
    const int64_t now = clock_.now_ms();
    auto record = engine.current(call.key);
    if (!holds(record, call.attempt_token)) return stale(call.key, record, now);
    // Conditioned on the attempt's number, its being running and its lease (Store::finish): an
    // attempt that another claim took over meanwhile is not overwritten.
    if (!engine.finish(call.key, record->attempt, outcome_of(call, now)))
      return stale(call.key, engine.current(call.key), now);
    return json_answer(200,
                       {{"key", call.key},
                        {"attempt", record->attempt},
                        {"status", core::to_string(call.status)}},
                       "finished", call.key);
  } catch (const std::exception& e) {
    return store_failure(e, call.key);
  }
}

Answer Ledger::get(std::string_view encoded_key) const {
  auto key = path_key(encoded_key);
  if (auto* bad = std::get_if<Answer>(&key)) return std::move(*bad);
  const std::string& k = std::get<std::string>(key);
  try {
    auto record = stores_->lease()->get(k);
    if (!record) return refusal(404, "No such record", "no record for " + shown(k), "not_found", k);
    return json_answer(200, shown_record(*record, clock_.now_ms()), "found", k);
  } catch (const std::exception& e) {
    return store_failure(e, k);
  }
}

Answer Ledger::remove(std::string_view encoded_key, bool force) const {
  auto key = path_key(encoded_key);
  if (auto* bad = std::get_if<Answer>(&key)) return std::move(*bad);
  const std::string& k = std::get<std::string>(key);
  try {
    auto store = stores_->lease();
    auto record = store->get(k);
    if (!record) return refusal(404, "No such record", "no record for " + shown(k), "not_found", k);
    // A lease that ran out made the attempt abandoned: marked so (conditioned on its number, so
    // a newer attempt claimed meanwhile stays running), it is removed like any ended record.
    if (record->status == core::Status::running && core::lease_expired(*record, clock_.now_ms()))
      store->mark_abandoned(k, record->attempt);
    switch (store->remove(k, force, proc::owner_gone)) {
      case store::RemoveResult::removed: {
        Answer a;
        a.status = 204;
        a.outcome = "removed";
        a.key = k;
        return a;
      }
      case store::RemoveResult::not_found:
        return refusal(404, "No such record", "no record for " + shown(k), "not_found", k);
      case store::RemoveResult::running:
        break;
    }
    return refusal(409, "Key is running",
                   shown(k) + " is running; add ?force=1 to remove it anyway", "running", k);
  } catch (const std::exception& e) {
    return store_failure(e, k);
  }
}

// --- The route -----------------------------------------------------------------------------------

namespace {

constexpr std::string_view k_records_prefix = "/v1/records/";

Response to_ledger_response(Answer a) {
  Response r;
  r.status = a.status;
  r.content_type = std::move(a.content_type);
  r.body = std::move(a.body);
  r.headers = std::move(a.headers);
  r.log_fields.emplace_back("family", "ledger");
  if (!a.key.empty()) r.log_fields.emplace_back("key", a.key);
  if (!a.outcome.empty()) r.log_fields.emplace_back("outcome", a.outcome);
  if (!a.error.empty()) r.log_fields.emplace_back("error", a.error);
  return r;
}

// ?force=1 (or true) on a DELETE; nothing for a query that says something else.
std::optional<bool> force_of(std::string_view target) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return false;
  std::string_view query = target.substr(q + 1);
  bool force = false;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
    if (pair == "force=1" || pair == "force=true") force = true;
    else if (pair == "force=0" || pair == "force=false") force = false;
    else if (!pair.empty()) return std::nullopt;
  }
  return force;
}

class LedgerRoute final : public Route {
 public:
  LedgerRoute(std::shared_ptr<const Ledger> ledger, std::optional<std::string> token)
      : ledger_(std::move(ledger)), token_(std::move(token)) {}

  bool matches(std::string_view path) const override { return is_ledger_path(path); }

  Admission admit(const RequestHead& head) const override {
    const bool records = head.path.rfind(k_records_prefix, 0) == 0;
    const bool allowed = records ? head.method == "GET" || head.method == "HEAD" ||
                                       head.method == "DELETE"
                                 : head.method == "POST";
    if (!allowed) {
      Response r = to_ledger_response(refusal(
          405, "Method not allowed", head.method + " is not allowed on " + head.path,
          "bad_request", ""));
      r.headers.emplace_back("Allow", records ? "GET, HEAD, DELETE" : "POST");
      return Admission{std::move(r), 0};
    }
    if (token_ && !authorized(head)) {
      Response r = to_ledger_response(refusal(
          401, "Unauthorized",
          "the ledger API needs the header \"Authorization: Bearer TOKEN\" with the token of "
          "the daemon's token file",
          "unauthorized", ""));
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return Admission{std::move(r), 0};
    }
    const uint64_t limit = head.path == "/v1/finish" ? k_max_finish_body : k_max_call_body;
    if (!head.chunked && head.content_length > limit)
      return Admission{to_ledger_response(refusal(
                           413, "Body too large",
                           "the body is " + std::to_string(head.content_length) + " bytes; " +
                               head.path + " accepts at most " + std::to_string(limit),
                           "bad_request", "")),
                       0};
    return Admission{std::nullopt, limit};
  }

  Response handle(Request& req) const override {
    const std::string& path = req.head.path;
    if (path == "/v1/claim") return to_ledger_response(ledger_->claim(req.body));
    if (path == "/v1/heartbeat") return to_ledger_response(ledger_->heartbeat(req.body));
    if (path == "/v1/finish") return to_ledger_response(ledger_->finish(req.body));
    std::string_view key = std::string_view(path).substr(k_records_prefix.size());
    if (req.head.method != "DELETE") return to_ledger_response(ledger_->get(key));
    auto force = force_of(req.head.target);
    if (!force) return to_ledger_response(bad_request({"force", "use ?force=1 or no query"}));
    return to_ledger_response(ledger_->remove(key, *force));
  }

  const std::string& hook() const override { return no_hook_; }

 private:
  bool authorized(const RequestHead& head) const {
    auto value = head.headers.get("Authorization");
    if (!value || head.headers.count("Authorization") != 1) return false;
    auto token = bearer_token(*value);
    return token && same_secret(*token, *token_);
  }

  const std::shared_ptr<const Ledger> ledger_;
  const std::optional<std::string> token_;
  const std::string no_hook_;
};

}  // namespace

std::shared_ptr<const Route> ledger_route(std::shared_ptr<const Ledger> ledger,
                                          std::optional<std::string> token) {
  return std::make_shared<LedgerRoute>(std::move(ledger), std::move(token));
}

bool is_ledger_path(std::string_view path) {
  return path == "/v1/claim" || path == "/v1/heartbeat" || path == "/v1/finish" ||
         path.rfind(k_records_prefix, 0) == 0;
}

// --- The token file ------------------------------------------------------------------------------

namespace {

[[noreturn]] void refuse_token_file(const std::string& path, const std::string& why) {
  throw StoreError("ledger token file " + path + " " + why);
}

// Creates the missing folders of `path`'s parent, 0700 each.
void make_parent_folders(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string folder = path.substr(0, slash);
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
      refuse_token_file(path, "cannot be created: " + folder + ": " + std::strerror(errno));
  }
}

// A new token, written whole before the file is given its name: a daemon starting at the same
// moment reads either no file or a whole one.
void create_token_file(const std::string& path) {
  const std::string tmp = path + ".tmp." + util::random_hex(8);
  util::Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) refuse_token_file(path, std::string("cannot be created: ") + std::strerror(errno));
  ::fchmod(fd.get(), 0600);
  const std::string text = util::random_hex(32) + "\n";
  const bool written = util::write_all(fd.get(), text) && ::fsync(fd.get()) == 0;
  fd.reset();
  // link() fails when a token file appeared meanwhile: the first one stays.
  if (!written || (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST)) {
    const int err = errno;
    ::unlink(tmp.c_str());
    refuse_token_file(path, std::string("cannot be written: ") + std::strerror(err));
  }
  ::unlink(tmp.c_str());
}

}  // namespace

std::string ledger_token_path(const store::StoreLocation& where) {
  return (where.scheme == "sqlite" ? where.target : store::default_db_path()) + ".token";
}

std::string load_ledger_token(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) refuse_token_file(path, std::string("cannot be read: ") + std::strerror(errno));
    make_parent_folders(path);
    create_token_file(path);
  }
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid())
    refuse_token_file(path, errno == ELOOP ? "is a symlink; refusing to follow it"
                                           : std::string("cannot be read: ") + std::strerror(errno));
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) refuse_token_file(path, "is not a file");
  if (st.st_uid != ::geteuid())
    refuse_token_file(path, "is owned by uid " + std::to_string(st.st_uid) + ", not by this user");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    refuse_token_file(path, std::string("is open to other users (mode ") + mode +
                                "); chmod 600 it");
  }
  std::string text;
  char buf[256];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text.size() > 4096) refuse_token_file(path, "cannot be read");
    text.append(buf, size_t(n));
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) refuse_token_file(path, "is empty");
  for (char c : text)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
      refuse_token_file(path, "holds a space or a control character");
  return text;
}

}  // namespace idem::http
