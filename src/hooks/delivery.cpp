#include "hooks/delivery.hpp"

#include <cctype>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <variant>

#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/history.hpp"
#include "core/json_key.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "engine/attempt.hpp"
#include "engine/command_effect.hpp"
#include "front/store_failure.hpp"
#include "hooks/signature.hpp"
#include "net/message.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"

namespace idem::hooks {

namespace {

constexpr int64_t k_max_stored_answer = 16 * 1024 * 1024;
constexpr const char* k_retry_after_running = "5";
// On an answer (first or replayed) whose output went over k_max_stored_answer: the body is cut.
constexpr const char* k_truncated_header = "Idem-Output-Truncated";

// A delivery that carries no key; `refusal` is the 400 it gets under "no_key": "refuse".
struct NoKeyFound {
  front::Answer refusal;
};

NoKeyFound no_key_found(const std::string& detail, const std::string& what = "idempotency key") {
  return NoKeyFound{front::problem(400, "No " + what, detail)};
}

// The value `source` finds in the delivery (not yet checked as a key); NoKeyFound when it finds
// none; or the 400 answer for one that is there but cannot be used (refused whatever the hook's
// no_key says). `what` names the value in messages ("idempotency key", "serial group").
std::variant<std::string, NoKeyFound, front::Answer> read_source(const KeySource& source,
                                                                 const Delivery& d,
                                                                 const std::string& what) {
  const std::string bad = "Bad " + what;
  if (source.kind == KeySource::header) {
    auto value = d.header(source.name);
    if (!value || value->empty())
      return no_key_found("header " + source.name + " is missing", what);
    return *value;
  }
  if (source.kind == KeySource::form) {
    std::vector<std::string> values = form_values(d.body, source.name);
    if (values.empty())
      return no_key_found("the form-encoded body has no field " + source.name, what);
    // Which of two would be meant is anyone's guess: refuse rather than pick.
    if (values.size() > 1)
      return front::problem(400, bad,
                            "form field " + source.name + " appears " +
                                std::to_string(values.size()) + " times in the body");
    if (values[0].empty()) return no_key_found("form field " + source.name + " is empty", what);
    return values[0];
  }
  nlohmann::json doc = nlohmann::json::parse(d.body, nullptr, false);
  if (doc.is_discarded())
    return no_key_found("the body is not JSON, so " + source.name + " cannot be read from it",
                        what);
  std::string why;
  auto value = core::key_from_json(doc, source.name, &why);
  if (value) return *value;
  bool there = false;
  try {
    there = doc.contains(nlohmann::json::json_pointer(source.name));
  } catch (const nlohmann::json::exception&) {
  }
  if (!there) return no_key_found(why, what);
  return front::problem(400, bad, why);
}

// The delivery's key; NoKeyFound when it carries none; or the 400 answer for a key that is there
// but cannot be used (refused whatever the hook's no_key says).
std::variant<core::Key, NoKeyFound, front::Answer> find_key(const Hook& hook, const Delivery& d) {
  std::optional<KeySource> source = hook.key;
  if (!source && hook.signature) {
    auto lookup = [&](std::string_view name) { return d.header(name); };
    if (auto def = default_key(hook.signature->scheme, lookup))
      source = KeySource{def->kind == DefaultKey::header ? KeySource::header : KeySource::json,
                         def->name};
  }
  if (!source)
    return no_key_found("hook " + hook.path + " names no key source and its scheme has no default");
  auto found = read_source(*source, d, "idempotency key");
  if (auto* none = std::get_if<NoKeyFound>(&found)) return std::move(*none);
  if (auto* refusal = std::get_if<front::Answer>(&found)) return std::move(*refusal);
  std::string why;
  if (auto usable = core::Key::parse(std::get<std::string>(found), why)) return std::move(*usable);
  return front::problem(400, "Bad idempotency key", why);
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
core::Response stored_answer(const front::Answer& a) {
  core::Response r;
  r.status = a.status;
  if (!a.content_type.empty()) r.headers.emplace_back("Content-Type", a.content_type);
  return r;
}

// A duplicate's answer from the record: the stored status and headers in order (the first
// Content-Type goes where the server writes it), the body its stdout. A record without a
// response (none was stored) answers 200 as text; a stored one without a Content-Type (a webhook
// hook's empty output) has none.
front::Answer replayed(const core::Record& r) {
  front::Answer a;
  const core::Response stored = r.response.value_or(core::Response{});
  a.status = stored.status;
  for (const auto& [name, value] : stored.headers) {
    if (a.content_type.empty() && core::same_header_name(name, "Content-Type"))
      a.content_type = value;
    else
      a.headers.emplace_back(name, value);
  }
  if (a.content_type.empty() && !r.response) a.content_type = "text/plain; charset=utf-8";
  auto out = core::CapturedOutput::decode(r.output);
  a.body = out ? out->stream_bytes(core::Stream::out) : std::string();
  a.headers.emplace_back("Idempotent-Replayed", "true");
  if (r.output_truncated) a.headers.emplace_back(k_truncated_header, "true");
  a.outcome = "replayed";
  return a;
}

front::Answer accepted(const std::string& key, const std::string& outcome) {
  front::Answer a;
  a.status = 202;
  a.content_type = "application/json";
  a.body = nlohmann::json{{"status", "accepted"},
                          {"key", key.empty() ? nlohmann::json(nullptr) : nlohmann::json(key)}}
               .dump() +
           "\n";
  a.key = key;
  a.outcome = outcome;
  return a;
}

// The effect of a hook: its command, with the body on stdin and the request in the environment;
// the answer follows from how the command ended (contract §6).
class HookEffect final : public CommandDelivery {
 public:
  // `kept`: what keeps `hook` and `d` alive for as long as the effect, when the caller does not.
  HookEffect(const Hook& hook, const Delivery& d, const std::string& key,
             std::shared_ptr<const void> kept = nullptr)
      : kept_(std::move(kept)), hook_(hook), delivery_(d), key_(key) {}

  core::Outcome perform(const engine::Attempt& attempt) override {
    core::Outcome o = command().perform(attempt);
    answer_ = answer_of(command().result(), o);
    o.response = stored_answer(answer_);
    return o;
  }
  std::string performed() const override { return "the handler ran"; }
  front::Answer& answer() override { return answer_; }

 private:
  std::unique_ptr<engine::CommandEffect> make_command() override {
    stdin_ = util::memory_file("idem-body", delivery_.body);
    if (!stdin_.valid()) throw Error(k_exit_internal, "cannot buffer the request body");
    return std::make_unique<engine::CommandEffect>(proc::spawning_runner(), spec(stdin_.get()));
  }

  proc::RunSpec spec(int stdin_fd) const {
    proc::RunSpec spec;
    spec.argv = hook_.command;
    spec.stdin_fd = stdin_fd;
    spec.live_stdout_fd = -1;
    spec.live_stderr_fd = -1;
    spec.max_output = k_max_stored_answer;
    spec.timeout_ms = hook_.timeout_ms;
    spec.kill_after_ms = 5000;
    spec.extra_env = {{"IDEM_KEY", key_},
                      {"IDEM_HOOK", hook_.path},
                      {"IDEM_METHOD", delivery_.method},
                      {"IDEM_PATH", delivery_.path}};
    for (auto& variable : header_environment(delivery_))
      spec.extra_env.push_back(std::move(variable));
    // No handler reads a sender's secret, its own hook's or another's.
    spec.unset_env = hook_.withheld_env;
    return spec;
  }

  front::Answer answer_of(const proc::RunResult& result, core::Outcome& o) const {
    front::Answer a;
    if (o.status == core::Status::succeeded) {
      a.status = 200;
      a.body = result.output.stream_bytes(core::Stream::out);
      a.content_type = content_type_of(a.body);
      a.outcome = "ran";
      // The client must be able to tell a cut answer from a whole one.
      if (result.output.truncated()) a.headers.emplace_back(k_truncated_header, "true");
    } else if (result.timed_out) {
      a = front::problem(
          504, "Handler timed out",
          "the handler did not finish within " + std::to_string(hook_.timeout_ms / 1000) + "s");
      a.outcome = "timeout";
      o.note = "stopped by the hook's timeout";
    } else {
      std::string why =
          !result.started ? std::string("could not start: ") + strerror(result.exec_errno)
          : result.signal ? "handler killed by signal " + std::to_string(*result.signal)
                          : "handler exited " + std::to_string(*result.exit_code);
      a = front::problem(500, "Handler failed", why);
      a.outcome = "failed";
      o.note = why;
    }
    a.key = key_;
    return a;
  }

  const std::shared_ptr<const void> kept_;
  const Hook& hook_;
  const Delivery& delivery_;
  const std::string key_;
  util::Fd stdin_;  // the body, the command's stdin
  front::Answer answer_;
};

front::Answer overloaded(const Hook& hook, const std::string& key) {
  front::Answer a = front::problem(503, "Too many deliveries",
                                   "hook " + hook.path + " is at its concurrency and queue limits");
  a.headers.emplace_back("Retry-After", "1");
  a.key = key;
  a.outcome = "overloaded";
  return a;
}

}  // namespace

// A delivery without a key (a native hook's under "no_key": "run"): the handler runs with
// IDEM_KEY empty and nothing is stored, so every such delivery runs (contract §6: "without
// dedupe").
front::Answer deliver_unkeyed(const Hook& hook, HookSlots& slots, const DeliveryServices& services,
                              const DeliveryPolicy& policy) {
  if (!slots.reserve()) return overloaded(hook, "");
  const engine::Attempt unstored{"", 1, "", "", nullptr, -1, nullptr};
  if (hook.async) {
    // What it throws is logged by the daemon's background runner (DeliveryServices::spawn).
    services.spawn([make = policy.effect, &slots, unstored] {
      HookSlots::Running running(slots);
      make("")->perform(unstored);
    });
    return policy.early_answer("", "unkeyed");
  }
  front::Answer a;
  try {
    HookSlots::Running running(slots);
    auto effect = policy.effect("");
    effect->perform(unstored);
    a = std::move(effect->answer());
  } catch (const std::exception& e) {
    a = front::problem(500, "Delivery failed", e.what());
    a.outcome = "error";
    return a;
  }
  if (a.outcome == "ran") a.outcome = "unkeyed";
  return a;
}

std::variant<std::string, front::Answer> serial_group(const Hook& hook, const Delivery& d) {
  const SerialConfig& serial = *hook.serial;
  if (!serial.source) return hook.path + "#" + serial.literal;
  auto found = read_source(*serial.source, d, "serial group");
  if (auto* none = std::get_if<NoKeyFound>(&found)) {
    none->refusal.outcome = "no_group";
    return std::move(none->refusal);
  }
  if (auto* refusal = std::get_if<front::Answer>(&found)) {
    refusal->outcome = "no_group";
    return std::move(*refusal);
  }
  std::string why;
  if (!core::Key::parse(std::get<std::string>(found), why)) {
    front::Answer a = front::problem(400, "Bad serial group", why);
    a.outcome = "no_group";
    return a;
  }
  return hook.path + "#" + std::get<std::string>(found);
}

namespace {

// The failure recorded for a claimed delivery the daemon could not carry out, so that a retry
// runs it again rather than find it running for good.
core::Outcome daemon_error(const std::exception& e) {
  core::Outcome failed;
  failed.note = std::string("daemon error: ") + e.what();
  failed.response = core::Response{500, {}};
  return failed;
}

// What the log says of a claimed delivery that failed in the background, once its failure is
// recorded (when the store takes it; else the attempt is left to be judged abandoned).
std::string failed_in_background(const std::string& key, const std::exception& e,
                                 engine::Engine& engine, const engine::Claimed& claimed) {
  const bool recorded = engine.record_failure(claimed, daemon_error(e));
  return "key '" + core::display_key(key) + "': " + e.what() +
         (recorded ? "" : "; the failure could not be recorded either");
}

// A place among a hook's running and waiting handlers, given back unless a run takes it.
class Reservation {
 public:
  explicit Reservation(HookSlots& slots) : slots_(slots), held_(slots.reserve()) {}
  ~Reservation() { cancel(); }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  bool held() const { return held_; }
  void cancel() {
    if (held_) slots_.cancel_reservation();
    held_ = false;
  }
  // A claimed run takes the place, over the limits if there was none (the record changed between
  // the look and the claim: the claim is durable, so it runs anyway).
  void hand_to_run() {
    if (!held_) slots_.force_reserve();
    held_ = false;
  }

