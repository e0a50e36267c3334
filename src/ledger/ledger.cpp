#include "ledger/ledger.hpp"

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
#include "core/history.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "core/record_json.hpp"
#include "engine/attempt.hpp"
#include "proc/liveness.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"
#include "util/random.hpp"
#include "util/secret.hpp"

namespace idem::ledger {

// --- The calls -----------------------------------------------------------------------------------

namespace {

using json = nlohmann::json;

// Outputs are kept up to this, as a hook's are; a finish body may carry both streams in base64.
constexpr int64_t k_max_stored_output = 16 * 1024 * 1024;
constexpr uint64_t k_max_finish_body = 48u << 20;
constexpr uint64_t k_max_call_body = 64u << 10;

front::Answer json_answer(int status, const json& body, const char* outcome,
                          const std::string& key) {
  front::Answer a;
  a.status = status;
  a.content_type = "application/json";
  a.body = body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  a.outcome = outcome;
  a.key = key;
  return a;
}

front::Answer refusal(int status, const std::string& title, const std::string& detail,
                      const char* outcome, const std::string& key) {
  front::Answer a = front::problem(status, title, detail);
  a.outcome = outcome;
  a.key = key;
  return a;
}

front::Answer bad_request(const BadField& bad) {
  json body{
      {"type", "about:blank"}, {"title", "Bad request"}, {"status", 400}, {"detail", bad.detail}};
  if (!bad.field.empty()) body["field"] = bad.field;
  front::Answer a = json_answer(400, body, "bad_request", "");
  a.content_type = "application/problem+json";
  return a;
}

std::string shown(const std::string& key) { return "key '" + core::display_key(key) + "'"; }

// A record as `idem show --json` prints it, the owner's liveness looked up here.
// With `history`, its attempts too (GET; a replay's answer leaves them out, to stay one read).
// With `history`, its attempts as `idem show --json` lists them (every one kept).
json shown_record(const core::Record& r, int64_t now_ms,
                  const store::HistoryPage* history = nullptr) {
  const bool gone = core::owner_counts_gone(r, now_ms, proc::owner_gone);
  json j = core::record_detail_json(
      r, now_ms, gone, proc::process_group_alive(r.owner, r.process_group, core::attempt_mark(r)));
  if (history) {
    j["attempts"] = core::history_array(history->entries);
    j["earlier_attempts"] = history->earlier();
    j["attempts_not_kept"] = history->not_kept();
  }
  return j;
}

engine::AttemptRequest claim_request(const ClaimCall& call, const core::Owner& owner) {
  engine::AttemptRequest req(call.key);
  core::Fingerprinter f;
  f.add_field("kind", "ledger");
  f.add_field("fingerprint", call.fingerprint);
  req.claim.fingerprint = f.hex();
  req.claim.kind = "ledger";
  req.claim.owner = owner;
  req.claim.ttl_ms = call.ttl_ms;
  // The lease is kept with the claim: a heartbeat that names none renews for as long.
  req.claim.request =
      json{{"api", "ledger"}, {"fingerprint", call.fingerprint}, {"lease_ms", call.lease_ms}}.dump(
          -1, ' ', false, json::error_handler_t::replace);
  req.claim.policy = core::Policy{false, call.retry_abandoned};
  req.claim.lease_ms = call.lease_ms;
  return req;  // no wait: a held key is answered 409 at once, the client retries
}

front::Answer claim_answer(const ClaimCall& call, const engine::Claimed& c, int64_t now_ms) {
  switch (c.verdict) {
    case engine::ClaimVerdict::claimed:
      return json_answer(201,
                         {{"key", call.key.str()},
                          {"attempt", c.attempt},
                          {"attempt_token", c.attempt_token},
                          {"lease_ms", call.lease_ms},
                          {"lease_expires_at", util::iso8601_utc(c.lease_expires_ms)}},
                         "claimed", call.key.str());
    case engine::ClaimVerdict::replay:
      return json_answer(200, {{"record", shown_record(*c.existing, now_ms)}}, "replayed",
                         call.key.str());
    case engine::ClaimVerdict::conflict:
      return refusal(422, "Key reused with another fingerprint",
                     shown(call.key.str()) +
                         " was claimed before for something else (another "
                         "fingerprint, or another kind of attempt)",
                     "conflict", call.key.str());
    case engine::ClaimVerdict::running: {
      front::Answer a = refusal(409, "Key is running",
                                shown(call.key.str()) + " is held by attempt " +
                                    std::to_string(c.existing->attempt) + " now",
                                "running", call.key.str());
      a.headers.emplace_back("Retry-After", "1");
      return a;
    }
    case engine::ClaimVerdict::abandoned:
      return refusal(409, "Earlier attempt abandoned",
                     shown(call.key.str()) + ": attempt " + std::to_string(c.existing->attempt) +
                         " ended without an outcome (its lease ran out, or its owner died); claim "
                         "with \"retry_abandoned\": true to run it again",
                     "abandoned", call.key.str());
    case engine::ClaimVerdict::queued:
    case engine::ClaimVerdict::full: {
      // The key waits in a serial group of another front (`idem run --serial`): held, as a
      // running one is.
      front::Answer a =
          refusal(409, "Key is queued",
                  shown(call.key.str()) + " waits its turn in serial group '" +
                      core::display_key(c.existing ? c.existing->serial_group : "") + "'",
                  "queued", call.key.str());
      a.headers.emplace_back("Retry-After", "1");
      return a;
    }
    case engine::ClaimVerdict::superseded:
      return refusal(409, "Key was superseded",
                     shown(call.key.str()) + " was replaced in its serial group by " +
                         shown(c.existing->superseded_by) + " before it ran",
                     "superseded", call.key.str());
    case engine::ClaimVerdict::declined:
      break;
  }
  throw Error(k_exit_internal, "unexpected verdict " + std::string(engine::to_string(c.verdict)));
}

// A token that is not the key's current running attempt's: nothing was changed.
front::Answer stale(const std::string& key, const std::optional<core::Record>& r, int64_t now_ms) {
  std::string where = !r ? "there is no record"
                         : "it is at attempt " + std::to_string(r->attempt) + ", " +
                               core::effective_status(*r, now_ms, false);
  return refusal(409, "Attempt is not current",
                 "the attempt_token is not that of the running attempt of " + shown(key) + " (" +
                     where + "); nothing changed",
                 "stale", key);
}

bool holds(const std::optional<core::Record>& r, const std::string& token) {
  return r && r->status == core::Status::running && util::same_secret(r->attempt_token, token);
}

int64_t claimed_lease_ms(const core::Record& r) {
  json request = json::parse(r.request, nullptr, false);
  if (request.is_object() && request.contains("lease_ms") &&
      request["lease_ms"].is_number_integer())
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
std::variant<std::string, front::Answer> path_key(std::string_view encoded) {
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

engine::Front Ledger::front() const {
  engine::Front front = engine::make_front(clock_);
  front.spans = spans_;
  return front;
}

front::Answer Ledger::claim(std::string_view body) const {
  auto parsed = parse_claim(body);
  if (auto* bad = std::get_if<BadField>(&parsed)) return bad_request(*bad);
  const ClaimCall& call = std::get<ClaimCall>(parsed);
  try {
    auto store = stores_->lease();
    engine::Engine engine(*store, front());
    engine::AttemptRequest req = claim_request(call, owner_);
    const engine::Claimed claimed = engine.claim(req);
    return claim_answer(call, claimed, clock_.now_ms());
  } catch (const std::exception& e) {
    return front::store_failure(e, call.key.str());
  }
}

front::Answer Ledger::heartbeat(std::string_view body) const {
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
    return front::store_failure(e, call.key);
  }
}

front::Answer Ledger::finish(std::string_view body) const {
  auto parsed = parse_finish(body);
  if (auto* bad = std::get_if<BadField>(&parsed)) return bad_request(*bad);
  const FinishCall& call = std::get<FinishCall>(parsed);
  try {
    auto store = stores_->lease();
    engine::Engine engine(*store, front());
    const int64_t now = clock_.now_ms();
    auto record = engine.current(call.key);
    if (!holds(record, call.attempt_token)) return stale(call.key, record, now);
    // Conditioned on the attempt's number, its being running and its lease (Store::finish): an
    // attempt that another claim took over meanwhile is not overwritten.
    if (!engine.finish(call.key, record->attempt, outcome_of(call, now)))
      return stale(call.key, engine.current(call.key), now);
    return json_answer(
        200,
        {{"key", call.key}, {"attempt", record->attempt}, {"status", core::to_string(call.status)}},
        "finished", call.key);
  } catch (const std::exception& e) {
    return front::store_failure(e, call.key);
  }
}

front::Answer Ledger::get(std::string_view encoded_key) const { return found(encoded_key, false); }

front::Answer Ledger::attempts(std::string_view encoded_key) const {
  return found(encoded_key, true);
}

front::Answer Ledger::found(std::string_view encoded_key, bool history_only) const {
  auto key = path_key(encoded_key);
  if (auto* bad = std::get_if<front::Answer>(&key)) return std::move(*bad);
  const std::string& k = std::get<std::string>(key);
  try {
    auto store = stores_->lease();
    auto record = store->get(k);
    if (!record) return refusal(404, "No such record", "no record for " + shown(k), "not_found", k);
    const store::HistoryPage history = store->history_page(k, store::HistoryQuery{});
    return json_answer(200,
                       history_only ? core::history_document(*record, history.entries)
                                    : shown_record(*record, clock_.now_ms(), &history),
                       "found", k);
  } catch (const std::exception& e) {
    return front::store_failure(e, k);
  }
}

front::Answer Ledger::remove(std::string_view encoded_key, bool force) const {
  auto key = path_key(encoded_key);
  if (auto* bad = std::get_if<front::Answer>(&key)) return std::move(*bad);
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
        front::Answer a;
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
    return front::store_failure(e, k);
  }
}

// --- The route -----------------------------------------------------------------------------------

namespace {

constexpr std::string_view k_records_prefix = "/v1/records/";
// GET /v1/records/{key}/attempts: a key's own '/' is percent-encoded (%2F), so a raw one
// before this suffix ends the key.
constexpr std::string_view k_attempts_suffix = "/attempts";

// A front's answer, counted under the ledger's family.
net::Response to_ledger_response(front::Answer a) {
  net::Response r = front::to_response(std::move(a));
  r.log_fields.emplace_back("family", "ledger");
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
    if (pair == "force=1" || pair == "force=true")
      force = true;
    else if (pair == "force=0" || pair == "force=false")
      force = false;
    else if (!pair.empty())
      return std::nullopt;
  }
  return force;
}

class LedgerRoute final : public front::Route {
 public:
  LedgerRoute(std::shared_ptr<const Ledger> ledger, std::optional<std::string> token)
      : ledger_(std::move(ledger)), token_(std::move(token)) {}

