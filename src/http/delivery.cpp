#include "http/delivery.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <map>
#include <variant>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/json_key.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "http/signature.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"

namespace idem::http {

namespace {

constexpr int64_t k_max_stored_answer = 16 * 1024 * 1024;
constexpr const char* k_retry_after_running = "5";
// On an answer (first or replayed) whose output went over k_max_stored_answer: the body is cut.
constexpr const char* k_truncated_header = "Idem-Output-Truncated";

// A delivery that carries no key; `refusal` is the 400 it gets under "no_key": "refuse".
struct NoKeyFound {
  Answer refusal;
};

NoKeyFound no_key_found(const std::string& detail) {
  return NoKeyFound{problem(400, "No idempotency key", detail)};
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One name or value of a form: '+' is a space, %XX the byte XX, any other '%' itself.
std::string form_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    int high = 0, low = 0;
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size() && (high = hex_value(text[i + 1])) >= 0 &&
               (low = hex_value(text[i + 2])) >= 0) {
      out.push_back(char((high << 4) | low));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The delivery's key; NoKeyFound when it carries none; or the 400 answer for a key that is there
// but cannot be used (refused whatever the hook's no_key says).
std::variant<std::string, NoKeyFound, Answer> find_key(const Hook& hook, const Delivery& d) {
  std::optional<KeySource> source = hook.key;
  if (!source && hook.signature) {
    auto lookup = [&](std::string_view name) { return d.header(name); };
    if (auto def = default_key(hook.signature->scheme, lookup))
      source = KeySource{def->kind == DefaultKey::header ? KeySource::header : KeySource::json,
                         def->name};
  }
  if (!source)
    return no_key_found("hook " + hook.path + " names no key source and its scheme has no default");
  std::string key;
  if (source->kind == KeySource::header) {
    auto value = d.header(source->name);
    if (!value || value->empty()) return no_key_found("header " + source->name + " is missing");
    key = *value;
  } else if (source->kind == KeySource::form) {
    std::vector<std::string> values = form_values(d.body, source->name);
    if (values.empty())
      return no_key_found("the form-encoded body has no field " + source->name);
    // Which of two would be the key is anyone's guess: refuse rather than pick.
    if (values.size() > 1)
      return problem(400, "Bad idempotency key",
                     "form field " + source->name + " appears " + std::to_string(values.size()) +
                         " times in the body");
    key = values[0];
    if (key.empty()) return no_key_found("form field " + source->name + " is empty");
  } else {
    nlohmann::json doc = nlohmann::json::parse(d.body, nullptr, false);
    if (doc.is_discarded())
      return no_key_found("the body is not JSON, so " + source->name + " cannot be read from it");
    std::string why;
    auto value = core::key_from_json(doc, source->name, &why);
    if (!value) {
      bool there = false;
      try {
        there = doc.contains(nlohmann::json::json_pointer(source->name));
      } catch (const nlohmann::json::exception&) {
      }
      if (!there) return no_key_found(why);
      return problem(400, "Bad idempotency key", why);
    }
    key = *value;
  }
  if (auto why = core::key_problem(key)) return problem(400, "Bad idempotency key", *why);
  return key;
}

util::Fd body_as_stdin(const std::string& body) {
  util::Fd fd(::memfd_create("idem-body", MFD_CLOEXEC));
  if (!fd.valid() || !util::write_all(fd.get(), body))
    throw Error(k_exit_internal, "cannot buffer the request body");
  ::lseek(fd.get(), 0, SEEK_SET);
  return fd;
}

std::string content_type_of(const std::string& out) {
  nlohmann::json doc = nlohmann::json::parse(out, nullptr, false);
  if (!doc.is_discarded() && (doc.is_object() || doc.is_array())) return "application/json";
  return "text/plain; charset=utf-8";
}

// What a duplicate of this delivery is answered with (core/response.hpp): the status and the
// Content-Type; the body is the handler's stdout, in the outcome already. Idempotent-Replayed is
// the replay's own; Idem-Output-Truncated is derived from the record's output_truncated, which is
// about the stored stdout, the replayed body (a failure's first answer is a problem, not cut).
core::Response stored_answer(const Answer& a) {
  core::Response r;
  r.status = a.status;
  if (!a.content_type.empty()) r.headers.emplace_back("Content-Type", a.content_type);
  return r;
}

// A duplicate's answer from the record: the stored status and headers in order (the first
// Content-Type goes where the server writes it), the body its stdout. A record without a
// response (none was stored) answers 200 as text.
Answer replayed(const core::Record& r) {
  Answer a;
  const core::Response stored = r.response.value_or(core::Response{});
  a.status = stored.status;
  for (const auto& [name, value] : stored.headers) {
    if (a.content_type.empty() && core::same_header_name(name, "Content-Type"))
      a.content_type = value;
    else
      a.headers.emplace_back(name, value);
  }
  if (a.content_type.empty()) a.content_type = "text/plain; charset=utf-8";
  auto out = core::CapturedOutput::decode(r.output);
  a.body = out ? out->stream_bytes(core::Stream::out) : std::string();
  a.headers.emplace_back("Idempotent-Replayed", "true");
  if (r.output_truncated) a.headers.emplace_back(k_truncated_header, "true");
  a.outcome = "replayed";
  return a;
}

Answer accepted(const std::string& key, const std::string& outcome) {
  Answer a;
  a.status = 202;
  a.content_type = "application/json";
  a.body = nlohmann::json{{"status", "accepted"}, {"key", key}}.dump() + "\n";
  a.key = key;
  a.outcome = outcome;
  return a;
}

// Runs the hook's command for a delivery; returns the answer and the outcome to record.
// `on_spawn`, when given, records the handler's process group before the handler starts.
std::pair<Answer, core::Outcome> run_handler(
    const Hook& hook, const Delivery& d, const std::string& key, int64_t attempt,
    std::function<void(const core::ProcessGroup&)> on_spawn = nullptr) {
  util::Fd stdin_fd = body_as_stdin(d.body);
  proc::RunSpec spec;
  spec.argv = hook.command;
  spec.stdin_fd = stdin_fd.get();
  spec.live_stdout_fd = -1;
  spec.live_stderr_fd = -1;
  spec.max_output = k_max_stored_answer;
  spec.timeout_ms = hook.timeout_ms;
  spec.kill_after_ms = 5000;
  spec.extra_env = {{"IDEM_KEY", key},           {"IDEM_ATTEMPT", std::to_string(attempt)},
                    {"IDEM_HOOK", hook.path},    {"IDEM_METHOD", d.method},
                    {"IDEM_PATH", d.path}};
  for (auto& variable : header_environment(d)) spec.extra_env.push_back(std::move(variable));
  // No handler reads a sender's secret, its own hook's or another's.
  spec.unset_env = hook.withheld_env;
  spec.on_spawn = std::move(on_spawn);
  proc::RunResult result = proc::run_command(spec);

  core::Outcome o = proc::outcome_of(result, util::SystemClock().now_ms());
  const bool ok = o.status == core::Status::succeeded;
  Answer a;
  if (ok) {
    a.status = 200;
    a.body = result.output.stream_bytes(core::Stream::out);
    a.content_type = content_type_of(a.body);
    a.outcome = "ran";
    // The client must be able to tell a cut answer from a whole one.
    if (result.output.truncated()) a.headers.emplace_back(k_truncated_header, "true");
  } else if (result.timed_out) {
    a = problem(504, "Handler timed out",
                "the handler did not finish within " + std::to_string(hook.timeout_ms / 1000) + "s");
    a.outcome = "timeout";
    o.note = "stopped by the hook's timeout";
  } else {
    std::string why = !result.started ? std::string("could not start: ") + strerror(result.exec_errno)
                      : result.signal ? "handler killed by signal " + std::to_string(*result.signal)
                                      : "handler exited " + std::to_string(*result.exit_code);
    a = problem(500, "Handler failed", why);
    a.outcome = "failed";
    o.note = why;
  }
  a.key = key;
  o.response = stored_answer(a);
  return {std::move(a), std::move(o)};
}

// Runs the hook's command for a claimed delivery and records the outcome; returns the answer.
Answer run_claimed(const Hook& hook, const Delivery& d, const std::string& key,
                   const std::string& store_key, int64_t attempt, store::Store& store) {
  // The group is durable before the handler starts: a retry_abandoned retry after a daemon crash
  // must not overlap what the handler left running (its background jobs).
  auto [a, o] = run_handler(hook, d, key, attempt, [&](const core::ProcessGroup& group) {
    store.set_process_group(store_key, attempt, group);
  });
  store.finish(store_key, attempt, o);
  return a;
}

// A delivery without a key under "no_key": "run": the handler runs with IDEM_KEY empty and
// nothing is stored, so every such delivery runs (SPEC §6: "without dedupe").
Answer run_unkeyed(const Hook& hook, HookSlots& slots, const Delivery& d,
                   const DeliveryServices& services) {
  if (!slots.reserve()) {
    Answer a = problem(503, "Too many deliveries",
                       "hook " + hook.path + " is at its concurrency and queue limits");
    a.headers.emplace_back("Retry-After", "1");
    a.outcome = "overloaded";
    return a;
  }
  if (hook.async) {
    services.spawn([hook, d, &slots] {
      slots.acquire();
      try {
        run_handler(hook, d, "", 1);
      } catch (const std::exception&) {
      }
      slots.release();
    });
    Answer a;
    a.status = 202;
    a.content_type = "application/json";
    a.body = nlohmann::json{{"status", "accepted"}, {"key", nullptr}}.dump() + "\n";
    a.outcome = "unkeyed";
    return a;
  }
  slots.acquire();
  Answer a;
  try {
    a = run_handler(hook, d, "", 1).first;
  } catch (const std::exception& e) {
    slots.release();
    a = problem(500, "Delivery failed", e.what());
    a.outcome = "error";
    return a;
  }
  slots.release();
  if (a.outcome == "ran") a.outcome = "unkeyed";
  return a;
}

// The daemon lives on after an error between the claim and the outcome, so the claim would stay
// "running" for good: record a failure (when the store allows) so a retry can run it again.
void record_daemon_error(store::Store& store, const std::string& store_key, int64_t attempt,
                         const std::exception& e) {
  try {
    core::Outcome failed;
    failed.status = core::Status::failed;
    failed.finished_ms = util::SystemClock().now_ms();
    failed.note = std::string("daemon error: ") + e.what();
    failed.response = core::Response{500, {}};
    store.finish(store_key, attempt, failed);
  } catch (const std::exception&) {
  }
}

}  // namespace

std::string header_variable(std::string_view name) {
  std::string var = "IDEM_HEADER_";
  for (char c : name) {
    auto byte = static_cast<unsigned char>(c);
    bool alnum = (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') ||
                 (byte >= 'A' && byte <= 'Z');
    var.push_back(alnum ? char(std::toupper(byte)) : '_');
  }
  return var;
}

std::optional<std::string> Delivery::header(std::string_view name) const {
  const std::string variable = header_variable(name);
  std::optional<std::string> value;
  for (const auto& [n, v] : headers) {
    if (header_variable(n) != variable) continue;
    if (value)
      value->append(", ").append(v);
    else
      value = v;
  }
  return value;
}

std::vector<std::pair<std::string, std::string>> header_environment(const Delivery& d) {
  std::vector<std::pair<std::string, std::string>> variables;
  std::map<std::string, size_t> index;  // variable -> its place in `variables`
  for (const auto& [n, v] : d.headers) {
    std::string variable = header_variable(n);
    auto [it, fresh] = index.emplace(variable, variables.size());
    if (fresh)
      variables.emplace_back(std::move(variable), v);
    else
      variables[it->second].second.append(", ").append(v);
  }
  return variables;
}

bool is_credential_header(const Hook& hook, std::string_view name) {
  const std::string variable = header_variable(name);
  auto same = [&](std::string_view known) { return header_variable(known) == variable; };
  if (same("Authorization") || same("Cookie") || same("Proxy-Authorization")) return true;
  for (std::string_view known : signature_header_names())
    if (same(known)) return true;
  return hook.signature && !hook.signature->header.empty() && same(hook.signature->header);
}

std::string stored_request(const Hook& hook, const Delivery& d) {
  nlohmann::json headers = nlohmann::json::object();
  std::map<std::string, std::string> spelling;  // lower-case name -> the name as first received
  for (const auto& [n, v] : d.headers) {
    std::string lower = n;
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    auto [it, fresh] = spelling.emplace(lower, n);
    nlohmann::json& value = headers[it->second];
    if (is_credential_header(hook, n))
      value = k_redacted;
    else if (fresh)
      value = v;
    else
      value = value.get<std::string>() + ", " + v;
  }
  return nlohmann::json{{"method", d.method}, {"path", d.path}, {"headers", headers},
                        {"body_b64", util::to_base64(d.body)}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> form_values(std::string_view body, std::string_view name) {
  std::vector<std::string> values;
  while (!body.empty()) {
    size_t amp = body.find('&');
    std::string_view pair = body.substr(0, amp);
    body.remove_prefix(amp == std::string_view::npos ? body.size() : amp + 1);
    if (pair.empty()) continue;
    size_t equals = pair.find('=');
    std::string_view field = pair.substr(0, equals);
    std::string_view value =
        equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1);
    if (form_decode(field) == name) values.push_back(form_decode(value));
  }
  return values;
}

Answer problem(int status, const std::string& title, const std::string& detail) {
  Answer a;
  a.status = status;
  a.content_type = "application/problem+json";
  a.body = nlohmann::json{{"type", "about:blank"}, {"title", title}, {"status", status},
                          {"detail", detail}}
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
  return a;
}

bool HookSlots::reserve() {
  std::lock_guard lock(mutex_);
  if (reserved_ >= max_running_ + max_waiting_) return false;
  ++reserved_;
  return true;
}

void HookSlots::force_reserve() {
  std::lock_guard lock(mutex_);
  ++reserved_;
}

void HookSlots::acquire() {
  std::unique_lock lock(mutex_);
  free_.wait(lock, [&] { return running_ < max_running_; });
  ++running_;
}

void HookSlots::release() {
  {
    std::lock_guard lock(mutex_);
    --running_;
    --reserved_;
  }
  free_.notify_one();
}

void HookSlots::cancel_reservation() {
  std::lock_guard lock(mutex_);
  --reserved_;
}

Answer deliver(const Hook& hook, HookSlots& slots, const Delivery& d,
               const DeliveryServices& services) {
  util::SystemClock clock;
  const int64_t now_ms = clock.now_ms();
  // Nothing is stored or run before the signature check passes (SPEC §8.5).
  if (hook.signature) {
    auto lookup = [&](std::string_view name) { return d.header(name); };
    Verdict v = verify(*hook.signature, lookup, d.body, now_ms / 1000);
    if (!v.ok) {
      Answer a = problem(401, "Signature check failed", v.problem);
      a.outcome = "unauthorized";
      return a;
    }
  }
  auto found = find_key(hook, d);
  if (auto* none = std::get_if<NoKeyFound>(&found)) {
    if (hook.no_key == NoKey::run) return run_unkeyed(hook, slots, d, services);
    none->refusal.outcome = "no_key";
    return none->refusal;
  }
  if (auto* refusal = std::get_if<Answer>(&found)) {
    refusal->outcome = "no_key";
    return *refusal;
  }
  const std::string key = std::get<std::string>(found);
  // Keys are scoped per hook.
  const std::string store_key = hook.path + "#" + key;

  // A place among the hook's running and waiting handlers. When there is none, a delivery that
  // would not run (a duplicate, a conflict) is still answered as the table says; only one that
  // would run gets 503.
  bool reserved = slots.reserve();
  auto give_back = [&] {
    if (reserved) slots.cancel_reservation();
    reserved = false;
  };
  auto overloaded = [&] {
    Answer a = problem(503, "Too many deliveries",
                       "hook " + hook.path + " is at its concurrency and queue limits");
    a.headers.emplace_back("Retry-After", "1");
    a.key = key;
    a.outcome = "overloaded";
    return a;
  };
  try {
    auto store = services.stores->lease();  // reused: no connection is opened per delivery
    core::Fingerprinter f;
    f.add_field("kind", "http");
    f.add_field("body", d.body);
    store::ClaimRequest req;
    req.key = store_key;
    req.fingerprint = f.hex();
    req.kind = "http";
    req.owner = services.owner;
    req.ttl_ms = hook.ttl_ms;
    req.request = stored_request(hook, d);
    req.policy = core::Policy{false, hook.retry_abandoned};
    // With retry_abandoned, an abandoned attempt is retried only once its processes are seen to
    // be gone: claim allowing no retry, check the attempt the claim names, then claim allowing
    // exactly that one.
    if (hook.retry_abandoned) req.policy.retry_only_attempt = -1;
    req.now_ms = now_ms;
    if (!reserved) {
      auto existing = store->get(store_key);
      bool gone = existing && existing->status == core::Status::running &&
                  proc::owner_gone(existing->owner);
      if (core::decide(existing ? &*existing : nullptr, req.fingerprint, now_ms, gone, req.policy)
              .verdict == core::Verdict::claim)
        return overloaded();
    }
    store::ClaimResult claim = store->claim(req, proc::owner_gone);
    while (hook.retry_abandoned && claim.verdict == core::Verdict::abandoned &&
           !proc::process_group_alive(claim.existing->owner, claim.existing->process_group)) {
      req.policy.retry_only_attempt = claim.existing->attempt;
      claim = store->claim(req, proc::owner_gone);
    }

    Answer a;
    switch (claim.verdict) {
      case core::Verdict::conflict:
        give_back();
        a = problem(422, "Key reused with another body",
                    "key '" + core::display_key(key) + "' was delivered before with a different body");
        a.outcome = "conflict";
        break;
      case core::Verdict::running:
        give_back();
        if (hook.async) return accepted(key, "running");
        a = problem(409, "Delivery in progress",
                    "key '" + core::display_key(key) + "' is being handled now");
        a.headers.emplace_back("Retry-After", k_retry_after_running);
        a.outcome = "running";
        break;
      case core::Verdict::abandoned:
        give_back();
        if (hook.retry_abandoned) {  // still abandoned after the loop above: its processes live
          a = problem(409, "Earlier delivery still running",
                      "the handler of key '" + core::display_key(key) +
                          "' was cut off, but processes it started are still running");
          a.headers.emplace_back("Retry-After", k_retry_after_running);
          a.outcome = "abandoned";
          break;
        }
        a = problem(409, "Earlier delivery abandoned",
                    "the handler of key '" + core::display_key(key) +
                        "' was cut off (the daemon died mid-run); its outcome is unknown");
        a.outcome = "abandoned";
        break;
      case core::Verdict::replay: {
        give_back();
        if (hook.async) return accepted(key, "replayed");
        a = replayed(*claim.existing);
        break;
      }
      case core::Verdict::claim: {
        // The record changed between the look above and the claim: the claim is durable, so run
        // it anyway, over the queue limit.
        if (!reserved) slots.force_reserve();
        reserved = false;  // the reservation now belongs to the run
        if (hook.async) {
          // The claim is durable: answer now, run in the background.
          services.spawn([hook, d, key, store_key, attempt = claim.attempt, &slots,
                          stores = services.stores] {
            slots.acquire();
            std::optional<store::StoreProvider::Lease> own_store;
            try {
              own_store.emplace(stores->lease());
              run_claimed(hook, d, key, store_key, attempt, **own_store);
            } catch (const std::exception& e) {
              if (own_store) record_daemon_error(**own_store, store_key, attempt, e);
            }
            slots.release();
          });
          return accepted(key, "accepted");
        }
        slots.acquire();
        try {
          a = run_claimed(hook, d, key, store_key, claim.attempt, *store);
        } catch (const std::exception& e) {
          slots.release();
          record_daemon_error(*store, store_key, claim.attempt, e);
          a = problem(500, "Delivery failed", "the daemon could not run the handler; its log says why");
          a.error = e.what();
          a.key = key;
          a.outcome = "error";
          return a;
        }
        slots.release();
        return a;
      }
    }
    a.key = key;
    return a;
  } catch (const std::exception& e) {
    give_back();
    // The reason names the store's path: it goes to the log, not to the client. A store that
    // will not work without someone acting (not a store, a newer schema, no permission) is a
    // 500: a sender retrying it would only pile up.
    const auto* store_error = dynamic_cast<const StoreError*>(&e);
    Answer a = store_error != nullptr && !store_error->transient()
                   ? problem(500, "Store unusable", "the store cannot be used; the log says why")
                   : problem(503, "Store unavailable", "the store cannot be used now; retry later");
    a.error = e.what();
    if (a.status == 503) a.headers.emplace_back("Retry-After", "5");
    a.key = key;
    a.outcome = "store_error";
    return a;
  }
}

}  // namespace idem::http
