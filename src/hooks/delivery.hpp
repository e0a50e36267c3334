#pragma once
// One webhook delivery, from verified request to answer, independent of the HTTP library: the
// table of contract §6, row by row.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/attempt.hpp"
#include "engine/command_effect.hpp"
#include "front/answer.hpp"
#include "hooks/config.hpp"
#include "store/provider.hpp"
#include "store/store.hpp"

namespace idem::http {

struct Delivery {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;  // as received, in order
  std::string body;
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

// The values of the field `name` of an application/x-www-form-urlencoded body, in order: split on
// '&', name and value split at the first '=', '+' read as a space and %XX as the byte XX (a '%'
// not followed by two hex digits stays as it is), as the WHATWG URL standard parses forms. Empty
// when the field is absent. The body itself is never changed.
std::vector<std::string> form_values(std::string_view body, std::string_view name);

// Limits how many handlers of one hook run at once; further deliveries wait in a bounded queue.
class HookSlots {
 public:
  HookSlots(int max_running, int max_waiting)
      : max_running_(max_running), max_waiting_(max_waiting) {}
  // Reserves a place (running or waiting); false when both are full (answer 503).
  bool reserve();
  void force_reserve();  // a reservation past the limits, for a claim that must run
  // The limits it was made with (a reload keeps slots whose limits did not change).
  int max_running() const { return max_running_; }
  int max_waiting() const { return max_waiting_; }
  // Waits for a running slot for a reservation.
  void acquire();
  void release();             // after acquire()
  void cancel_reservation();  // a reservation that never ran

  // A running slot for a reservation, held for its scope: acquired (waiting for one) when made,
  // released when it goes, however the run ends.
  class Running {
   public:
    explicit Running(HookSlots& slots) : slots_(slots) { slots_.acquire(); }
    ~Running() { slots_.release(); }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;

   private:
    HookSlots& slots_;
  };

 private:
  std::mutex mutex_;
  std::condition_variable free_;
  const int max_running_;
  const int max_waiting_;
  int running_ = 0;
  int reserved_ = 0;  // running + waiting
};

struct DeliveryServices {
  // The daemon's store connections (opened with its --busy-timeout); shared so that a
  // background run keeps them alive.
  std::shared_ptr<store::StoreProvider> stores;
  core::Owner owner;    // the daemon
  engine::Front front;  // the daemon's (its lease only on a store shared by hosts)
  // Runs `fn` in the background and counts it as in flight (for the SIGTERM drain); logs what
  // it throws.
  std::function<void(std::function<void()>)> spawn;
};

// The 401 for a delivery whose signature `hook` checks and that fails it (headers from
// `delivery`, `body` byte for byte); nullopt when it passes or the hook checks none. Nothing is
// stored or run before it (contract §8.5).
std::optional<Answer> signature_refusal(const Hook& hook, const Delivery& delivery,
                                        std::string_view body);

// Decides and answers one delivery for `hook` (path and method already matched, body within the
// hook's limit). May block while the handler runs, unless the hook is async.
Answer deliver(const Hook& hook, HookSlots& slots, const Delivery& delivery,
               const DeliveryServices& services);

// A stored delivery of `hook` run again as a new attempt of its key (`key`: the delivery's,
// without the hook's path), as deliver() would run it but with no signature to check: the
// stored request keeps credentials by name only. A failed record is claimed again; a succeeded
// or running one is answered as a duplicate (nothing runs).
Answer rerun_delivery(const Hook& hook, HookSlots& slots, const Delivery& delivery,
                      const DeliveryServices& services, const std::string& key);

// What an attempt at a delivery carries out, and the answer it makes of it.
class DeliveryEffect : public engine::Effect {
 public:
  // The answer to the delivery, once perform() has returned.
  virtual Answer& answer() = 0;
};

// A delivery carried out by one command (a native hook's, a webhook hook's). The command, with
// what it needs kept open (its stdin, its files), is made when a claim prepares it (its child
// then waits while the claim records its group: engine::Effect::prepare), or else when it is
// carried out.
class CommandDelivery : public DeliveryEffect {
 public:
  // What cannot be made now (a body that cannot be buffered) is met again, and answered, when
  // the delivery is carried out.
  std::optional<core::ProcessGroup> prepare() final {
    try {
      return command().prepare();
    } catch (const std::exception&) {
      command_.reset();
      return std::nullopt;
    }
  }
  void unprepare() final { command_.reset(); }

 protected:
  // The command, made on first use (make_command).
  engine::CommandEffect& command() {
    if (!command_) command_ = make_command();
    return *command_;
  }
  virtual std::unique_ptr<engine::CommandEffect> make_command() = 0;

 private:
  std::unique_ptr<engine::CommandEffect> command_;
};

// How the steps below run and answer a delivery: deliver() runs a native hook's command
// (contract §6); a webhook hook (webhook/route.hpp) runs its own and answers as webhook does.
struct DeliveryPolicy {
  // A new effect for one attempt at `key` ("" when unkeyed). With `hook.async` it is called on a
  // background thread after the request has been answered: what it refers to must outlive that.
  std::function<std::unique_ptr<DeliveryEffect>(const std::string& key)> effect;
  // With `hook.async`: the answer to the delivery that starts a run, and to each duplicate of a
  // running or succeeded one; `outcome` is the log's (accepted, running, replayed, unkeyed).
  std::function<Answer(const std::string& key, const std::string& outcome)> early_answer;
  // What started the attempt, as its history shows it (store::ClaimRequest::trigger): empty for
  // a delivery, core::k_trigger_rerun for a re-run a user asked for.
  std::string trigger;
};

// A delivery with a usable key (core::key_problem passed), decided by the attempt engine under
// "{hook.path}#{key}" and run at most once per key: contract §6's table from "same key, different
// body" on. The fingerprint is the body.
Answer deliver_keyed(const Hook& hook, HookSlots& slots, const Delivery& delivery,
                     const DeliveryServices& services, const std::string& key,
                     const DeliveryPolicy& policy);

// A delivery run without a key: nothing is stored, every one runs; the slots still cap it (503
// when they and the queue are full).
Answer deliver_unkeyed(const Hook& hook, HookSlots& slots, const DeliveryServices& services,
                       const DeliveryPolicy& policy);

}  // namespace idem::http