  bool matches(std::string_view path) const override { return is_ledger_path(path); }

  net::Admission admit(const net::RequestHead& head) const override {
    const bool records = head.path.rfind(k_records_prefix, 0) == 0;
    const bool allowed =
        records ? head.method == "GET" || head.method == "HEAD" || head.method == "DELETE"
                : head.method == "POST";
    if (!allowed) {
      net::Response r = to_ledger_response(refusal(405, "Method not allowed",
                                                   head.method + " is not allowed on " + head.path,
                                                   "bad_request", ""));
      r.headers.emplace_back("Allow", records ? "GET, HEAD, DELETE" : "POST");
      return net::Admission{std::move(r), 0};
    }
    if (token_ && !authorized(head)) {
      net::Response r = to_ledger_response(refusal(
          401, "Unauthorized",
          "the ledger API needs the header \"Authorization: Bearer TOKEN\" with the token of "
          "the daemon's token file",
          "unauthorized", ""));
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return net::Admission{std::move(r), 0};
    }
    const uint64_t limit = head.path == "/v1/finish" ? k_max_finish_body : k_max_call_body;
    if (!head.chunked && head.content_length > limit)
      return net::Admission{to_ledger_response(refusal(
                                413, "Body too large",
                                "the body is " + std::to_string(head.content_length) + " bytes; " +
                                    head.path + " accepts at most " + std::to_string(limit),
                                "bad_request", "")),
                            0};
    return net::Admission{std::nullopt, limit};
  }

