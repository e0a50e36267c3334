#pragma once
// The attempt engine: the one place that orchestrates an attempt at a key. Claim (waiting while a
// live owner holds it, retrying an abandoned attempt once its processes are gone), then replay,
// refuse, or carry out an effect and record its outcome. Every front — run, each, begin/end,
// serve — drives it and only translates its verdicts into answers of its own (exit codes, HTTP
// statuses, report lines).
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/decision.hpp"
#include "core/key.hpp"
#include "core/notify.hpp"
#include "core/record.hpp"
#include "engine/trace.hpp"
#include "proc/liveness.hpp"
#include "store/replay_tally.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

namespace idem::engine {

class Notifier;  // engine/notify.hpp
class Effect;

// What a claim does while another live owner holds the key.
struct WaitPolicy {
  // Wait up to this long for the holder to end, then decide again; 0: the verdict is `running`
  // at once.
  int64_t wait_ms = 0;
  // Holders this returns true for are waited for without a limit (a front's own workers, say).
  std::function<bool(const core::Record& holder)> waits_without_limit;
  // Between two looks the pause doubles from the first to the largest.
  int64_t first_pause_ms = 10;
  int64_t max_pause_ms = 250;
};

struct AttemptRequest {
  // An attempt at `key`, whose record is named `scope` + "#" + the key in a scope (a hook's
  // path; the proxy's "proxy#SCOPE"), else the key itself: claim.key, set here only.
  explicit AttemptRequest(const core::Key& key, const std::string& scope = "") {
    claim.key = scope.empty() ? key.str() : scope + "#" + key.str();
  }