 private:
  HookSlots& slots_;
  bool held_;
};

// Whether a handler cut off by the daemon's death (its record running, its owner gone) lives on:
// its group then waits for it (store::SerialClaim::left_behind). Processes in a group of the
// recorded number that cannot be proven its are not waited for.
bool handler_left_behind(const core::Record& r) {
  return engine::clear_leftovers(r, false, 0) == engine::Leftovers::alive;
}

// An attempt at `key` in the hook's scope: its record is named "{hook.path}#{key}".
// `group`: the delivery's serial group as stored (serial_group); empty: none.
engine::AttemptRequest attempt_request(const Hook& hook, const Delivery& d, const core::Key& key,
                                       const core::Owner& owner, const std::string& group) {
  engine::AttemptRequest req(key, hook.path);
  core::Fingerprinter f;
  f.add_field("kind", "http");
  f.add_field("body", d.body);
  req.claim.fingerprint = f.hex();
  req.claim.kind = "http";
  req.claim.owner = owner;
  req.claim.ttl_ms = hook.ttl_ms;
  // What is stored of the delivery, built only by a claim that writes it (the request lives
  // within deliver_keyed's call, which holds `hook` and `d`).
  req.describe_request = [&hook, &d] { return stored_request(hook, d); };
  req.claim.policy = core::Policy{false, hook.retry_abandoned};
  // A delivery that must wait its turn is stored as queued, answered 202, and started later by
  // the daemon's turns (serve/turns.hpp); an attempt of its group cut by a crash waits again at
  // the head of the line when the hook retries abandoned attempts.
  if (!group.empty())
    req.claim.serial = store::SerialClaim{group, hook.serial->latest, hook.serial->max_pending,
                                          hook.retry_abandoned, handler_left_behind};
  // A synchronous hook's claim is made durable by the synced write of its handler's process
  // group, before the handler starts (ClaimRequest::sync); an async hook answers on the claim,
  // and so does a serial one that queues the delivery (202).
  req.claim.sync = hook.async || !group.empty();
  // With retry_abandoned, an abandoned delivery runs again once nothing it started is left.
  // Processes in a group of the recorded number that cannot be proven its are no leftovers.
  req.clear_abandoned = [](const core::Record& r) {
    return engine::clear_leftovers(r, false, 0) != engine::Leftovers::alive;
  };
  // A failed delivery runs again once nothing it started is left; until then it is in progress.
  req.clear_failed = req.clear_abandoned;
  return req;
}

// The answer to a delivery that does not run: a replay or a refusal (contract §6's table).
front::Answer answer_without_running(const Hook& hook, const engine::Claimed& claimed,
                                     const std::string& key, const DeliveryPolicy& policy) {
  const std::string shown = "key '" + core::display_key(key) + "'";
  front::Answer a;
  switch (claimed.verdict) {
    case engine::ClaimVerdict::conflict:
      a = front::problem(422, "Key reused with another body",
                         shown + " was delivered before with a different body");
      a.outcome = "conflict";
      break;
    case engine::ClaimVerdict::running:
      if (hook.async) return policy.early_answer(key, "running");
      if (claimed.existing->status == core::Status::failed)
        a = front::problem(
            409, "Earlier delivery still running",
            "the handler of " + shown + " failed, but processes it started are still running");
      else
        a = front::problem(409, "Delivery in progress", shown + " is being handled now");
      a.headers.emplace_back("Retry-After", k_retry_after_running);
      a.outcome = "running";
      break;
    case engine::ClaimVerdict::abandoned:
      if (hook.retry_abandoned) {  // still abandoned: processes it started are alive
        a = front::problem(
            409, "Earlier delivery still running",
            "the handler of " + shown + " was cut off, but processes it started are still running");
        a.headers.emplace_back("Retry-After", k_retry_after_running);
      } else {
        a = front::problem(409, "Earlier delivery abandoned",
                           "the handler of " + shown +
                               " was cut off (the daemon died mid-run); its outcome is unknown");
      }
      a.outcome = "abandoned";
      break;
    case engine::ClaimVerdict::replay:
      if (hook.async) return policy.early_answer(key, "replayed");
      a = replayed(*claimed.existing);
      break;
    case engine::ClaimVerdict::declined:
      return overloaded(hook, key);
    case engine::ClaimVerdict::queued:
      // SPEC §9: it runs when its turn comes; a duplicate is told its place again.
      a.status = 202;
      a.content_type = "application/json";
      a.body = nlohmann::json{{"status", "queued"}, {"position", claimed.position}}.dump() + "\n";
      a.outcome = "queued";
      break;
    case engine::ClaimVerdict::superseded: {
      // The delivery's key as its sender knows it, without the hook's path.
      std::string by = claimed.existing->superseded_by;
      if (by.starts_with(hook.path + "#")) by.erase(0, hook.path.size() + 1);
      a.status = 200;
      a.content_type = "application/json";
      a.body = nlohmann::json{{"status", "superseded"}, {"superseded_by", by}}.dump(
                   -1, ' ', false, nlohmann::json::error_handler_t::replace) +
               "\n";
      a.outcome = "superseded";
      break;
    }
    case engine::ClaimVerdict::full:
      a = front::problem(503, "Serial group full",
                         shown + " cannot wait: its serial group holds as many as it may");
      a.headers.emplace_back("Retry-After", k_retry_after_running);
      a.outcome = "full";
      break;
    case engine::ClaimVerdict::claimed:
      break;
  }
  a.key = key;
  return a;
}

// Tells the daemon's turns, when it goes, that an attempt of serial group `group` ended (nothing
// when the delivery has no group), so that the next one in line starts.
class TurnOver {
 public:
  TurnOver(std::function<void(const std::string&)> turn_over, std::string group)
      : turn_over_(group.empty() ? nullptr : std::move(turn_over)), group_(std::move(group)) {}
  ~TurnOver() {
    if (turn_over_) turn_over_(group_);
  }
  TurnOver(const TurnOver&) = delete;
  TurnOver& operator=(const TurnOver&) = delete;