  net::Response handle(net::Request& req) const override {
    const std::string& path = req.head.path;
    if (path == "/v1/claim") return to_ledger_response(ledger_->claim(req.body));
    if (path == "/v1/heartbeat") return to_ledger_response(ledger_->heartbeat(req.body));
    if (path == "/v1/finish") return to_ledger_response(ledger_->finish(req.body));
    std::string_view key = std::string_view(path).substr(k_records_prefix.size());
    if (req.head.method != "DELETE") {
      if (key.ends_with(k_attempts_suffix))
        return to_ledger_response(
            ledger_->attempts(key.substr(0, key.size() - k_attempts_suffix.size())));
      return to_ledger_response(ledger_->get(key));
    }
    auto force = force_of(req.head.target);
    if (!force) return to_ledger_response(bad_request({"force", "use ?force=1 or no query"}));
    return to_ledger_response(ledger_->remove(key, *force));
  }

 private:
  bool authorized(const net::RequestHead& head) const {
    auto value = head.headers.get("Authorization");
    if (!value || head.headers.count("Authorization") != 1) return false;
    auto token = bearer_token(*value);
    return token && util::same_secret(*token, *token_);
  }

  const std::shared_ptr<const Ledger> ledger_;
  const std::optional<std::string> token_;
};

}  // namespace

std::shared_ptr<const front::Route> ledger_route(std::shared_ptr<const Ledger> ledger,
                                                 std::optional<std::string> token) {
  return std::make_shared<LedgerRoute>(std::move(ledger), std::move(token));
}

bool is_ledger_path(std::string_view path) {
  return path == "/v1/claim" || path == "/v1/heartbeat" || path == "/v1/finish" ||
         path.rfind(k_records_prefix, 0) == 0;
}

// --- The token file ------------------------------------------------------------------------------

namespace {

[[noreturn]] void refuse_token_file(const std::string& what, const std::string& path,
                                    const std::string& why) {
  throw StoreError(what + " " + path + " " + why);
}

// Creates the missing folders of `path`'s parent, 0700 each.
void make_parent_folders(const std::string& what, const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string folder = path.substr(0, slash);
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
      refuse_token_file(what, path, "cannot be created: " + folder + ": " + std::strerror(errno));
  }
}

// A new token, written whole before the file is given its name: a daemon starting at the same
// moment reads either no file or a whole one.
void create_token_file(const std::string& what, const std::string& path) {
  const std::string tmp = path + ".tmp." + util::random_hex(8);
  util::Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid())
    refuse_token_file(what, path, std::string("cannot be created: ") + std::strerror(errno));
  ::fchmod(fd.get(), 0600);
  const std::string text = util::random_hex(32) + "\n";
  const bool written = util::write_all(fd.get(), text) && ::fsync(fd.get()) == 0;
  fd.reset();
  // link() fails when a token file appeared meanwhile: the first one stays.
  if (!written || (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST)) {
    const int err = errno;
    ::unlink(tmp.c_str());
    refuse_token_file(what, path, std::string("cannot be written: ") + std::strerror(err));
  }
  ::unlink(tmp.c_str());
}

}  // namespace