  // What is claimed (its record's name, fingerprint, kind, owner, TTL, request, policy). The
  // engine sets `now_ms` at every look, from its clock, and `lease_ms`, when left 0, to its
  // front's lease (a front whose clients keep the lease, the ledger, sets it itself).
  store::ClaimRequest claim;
  // When set, fills claim.owner before the first claim is written, and not before: a replay,
  // decided by a read, never describes its process (four files of /proc and /etc read).
  std::function<core::Owner()> describe_owner;
  // When set, fills claim.request the same way: a replay never builds what would be stored of
  // the request it answers (a delivery's headers and body, as JSON).
  std::function<std::string()> describe_request;
  WaitPolicy wait;
  // With claim.policy.retry_abandoned: called with an abandoned record before it is claimed
  // again. True: nothing of that attempt is left running, so it may run again now; false: the
  // verdict stays `abandoned`. It may throw to refuse in the front's own words. Not set: the
  // abandoned attempt is retried at once.
  std::function<bool(const core::Record& abandoned)> clear_abandoned;
  // With clear_abandoned: its false means the abandoned attempt's processes live on, and they
  // hold the key as a failed attempt's do (waited for as a live holder, then the verdict
  // `running`, `existing` the abandoned record), rather than the verdict staying `abandoned`.
  bool abandoned_leftovers_hold = false;
  // Called with a failed record whose command's process group was recorded, before the key runs
  // again (its failure is not final). True: nothing of that attempt is left running, so it may
  // run now; false: processes of it live on, and the key counts as held by them (waited for as
  // a live holder, then the verdict `running`, `existing` the failed record). It may throw to
  // refuse in the front's own words. Not set: a failure runs again at once.
  std::function<bool(const core::Record& failed)> clear_failed;
  // Called once, with the holder, when a wait begins.
  std::function<void(const core::Record& holder)> on_wait;
  // Called with the holder before every pause of a wait; throws to end the wait (a signal came).
  std::function<void(const core::Record& holder)> before_pause;
  // The caller has no room to carry the attempt out now (a hook at its concurrency limit): when a
  // look at the record says the attempt would run, the verdict is `declined` and nothing is
  // claimed. Any other verdict is answered as usual. A record that changes between the look and
  // the claim (a dead owner's, marked abandoned by the claim) is claimed all the same: the claim,
  // not the look, decides.
  bool decline_run = false;
  // In a serial group (claim.serial): whether a claim that queued the key waits its turn here
  // (`idem run --serial`: looks at the line, Store::take_turn, until the attempt starts, up to
  // turn_wait_ms; -1: without a limit), or returns at once with the verdict `queued` (a daemon
  // answers and starts it later). A wait that runs out, or that before_pause ends by throwing,
  // takes the key out of the line (Store::withdraw) first.
  bool wait_turn = false;
  int64_t turn_wait_ms = -1;
  // Called once, with the key's place in line (1: next), when a wait for its turn begins.
  std::function<void(int64_t position)> on_queued;
  // The effect the caller carries out once claimed, if it starts a command: a claim that would
  // run it prepares it first (Effect::prepare), so the claim records the command's group in its
  // own write, and undoes that if the claim goes another way. Null: the group is written when
  // the command starts (carry_out), in a write of its own.
  Effect* effect = nullptr;
  // With traces (Front::spans): the `traceparent` the attempt came with (a delivery's or a
  // proxied request's header, $TRACEPARENT of `idem run`), whose span is its span's parent when
  // valid; and the front its span names when the kind's is not the one (a hooks file's
  // delivery: "hooks-file").
  std::string traceparent;
  std::string span_front;
};

enum class ClaimVerdict {
  claimed,    // the caller holds a new attempt: carry it out (or hand it to the one that will)
  replay,     // a finished outcome stands (`existing`)
  conflict,   // the key was used with another fingerprint
  running,    // a live owner holds it, or a failed attempt's processes (after any wait)
  abandoned,  // the previous owner died mid-run and no retry was allowed, or its processes live
  declined,   // decline_run: the attempt would have run
  // Serial groups (store::SerialClaim):
  queued,      // the key waits its turn (`position`); with wait_turn, the wait ran out (`waited`)
  superseded,  // a newer key of its `latest` group replaced it before it ran (`existing`)
  full,        // its group's line is full: nothing was queued
};

struct Claimed {
  ClaimVerdict verdict = ClaimVerdict::declined;
  std::string key;
  int64_t attempt = 0;        // claimed: the attempt's number
  std::string attempt_token;  // claimed: its capability (heartbeat, release)
  std::string mark;           // claimed: what its processes carry (core::attempt_mark)
  int64_t lease_expires_ms = 0;
  // claimed with a lease: its length, and where it ends on this host's monotonic clock
  // (the engine's clock, read before the claim was sent: never later than the store's expiry).
  int64_t lease_ms = 0;
  int64_t lease_until_ms = 0;
  std::optional<core::Record> existing;  // every verdict but claimed and declined
  // claimed: the status of the record the attempt replaced (nullopt: none), which tells a
  // success after a failure (a notification's `recovered`).
  std::optional<core::Status> replaced_status;
  int64_t now_ms = 0;    // the time of the look that decided
  bool waited = false;   // running, queued: a wait began and ran out
  int64_t position = 0;  // queued: the key's place in its group's line (1: next)
  // Keys this claim superseded (a `latest` group's pending ones).
  std::vector<std::string> superseded;
  // claimed, with traces: the attempt's span, stored with its record, ended by carry_out.
  std::optional<AttemptSpan> span;
};

// The attempt an effect carries out.
struct Attempt {
  std::string key;
  int64_t number = 0;
  std::string token;
  std::string mark;  // core::attempt_mark: for the environment of every process it starts
  // Records the process group of the effect's command, durable before the command starts (so a
  // retry after a crash can find what it left running). Throws StoreError when it cannot be
  // recorded: the effect must then not start the command.
  std::function<void(const core::ProcessGroup&)> record_group;
  // Readable once the attempt's lease is lost (engine/lease_keeper.hpp): the effect stops what
  // it started. -1: the attempt has no lease.
  int lease_lost_fd = -1;
  // Where an effect that captures output hands each piece it keeps, as it comes, for followers
  // (engine/live_feed.hpp): the capture's bytes in order, up to what the outcome stores.
  std::function<void(core::Stream, std::string_view)> live;
  // With traces: the attempt's span as a W3C traceparent, for what the effect starts (the
  // command's TRACEPARENT, the upstream's traceparent header) to make its spans children of it.
  // Empty: none.
  std::string traceparent = {};
  // The store's upkeep (store::Store::upkeep), for an effect to call once while what it started
  // runs, so that the owner does it then rather than after the outcome. Never throws. Empty:
  // none.
  std::function<void()> meanwhile = {};
};

// What an attempt does once claimed: run a command now, forward a request to an upstream, ...
// (an effect a program carries out later, through begin/end or the ledger, is no Effect: its
// front claims, and finishes through Engine::finish).
class Effect {
 public:
  virtual ~Effect() = default;
  // Carries the attempt out and returns the outcome to record (finished_ms 0: the engine sets
  // it). The effect's own failures are outcomes; what it throws leaves the attempt unrecorded.
  virtual core::Outcome perform(const Attempt& attempt) = 0;
  // For an error when the outcome cannot be recorded: "the command ran (exit 3)".
  virtual std::string performed() const = 0;
  // Called before a claim that would carry this effect out (AttemptRequest::effect): makes ready
  // what it starts, so that the claim can record it. The process group of the command it will
  // start, created and waiting; nullopt: nothing made ready (perform() records the group itself).
  virtual std::optional<core::ProcessGroup> prepare() { return std::nullopt; }
  // The claim did not go to this effect: undoes prepare() before anything of it ran.
  virtual void unprepare() {}
  // Whether `outcome` is given up instead of recorded: the attempt is released (Store::release),
  // so the next claim decides as if it had never been claimed. A proxy does this for an
  // upstream that failed or answered 5xx, so the client's retry goes through.
  virtual bool release_instead(const core::Outcome&) const { return false; }
};

struct Finished {
  core::Outcome outcome;
  bool recorded = false;  // false: another attempt took the key over meanwhile; nothing stored
  bool released = false;  // the effect asked for a release and the store did it (not recorded)
};

// What the engines of one front (run, each, begin/end, serve's hooks, proxy, ledger) share: the
// clock, the same-host liveness check of a recorded owner, and the lease its claims carry.
struct Front {
  const util::Clock* clock = &util::process_clock();
  store::OwnerGone owner_gone = proc::owner_gone;
  // Of every claim the front makes for an effect of its own process (0: none). A lease is what
  // tells another host that this one is gone, so make_front keeps it only on a store shared by
  // hosts (Store::spans_hosts); on a store of one host the owner's pid tells it sooner.
  int64_t lease_ms = 0;
  // The notify command of the front's attempts (null: none) and what runs it. The engine tells
  // it of an attempt that failed, was found abandoned, lost its lease, or recovered.
  std::shared_ptr<const core::NotifySpec> notify;
  std::shared_ptr<Notifier> notifier;
  // Where its replays are counted: a tally the front flushes itself (the daemon, `each`, and
  // `run` after the replayed output), or, when none, the store at once, unsynced, each replay
  // its own short write. A failure to count never fails the replay.
  std::shared_ptr<store::ReplayTally> replays;
  // Where the spans of its attempts go (SPEC §12); null: traces are off, and nothing of them is
  // made.
  std::shared_ptr<SpanSink> spans;
};

// The front of this process's attempts on `store` (any connection of it): the process clock,
// proc::owner_gone, and `lease_ms` (--lease) when the store spans hosts, else none.
Front make_front(const store::Store& store, int64_t lease_ms);
// The same with another clock and no lease of its own: a front whose clients keep their leases.
Front make_front(const util::Clock& clock);

class Engine {
 public:
  // `store`: the connection this engine uses (one per thread for SQLite).
  Engine(store::Store& store, const Front& front);
  // `owner_gone` is the same-host liveness check of a recorded owner (proc::owner_gone).
  Engine(store::Store& store, const util::Clock& clock, store::OwnerGone owner_gone);

