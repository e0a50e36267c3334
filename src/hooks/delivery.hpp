#pragma once
// One webhook delivery, from verified request to answer, independent of the HTTP library: the
// table of contract §6, row by row.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/key.hpp"
#include "engine/attempt.hpp"
#include "engine/command_effect.hpp"
#include "front/answer.hpp"
#include "hooks/config.hpp"
#include "hooks/request.hpp"
#include "hooks/slots.hpp"
#include "store/provider.hpp"
#include "store/store.hpp"

namespace idem::hooks {

struct DeliveryServices {
  // The daemon's store connections (opened with its --busy-timeout); shared so that a
  // background run keeps them alive.
  std::shared_ptr<store::StoreProvider> stores;
  core::Owner owner;    // the daemon
  engine::Front front;  // the daemon's (its lease only on a store shared by hosts)
  // Runs `fn` in the background and counts it as in flight (for the SIGTERM drain); logs what
  // it throws.
  std::function<void(std::function<void()>)> spawn;
  // Told that an attempt of a serial group (its stored name) has ended, so the next in line may
  // start (serve/turns.hpp); null: nothing is told.
  std::function<void(const std::string& group)> turn_over;
};

// The serial group of a delivery to a hook with "serial", as the store names it
// ("{hook.path}#{value}"), or the 400 for a delivery that carries none usable.
std::variant<std::string, front::Answer> serial_group(const Hook& hook, const Delivery& delivery);

// Decides and answers one delivery for `hook` (path and method already matched, body within the
// hook's limit). May block while the handler runs, unless the hook is async.
front::Answer deliver(const Hook& hook, HookSlots& slots, const Delivery& delivery,
                      const DeliveryServices& services);

// A stored delivery of `hook` run again as a new attempt of its key (`key`: the delivery's,
// without the hook's path), as deliver() would run it but with no signature to check: the
// stored request keeps credentials by name only. A failed record is claimed again; a succeeded
// or running one is answered as a duplicate (nothing runs).
front::Answer rerun_delivery(const Hook& hook, HookSlots& slots, const Delivery& delivery,
                             const DeliveryServices& services, const core::Key& key);

class DeliveryEffect;

// What the daemon's turns (serve/turns.hpp) need of a hook with "serial" to start the deliveries
// that wait in its groups' lines, made when the hook is loaded.
struct SerialLine {
  std::string path;                // the hook's: its groups are named "{path}#..."
  bool requeue_abandoned = false;  // the hook's retry_abandoned
  std::shared_ptr<HookSlots> slots;
  DeliveryServices services;
  // The effect that carries out a stored delivery of the hook: `record`'s request run as the
  // attempt at `key` (without the hook's path); nullptr when the request is not one the hook can
  // run (a record edited or imported by hand).
  std::function<std::unique_ptr<DeliveryEffect>(const core::Record& record, const std::string& key)>
      effect;
  // Whether the daemon drains: a line's run then starts none after it. Null: never.
  std::function<bool()> stopping;
};

// Starts the delivery at the head of `group`'s line when no attempt of the group runs and the
// hook has a place for one more handler, and carries it out in the background (its outcome
// recorded as a delivery's; the group's turn handed on when it ends). False when none started.
// Throws what the store throws.
bool start_turn(const SerialLine& line, const std::string& group);

// The effect of a native hook's stored delivery (SerialLine::effect): its command, run as
// deliver() runs it, with the stored request; credential headers read "[redacted]".
std::function<std::unique_ptr<DeliveryEffect>(const core::Record&, const std::string&)>
stored_hook_effect(const Hook& hook);

// What an attempt at a delivery carries out, and the answer it makes of it.
class DeliveryEffect : public engine::Effect {
 public:
  // The answer to the delivery, once perform() has returned.
  virtual front::Answer& answer() = 0;
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
  std::function<front::Answer(const std::string& key, const std::string& outcome)> early_answer;
  // What started the attempt, as its history shows it (store::ClaimRequest::trigger): empty for
  // a delivery, core::k_trigger_rerun for a re-run a user asked for.
  std::string trigger;
  // The front the attempt's span names (SPEC §12); empty: the kind's ("hook").
  std::string span_front;
};

// A delivery with a key, decided by the attempt engine under "{hook.path}#{key}" and run at most
// once per key: contract §6's table from "same key, different body" on. The fingerprint is the
// body.
front::Answer deliver_keyed(const Hook& hook, HookSlots& slots, const Delivery& delivery,
                            const DeliveryServices& services, const core::Key& key,
                            const DeliveryPolicy& policy);

// A delivery run without a key: nothing is stored, every one runs; the slots still cap it (503
// when they and the queue are full).
front::Answer deliver_unkeyed(const Hook& hook, HookSlots& slots, const DeliveryServices& services,
                              const DeliveryPolicy& policy);

}  // namespace idem::hooks