std::string token_path_beside(const store::StoreLocation& where, const std::string& suffix) {
  return (where.scheme == "sqlite" ? where.target : store::default_db_path()) + suffix;
}

std::string ledger_token_path(const store::StoreLocation& where) {
  return token_path_beside(where, ".token");
}

std::string load_ledger_token(const std::string& path) {
  return load_token_file(path, "ledger token file");
}

std::string load_token_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT)
      refuse_token_file(what, path, std::string("cannot be read: ") + std::strerror(errno));
    make_parent_folders(what, path);
    create_token_file(what, path);
  }
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid())
    refuse_token_file(what, path,
                      errno == ELOOP ? "is a symlink; refusing to follow it"
                                     : std::string("cannot be read: ") + std::strerror(errno));
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    refuse_token_file(what, path, "is not a file");
  if (st.st_uid != ::geteuid())
    refuse_token_file(what, path,
                      "is owned by uid " + std::to_string(st.st_uid) + ", not by this user");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    refuse_token_file(what, path,
                      std::string("is open to other users (mode ") + mode + "); chmod 600 it");
  }
  std::string text;
  char buf[256];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text.size() > 4096) refuse_token_file(what, path, "cannot be read");
    text.append(buf, size_t(n));
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) refuse_token_file(what, path, "is empty");
  for (char c : text)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
      refuse_token_file(what, path, "holds a space or a control character");
  return text;
}

}  // namespace idem::ledger