  // Decides the attempt: claims the key, waits as `request.wait` says while a live owner holds
  // it, and retries an abandoned attempt only once `clear_abandoned` has seen it is clear.
  // With traces, the attempt gets a span (Claimed::span, stored with the claim), and an attempt
  // that does not run (a replay, a refusal) a short span of its own, ended here.
  Claimed claim(AttemptRequest& request);

  // Carries out a claimed attempt and records its outcome under the attempt's number. Throws
  // StoreError when the outcome cannot be recorded (saying that the effect was performed), or
  // when the command's group could not be recorded (the command did not start, and the record
  // says so when the store still takes it).
  // An attempt claimed with a lease has it renewed while the effect runs; the outcome is written
  // again after a transient failure until the lease runs out. A lease lost meanwhile stops the
  // effect, records nothing (the attempt counts as abandoned) and throws a transient StoreError;
  // so does an outcome the store refuses under a lease (it ran out while this process was
  // paused, or another attempt took over).
  // An outcome the effect gives up (Effect::release_instead) is not recorded: the attempt is
  // released with its token (Finished::released; false when another attempt holds the key), and
  // a StoreError from the release is rethrown saying what was performed.
  // With traces, the attempt's span ends here, whatever the outcome (SPEC §12).
  Finished carry_out(const Claimed& claimed, Effect& effect);

  // The key's record as it stands (idem end checks whose attempt it is before finishing it).
  std::optional<core::Record> current(const std::string& key) { return store_.get(key); }

  // Records the process group that belongs to a claimed attempt carried out elsewhere (the
  // group a begin's script leads); false when the attempt is no longer the key's current one.
  bool record_group(const Claimed& claimed, const core::ProcessGroup& group);

  // Records an outcome for an attempt carried out elsewhere (idem end, the ledger): false when
  // the key's current attempt is another one. With traces, the span its claim stored ends here.
  bool finish(const std::string& key, int64_t attempt, core::Outcome outcome);

  // Records `failed` (its status set to failed, finished now unless set) for a claimed attempt
  // whose effect could not be carried out (an error of the caller's own after the claim), so a
  // retry may run it rather than find it running for good. False when the store fails again (or
  // another attempt holds the key): the attempt is left to be judged abandoned, and the caller
  // says so where it reports the first failure.
  bool record_failure(const Claimed& claimed, core::Outcome failed);