 private:
  std::function<void(const std::string&)> turn_over_;
  std::string group_;
};

// Runs a claimed delivery in the background, on a store connection of its own, and records its
// outcome; the answer (202) has gone already.
void run_in_background(const std::string& key, const engine::Claimed& claimed, HookSlots& slots,
                       const DeliveryServices& services, const DeliveryPolicy& policy,
                       const std::string& group) {
  services.spawn([make = policy.effect, key, claimed, &slots, turn_over = services.turn_over, group,
                  stores = services.stores, front = services.front] {
    TurnOver over(turn_over, group);
    // What it throws is logged by the daemon's background runner (DeliveryServices::spawn).
    HookSlots::Running running(slots);
    auto store = [&] {
      try {
        return stores->lease();
      } catch (const std::exception& e) {
        throw std::runtime_error("key '" + core::display_key(key) + "': " + e.what() +
                                 "; it is left to be judged abandoned");
      }
    }();
    engine::Engine engine(*store, front);
    auto effect = make(key);
    try {
      engine.carry_out(claimed, *effect);
    } catch (const std::exception& e) {
      throw std::runtime_error(failed_in_background(key, e, engine, claimed));
    }
  });
}

// Runs a claimed delivery now, with the effect the claim prepared, and answers with its outcome.
front::Answer run_now(const std::string& key, const engine::Claimed& claimed, HookSlots& slots,
                      engine::Engine& engine, std::unique_ptr<DeliveryEffect> effect,
                      const TurnOver&) {
  try {
    HookSlots::Running running(slots);
    engine.carry_out(claimed, *effect);
  } catch (const std::exception& e) {
    engine.record_failure(claimed, daemon_error(e));
    front::Answer a = front::problem(500, "Delivery failed",
                                     "the daemon could not run the handler; its log says why");
    a.error = e.what();
    a.key = key;
    a.outcome = "error";
    return a;
  }
  return std::move(effect->answer());
}

}  // namespace

namespace {

// Carries out an attempt of `line`'s hook a turn started, on `engine`'s connection.
void run_turn(const SerialLine& line, engine::Engine& engine, const engine::Claimed& claimed) {
  const std::string key = claimed.key.substr(line.path.size() + 1);
  try {
    auto effect = line.effect(*claimed.existing, key);
    if (!effect) throw std::runtime_error("its stored request is not a delivery of this hook");
    engine.carry_out(claimed, *effect);
  } catch (const std::exception& e) {
    throw std::runtime_error(failed_in_background(key, e, engine, claimed));
  }
}

}  // namespace

bool start_turn(const SerialLine& line, const std::string& group) {
  if (!line.slots->reserve()) return false;
  std::optional<engine::Claimed> claimed;
  try {
    auto store = line.services.stores->lease();
    engine::Engine engine(*store, line.services.front);
    claimed =
        engine.take_turn(group, line.services.owner, line.requeue_abandoned, handler_left_behind);
  } catch (...) {
    line.slots->cancel_reservation();
    throw;
  }
  if (!claimed) {
    line.slots->cancel_reservation();
    return false;
  }
  line.services.spawn([line, group, first = std::move(*claimed)] {
    // Should the line stop here for another reason than its end, the daemon's turns look again.
    TurnOver over(line.services.turn_over, group);
    // What it throws is logged by the daemon's background runner (DeliveryServices::spawn).
    HookSlots::Running running(*line.slots);
    auto store = [&] {
      try {
        return line.services.stores->lease();
      } catch (const std::exception& e) {
        throw std::runtime_error("key '" + core::display_key(first.key) + "': " + e.what() +
                                 "; it is left to be judged abandoned");
      }
    }();
    engine::Engine engine(*store, line.services.front);
    // The group's next deliveries on this thread and connection, one after another, while the
    // daemon serves: each start unsynced, made durable by the synced record of its command's
    // group before the command starts (store::TurnRequest::sync).
    for (std::optional<engine::Claimed> turn = first; turn;) {
      run_turn(line, engine, *turn);
      if (line.stopping && line.stopping()) break;
      turn = engine.take_turn(group, line.services.owner, line.requeue_abandoned,
                              handler_left_behind, false);
    }
  });
  return true;
}

std::function<std::unique_ptr<DeliveryEffect>(const core::Record&, const std::string&)>
stored_hook_effect(const Hook& hook) {
  auto kept_hook = std::make_shared<const Hook>(hook);
  return [kept_hook](const core::Record& r,
                     const std::string& key) -> std::unique_ptr<DeliveryEffect> {
    std::optional<Delivery> d = stored_delivery(r.request);
    if (!d) return nullptr;
    auto kept = std::make_shared<const std::pair<std::shared_ptr<const Hook>, Delivery>>(
        kept_hook, std::move(*d));
    return std::make_unique<HookEffect>(*kept->first, kept->second, key, kept);
  };
}

front::Answer deliver_keyed(const Hook& hook, HookSlots& slots, const Delivery& d,
                            const DeliveryServices& services, const core::Key& usable_key,
                            const DeliveryPolicy& policy) {
  // Keys are scoped per hook. When the hook has no place for one more handler, a delivery that
  // would not run (a duplicate, a conflict) is still answered as the table says; only one that
  // would run gets 503.
  const std::string& key = usable_key.str();
  std::string group;
  if (hook.serial) {
    auto found = serial_group(hook, d);
    if (auto* refusal = std::get_if<front::Answer>(&found)) {
      refusal->key = key;
      return std::move(*refusal);
    }
    group = std::move(std::get<std::string>(found));
  }
  Reservation reservation(slots);
  try {
    auto store = services.stores->lease();  // reused: no connection is opened per delivery
    engine::Engine engine(*store, services.front);
    engine::AttemptRequest req = attempt_request(hook, d, usable_key, services.owner, group);
    req.claim.trigger = policy.trigger;
    // SPEC §12: the sender's trace is the parent of the attempt's span (a repeated header, joined,
    // is no valid traceparent).
    req.traceparent = d.header("traceparent").value_or("");
    req.span_front = policy.span_front;
    req.decline_run = !reservation.held();
    // A synchronous hook's command is prepared by the claim that would run it, on this thread,
    // and records its group in the claim's write. An async one runs on another thread. A serial
    // one's claim mostly queues its delivery: no child is made for it (the command records its
    // group itself when it runs now).
    std::unique_ptr<DeliveryEffect> effect = hook.async ? nullptr : policy.effect(key);
    if (group.empty()) req.effect = effect.get();
    const engine::Claimed claimed = engine.claim(req);
    if (claimed.verdict != engine::ClaimVerdict::claimed) {
      reservation.cancel();
      return answer_without_running(hook, claimed, key, policy);
    }
    reservation.hand_to_run();
    if (!hook.async)
      return run_now(key, claimed, slots, engine, std::move(effect),
                     TurnOver(services.turn_over, group));
    // The claim is durable: answer now, run in the background.
    run_in_background(key, claimed, slots, services, policy, group);
    return policy.early_answer(key, "accepted");
  } catch (const std::exception& e) {
    reservation.cancel();
    return front::store_failure(e, key);
  }
}

namespace {

DeliveryPolicy hook_policy(const Hook& hook, const Delivery& d) {
  DeliveryPolicy policy;
  if (hook.async) {
    // The run outlives this call: its effects keep copies of the hook and the delivery.
    auto kept = std::make_shared<const std::pair<Hook, Delivery>>(hook, d);
    policy.effect = [kept](const std::string& key) -> std::unique_ptr<DeliveryEffect> {
      return std::make_unique<HookEffect>(kept->first, kept->second, key);
    };
  } else {
    policy.effect = [&hook, &d](const std::string& key) -> std::unique_ptr<DeliveryEffect> {
      return std::make_unique<HookEffect>(hook, d, key);
    };
  }
  policy.early_answer = accepted;
  return policy;
}

}  // namespace

front::Answer rerun_delivery(const Hook& hook, HookSlots& slots, const Delivery& d,
                             const DeliveryServices& services, const core::Key& key) {
  DeliveryPolicy policy = hook_policy(hook, d);
  policy.trigger = core::k_trigger_rerun;
  return deliver_keyed(hook, slots, d, services, key, policy);
}

front::Answer deliver(const Hook& hook, HookSlots& slots, const Delivery& d,
                      const DeliveryServices& services) {
  if (auto refusal = signature_refusal(hook, d, d.body)) return std::move(*refusal);
  const DeliveryPolicy policy = hook_policy(hook, d);
  auto found = find_key(hook, d);
  if (auto* none = std::get_if<NoKeyFound>(&found)) {
    if (hook.no_key == NoKey::run) return deliver_unkeyed(hook, slots, services, policy);
    none->refusal.outcome = "no_key";
    return none->refusal;
  }
  if (auto* refusal = std::get_if<front::Answer>(&found)) {
    refusal->outcome = "no_key";
    return *refusal;
  }
  return deliver_keyed(hook, slots, d, services, std::get<core::Key>(found), policy);
}

}  // namespace idem::hooks