  // Starts the head of serial group `group`'s line, whoever queued it (a daemon runs the
  // deliveries queued by any daemon of its hooks), as `owner`'s attempt with this front's lease:
  // the attempt to carry out now, its record (with the stored request) in `existing`; nullopt
  // when an attempt of the group runs or nothing waits. A running attempt of the group whose
  // owner is gone is marked abandoned first (and notified), or with `requeue_abandoned` waits
  // again at the head of the line.
  // `left_behind`: store::SerialClaim's; `sync`: store::TurnRequest's.
  std::optional<Claimed> take_turn(const std::string& group, const core::Owner& owner,
                                   bool requeue_abandoned, store::RunnerLeftovers left_behind,
                                   bool sync = true);

  const util::Clock& clock() const { return clock_; }

 private:
  // Claim's decision, without traces.
  Claimed decide(AttemptRequest& request);
  // carry_out without traces; `traceparent` is handed to the effect (Attempt::traceparent).
  Finished carry_out_untraced(const Claimed& claimed, Effect& effect, std::string traceparent);
  // Hands an ended span to spans_ unless its trace is not sampled.
  void end_span(const AttemptSpan& span, SpanEnd end);
  store::ClaimResult claim_once(AttemptRequest& request);
  // Waits in line for the attempt `queued` put there (AttemptRequest::wait_turn): the attempt
  // once started; the verdict `queued` when the wait ran out (the key withdrawn); nullopt when
  // the key left the line otherwise (removed), so the claim decides again.
  std::optional<Claimed> wait_turn(AttemptRequest& request, const store::ClaimResult& queued);
  // The claim of an attempt a read found would run (`would_run`), or one only a claim can decide:
  // with the group of request.effect's command, prepared first, when it would run.
  store::ClaimResult claim_with_effect(AttemptRequest& request, bool would_run);
  // What a read of the key decides without a write, or nullopt when only a claim can decide
  // (`would_run`: the attempt would run; else a dead owner's record must be marked abandoned).
  std::optional<store::ClaimResult> look(AttemptRequest& request, bool& would_run);
  void count_replay(const std::string& key, int64_t now_ms);

  void release(const Claimed& claimed, const Effect& effect, Finished& done);
  bool notifies(core::NotifyEvent event) const;
  // Runs the notify command for `event` of `record` (never throws).
  void notify(core::NotifyEvent event, const core::Record& record);
  // The document of `event` for `record`: its output read through `output` when given (the
  // record then comes without it), else the record's own; a corrupt output is left out.
  std::string notify_document(core::NotifyEvent event, const core::Record& record,
                              const core::EncodedReader* output);
  // The same for the attempt just recorded, read back from the store.
  void notify_recorded(core::NotifyEvent event, const std::string& key, int64_t attempt);
  void notify_lease_lost(const Claimed& claimed, const core::Outcome& outcome,
                         const std::string& why);
  // What an attempt that left no record knows of itself (a lease lost, a released failure).
  static core::Record attempt_record(const Claimed& claimed, const core::Outcome& outcome,
                                     core::Status status, std::string note);
  bool finish_within_lease(const Claimed& claimed, const core::Outcome& outcome, int64_t until_ms);

  store::Store& store_;
  const util::Clock& clock_;
  store::OwnerGone owner_gone_;
  const int64_t lease_ms_;
  std::shared_ptr<const core::NotifySpec> notify_;
  std::shared_ptr<Notifier> notifier_;
  const std::shared_ptr<store::ReplayTally> replays_;
  const std::shared_ptr<SpanSink> spans_;
  // Held around every store call of carry_out: a lease's renewals come from a thread of their
  // own, on the same connection.
  std::mutex store_mutex_;
};

std::string_view to_string(ClaimVerdict verdict);

// What is left running of an abandoned or failed attempt (its command's process group: a
// script's background jobs survive idem's kill -9, and may outlive a command that exited). A
// retry must never overlap it.
enum class Leftovers {
  none,      // nothing: it may be retried
  alive,     // processes live on
  survived,  // with `stop`: they outlived TERM and KILL
  // processes live in a group of the recorded number, none proven the attempt's (proc::GroupLook):
  // it may be retried, and they are neither waited for nor stopped; the user is told
  unproven,
};
// Looks at the attempt's group; with `stop`, first sends it TERM, then KILL after `grace_ms`
// (--kill-stale), only when it is proven the attempt's.
Leftovers clear_leftovers(const core::Record& previous, bool stop, int64_t grace_ms);

}  // namespace idem::engine
