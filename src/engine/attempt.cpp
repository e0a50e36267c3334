#include "engine/attempt.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "engine/lease_keeper.hpp"
#include "engine/live_feed.hpp"
#include "engine/notify.hpp"
#include "proc/liveness.hpp"
#include "util/crash_point.hpp"

namespace idem::engine {

namespace {

ClaimVerdict verdict_of(core::Verdict v) {
  switch (v) {
    case core::Verdict::claim:
      return ClaimVerdict::claimed;
    case core::Verdict::replay:
      return ClaimVerdict::replay;
    case core::Verdict::conflict:
      return ClaimVerdict::conflict;
    case core::Verdict::running:
      return ClaimVerdict::running;
    case core::Verdict::abandoned:
      return ClaimVerdict::abandoned;
    case core::Verdict::leftovers:
      return ClaimVerdict::running;  // Engine::claim checks them first
    case core::Verdict::queued:
      return ClaimVerdict::queued;
    case core::Verdict::superseded:
      return ClaimVerdict::superseded;
    case core::Verdict::full:
      return ClaimVerdict::full;
  }
  return ClaimVerdict::abandoned;
}

// `lease_ms` and `sent_ms` (this host's monotonic time before the claim was sent) place the
// lease of a leased claim on this host's clock.
Claimed claimed_from(const std::string& key, store::ClaimResult result, int64_t now_ms,
                     int64_t lease_ms = 0, int64_t sent_ms = 0) {
  Claimed c;
  c.verdict = verdict_of(result.verdict);
  c.key = key;
  c.attempt = result.attempt;
  c.attempt_token = std::move(result.attempt_token);
  c.lease_expires_ms = result.lease_expires_ms;
  if (c.verdict == ClaimVerdict::claimed && c.lease_expires_ms != 0) {
    c.lease_ms = lease_ms;
    c.lease_until_ms = sent_ms + lease_ms;
  }
  c.existing = std::move(result.existing);
  c.replaced_status = result.replaced_status;
  c.now_ms = now_ms;
  c.position = result.position;
  c.superseded = std::move(result.superseded);
  return c;
}

}  // namespace

std::string_view to_string(ClaimVerdict verdict) {
  switch (verdict) {
    case ClaimVerdict::claimed:
      return "claimed";
    case ClaimVerdict::replay:
      return "replay";
    case ClaimVerdict::conflict:
      return "conflict";
    case ClaimVerdict::running:
      return "running";
    case ClaimVerdict::abandoned:
      return "abandoned";
    case ClaimVerdict::declined:
      return "declined";
    case ClaimVerdict::queued:
      return "queued";
    case ClaimVerdict::superseded:
      return "superseded";
    case ClaimVerdict::full:
      return "full";
  }
  return "?";
}

Leftovers clear_leftovers(const core::Record& previous, bool stop, int64_t grace_ms) {
  const std::string mark = core::attempt_mark(previous);
  switch (proc::look_at_group(previous.owner, previous.process_group, mark)) {
    case proc::GroupLook::empty:
      proc::remove_empty_cgroup(previous.owner, previous.process_group);
      return Leftovers::none;
    case proc::GroupLook::unproven:
      return Leftovers::unproven;
    case proc::GroupLook::ours:
      break;
  }
  if (!stop) return Leftovers::alive;
  return proc::kill_process_group(previous.owner, previous.process_group, mark, grace_ms)
             ? Leftovers::none
             : Leftovers::survived;
}

Front make_front(const store::Store& store, int64_t lease_ms) {
  Front front = make_front(util::process_clock());
  if (store.spans_hosts()) front.lease_ms = lease_ms;
  return front;
}

Front make_front(const util::Clock& clock) {
  Front front;
  front.clock = &clock;
  return front;
}

Engine::Engine(store::Store& store, const Front& front)
    : store_(store),
      clock_(*front.clock),
      owner_gone_(front.owner_gone),
      lease_ms_(front.lease_ms),
      notify_(front.notify),
      notifier_(front.notifier),
      replays_(front.replays),
      spans_(front.spans) {}

Engine::Engine(store::Store& store, const util::Clock& clock, store::OwnerGone owner_gone)
    : Engine(store, Front{&clock, std::move(owner_gone), 0, nullptr, nullptr, nullptr, nullptr}) {}

store::ClaimResult Engine::claim_once(AttemptRequest& request) {
  if (request.describe_owner) {
    request.claim.owner = request.describe_owner();
    request.describe_owner = nullptr;
  }
  if (request.describe_request) {
    request.claim.request = request.describe_request();
    request.describe_request = nullptr;
  }
  request.claim.now_ms = clock_.now_ms();
  return store_.claim(request.claim, owner_gone_);
}

store::ClaimResult Engine::claim_with_effect(AttemptRequest& request, bool would_run) {
  Effect* const effect = would_run ? request.effect : nullptr;
  request.claim.group = effect ? effect->prepare() : std::nullopt;
  if (!request.claim.group) return claim_once(request);
  store::ClaimResult result;
  try {
    result = claim_once(request);
  } catch (...) {
    effect->unprepare();
    throw;
  }
  if (result.verdict != core::Verdict::claim) effect->unprepare();
  request.claim.group.reset();
  return result;
}

std::optional<store::ClaimResult> Engine::look(AttemptRequest& request, bool& would_run) {
  request.claim.now_ms = clock_.now_ms();
  std::optional<core::Record> existing = store_.get(request.claim.key);
  const bool gone =
      existing && core::owner_counts_gone(*existing, request.claim.now_ms, owner_gone_);
  const core::Decision d = core::decide(existing ? &*existing : nullptr, request.claim.fingerprint,
                                        request.claim.now_ms, gone, request.claim.policy);
  would_run = d.verdict == core::Verdict::claim;
  // A queued key's place in line is the claim's to count.
  if (would_run || d.mark_abandoned || d.verdict == core::Verdict::queued) return std::nullopt;
  store::ClaimResult answer;
  answer.verdict = d.verdict;
  existing->attempt_token.clear();  // the holder's capability is never handed to another
  answer.existing = std::move(existing);
  return answer;
}

void Engine::count_replay(const std::string& key, int64_t now_ms) {
  if (replays_) {
    replays_->add(key, now_ms);
    return;
  }
  // A statistic: a store that cannot take the write now (read-only, busy past its timeout) loses
  // this count, never the replay.
  try {
    const store::ReplayCount count{key, 1, now_ms};
    store_.count_replays({&count, 1});
  } catch (const StoreError&) {
  }
}

Claimed Engine::claim(AttemptRequest& request) {
  if (!spans_) return decide(request);
  const std::string& trigger = request.claim.trigger;
  std::optional<AttemptSpan> span = open_span(
      request.traceparent,
      request.span_front.empty() ? span_front(request.claim.kind) : request.span_front,
      trigger.empty() ? core::trigger_of_kind(request.claim.kind) : trigger, clock_.now_ns());
  if (span) request.claim.span = span->ids();  // stored with the attempt it claims
  Claimed claimed = decide(request);
  if (!span) return claimed;
  switch (claimed.verdict) {
    case ClaimVerdict::claimed:
      claimed.span = std::move(span);
      return claimed;
    case ClaimVerdict::declined:
      return claimed;  // nothing was claimed: the caller tries again later
    case ClaimVerdict::queued:
      // Its record keeps the span, which ends once its turn came and it ran; one that waited in
      // vain left the line, and its span ends here.
      if (!claimed.waited) return claimed;
      break;
    default:
      break;
  }
  SpanEnd end;
  end.key = claimed.key;
  end.outcome = claimed.verdict == ClaimVerdict::replay ? "replayed" : to_string(claimed.verdict);
  if (claimed.existing) {
    const core::Record& r = *claimed.existing;
    end.attempt = r.attempt;
    if (claimed.verdict == ClaimVerdict::replay) {
      if (r.response)
        end.http_status = r.response->status;
      else
        end.exit_code = core::replay_exit_code(r);
      if (!r.span.span_id.empty())
        end.replayed = core::SpanContext{r.span.trace_id, r.span.span_id};
    }
  }
  end.end_ns = clock_.now_ns();
  end_span(*span, std::move(end));
  return claimed;
}

void Engine::end_span(const AttemptSpan& span, SpanEnd end) {
  if (span.context.sampled) spans_->add(ended_span(span, end));
}

Claimed Engine::decide(AttemptRequest& request) {
  const std::string& key = request.claim.key;
  core::Policy& policy = request.claim.policy;
  // An abandoned attempt is retried only once clear_abandoned has looked at it: claim allowing no
  // retry, check the attempt the claim names, then claim allowing exactly that one (another may
  // have been abandoned meanwhile, and is checked in turn).
  if (request.claim.lease_ms == 0) request.claim.lease_ms = lease_ms_;
  const bool checks_abandoned = policy.retry_abandoned && request.clear_abandoned;
  if (checks_abandoned) policy.retry_only_attempt = -1;
  // The same for a failed attempt run again: what it left running is checked first.
  if (request.clear_failed) policy.rerun_failed_only_attempt = -1;
  const int64_t give_up = clock_.monotonic_ms() + request.wait.wait_ms;
  int64_t pause_ms = request.wait.first_pause_ms;
  bool waiting = false;
  for (;;) {
    // A read decides what it can (a replay, a conflict, a live holder: most attempts at a used
    // key) without the writer lock, so replays never queue behind writers; only an attempt that
    // would run, or a dead owner's record to mark, takes the claim's write transaction.
    bool would_run = false;
    std::optional<store::ClaimResult> read = look(request, would_run);
    if (!read && would_run && request.decline_run) {
      Claimed declined;
      declined.key = key;
      declined.now_ms = request.claim.now_ms;
      return declined;
    }
    const int64_t sent_ms = read ? 0 : clock_.monotonic_ms();
    store::ClaimResult result = read ? std::move(*read) : claim_with_effect(request, would_run);
    // This claim found the owner gone and marked the attempt abandoned: the one to tell.
    if (result.marked_abandoned && notifies(core::NotifyEvent::abandoned))
      notify(core::NotifyEvent::abandoned, *result.marked_abandoned);
    if (result.verdict == core::Verdict::abandoned && checks_abandoned &&
        policy.retry_only_attempt != result.existing->attempt) {
      if (request.clear_abandoned(*result.existing)) {
        policy.retry_only_attempt = result.existing->attempt;
        continue;
      }
      if (request.abandoned_leftovers_hold) result.verdict = core::Verdict::running;
    }
    if (result.verdict == core::Verdict::leftovers) {
      if (request.clear_failed(*result.existing)) {
        policy.rerun_failed_only_attempt = result.existing->attempt;
        continue;
      }
      // Its processes live on: they hold the key as a live owner would, until they end.
      result.verdict = core::Verdict::running;
    }
    if (result.verdict == core::Verdict::replay) count_replay(key, request.claim.now_ms);
    // This claim queued the key (it holds its token): wait for its turn here, or tell the caller.
    if (result.verdict == core::Verdict::queued && request.wait_turn &&
        !result.attempt_token.empty()) {
      if (std::optional<Claimed> turn = wait_turn(request, result)) return std::move(*turn);
      continue;
    }
    if (result.verdict != core::Verdict::running) {
      Claimed claimed = claimed_from(key, std::move(result), request.claim.now_ms,
                                     request.claim.lease_ms, sent_ms);
      if (claimed.verdict == ClaimVerdict::claimed)
        claimed.mark = core::attempt_mark(key, claimed.attempt, request.claim.owner);
      return claimed;
    }
    const core::Record& holder = *result.existing;
    if (request.before_pause) request.before_pause(holder);
    const bool unlimited =
        request.wait.waits_without_limit && request.wait.waits_without_limit(holder);
    const int64_t left = give_up - clock_.monotonic_ms();
    if (!unlimited && left <= 0) return claimed_from(key, std::move(result), request.claim.now_ms);
    if (!waiting && request.on_wait) request.on_wait(holder);
    waiting = true;
    clock_.sleep_ms(unlimited ? pause_ms : std::clamp<int64_t>(left, 1, pause_ms));
    pause_ms = std::min(pause_ms * 2, request.wait.max_pause_ms);
  }
}

namespace {

// The attempt a turn started (Store::take_turn), as a claim would have handed it out; `sent_ms`
// (this host's monotonic time before the look was sent) places its lease on this host's clock.
Claimed claimed_from_turn(const store::TurnResult& t, const store::TurnRequest& turn,
                          int64_t sent_ms) {
  Claimed c;
  c.verdict = ClaimVerdict::claimed;
  c.key = t.record->key;
  c.attempt = t.record->attempt;
  c.attempt_token = t.attempt_token;
  c.mark = core::attempt_mark(c.key, c.attempt, turn.owner);
  c.lease_expires_ms = t.lease_expires_ms;
  if (c.lease_expires_ms != 0) {
    c.lease_ms = turn.lease_ms;
    c.lease_until_ms = sent_ms + c.lease_ms;
  }
  c.now_ms = turn.now_ms;
  return c;
}

// A wait in line that ran out: the key is out of the line, nothing ran.
Claimed turn_given_up(const std::string& key, int64_t position, int64_t now_ms) {
  Claimed out;
  out.verdict = ClaimVerdict::queued;
  out.key = key;
  out.waited = true;
  out.position = position;
  out.now_ms = now_ms;
  return out;
}

}  // namespace

std::optional<Claimed> Engine::wait_turn(AttemptRequest& request,
                                         const store::ClaimResult& queued) {
  store::TurnRequest turn;
  turn.group = request.claim.serial->group;
  turn.key = request.claim.key;
  turn.token = queued.attempt_token;
  turn.owner = request.claim.owner;
  turn.lease_ms = request.claim.lease_ms;
  turn.left_behind = request.claim.serial->left_behind;
  // Stands for the key while it waits, for before_pause.
  core::Record waiting;
  waiting.key = turn.key;
  waiting.status = core::Status::queued;
  waiting.serial_group = turn.group;
  int64_t position = queued.position;
  if (request.on_queued) request.on_queued(position);
  const int64_t give_up =
      request.turn_wait_ms < 0 ? INT64_MAX : clock_.monotonic_ms() + request.turn_wait_ms;
  int64_t pause_ms = request.wait.first_pause_ms;
  // A lease (a store shared by hosts) is renewed while the key waits, a third of it at a time.
  int64_t renewed_ms = clock_.monotonic_ms();
  try {
    for (;;) {
      if (request.before_pause) request.before_pause(waiting);
      const int64_t left = give_up - clock_.monotonic_ms();
      if (left <= 0) {
        store_.withdraw(turn.key, turn.token);
        return turn_given_up(turn.key, position, clock_.now_ms());
      }
      clock_.sleep_ms(std::clamp<int64_t>(left, 1, pause_ms));
      pause_ms = std::min(pause_ms * 2, request.wait.max_pause_ms);
      const int64_t sent_ms = clock_.monotonic_ms();
      turn.renew_lease = turn.lease_ms > 0 && sent_ms - renewed_ms >= turn.lease_ms / 3;
      turn.now_ms = clock_.now_ms();
      const store::TurnResult t = store_.take_turn(turn, owner_gone_);
      if (turn.renew_lease) renewed_ms = sent_ms;
      if (t.marked_abandoned && notifies(core::NotifyEvent::abandoned))
        notify(core::NotifyEvent::abandoned, *t.marked_abandoned);
      if (t.state == store::TurnResult::State::started) return claimed_from_turn(t, turn, sent_ms);
      if (t.state != store::TurnResult::State::waiting) return std::nullopt;  // left the line
      position = t.position;
    }
  } catch (...) {
    // Out of the line, whatever ended the wait (a signal, a lost store): never left holding a
    // place nobody will take. A store that cannot be reached now leaves it to be judged gone.
    try {
      store_.withdraw(turn.key, turn.token);
    } catch (const StoreError&) {
    }
    throw;
  }
}

std::optional<Claimed> Engine::take_turn(const std::string& group, const core::Owner& owner,
                                         bool requeue_abandoned, store::RunnerLeftovers left_behind,
                                         bool sync) {
  store::TurnRequest turn;
  turn.group = group;
  turn.owner = owner;
  turn.lease_ms = lease_ms_;
  turn.requeue_abandoned = requeue_abandoned;
  turn.left_behind = std::move(left_behind);
  turn.sync = sync;
  const int64_t sent_ms = clock_.monotonic_ms();
  turn.now_ms = clock_.now_ms();
  store::TurnResult t = store_.take_turn(turn, owner_gone_);
  if (t.marked_abandoned && notifies(core::NotifyEvent::abandoned))
    notify(core::NotifyEvent::abandoned, *t.marked_abandoned);
  if (t.state != store::TurnResult::State::started) return std::nullopt;
  Claimed claimed = claimed_from_turn(t, turn, sent_ms);
  claimed.existing = std::move(t.record);
  // Its span is the one its claim stored when it queued it (SPEC §12).
  if (spans_) claimed.span = stored_span(*claimed.existing);
  return claimed;
}

Finished Engine::carry_out(const Claimed& claimed, Effect& effect) {
  if (!spans_ || !claimed.span) return carry_out_untraced(claimed, effect, std::string());
  const AttemptSpan& span = *claimed.span;
  try {
    Finished done = carry_out_untraced(claimed, effect, core::traceparent(span.context));
    SpanEnd end = outcome_end(claimed.key, claimed.attempt, done.outcome, clock_.now_ns());
    if (done.released) end.outcome = "released";
    end_span(span, std::move(end));
    return done;
  } catch (const std::exception& e) {
    SpanEnd end;
    end.key = claimed.key;
    end.attempt = claimed.attempt;
    end.outcome = "error";
    end.error = e.what();
    end.end_ns = clock_.now_ns();
    end_span(span, std::move(end));
    throw;
  }
}

Finished Engine::carry_out_untraced(const Claimed& claimed, Effect& effect,
                                    std::string traceparent) {
  // The claim is durable: from here on, a crash shows as abandoned, never as a key that silently
  // runs again.
  IDEM_CRASH_POINT("claim-after-commit");
  bool group_unrecorded = false;
  LiveFeed feed(store_, store_mutex_, clock_, claimed.key, claimed.attempt);
  Attempt attempt{
      claimed.key, claimed.attempt, claimed.attempt_token, claimed.mark,
      [&](const core::ProcessGroup& group) {
        try {
          std::lock_guard lock(store_mutex_);
          store_.set_process_group(claimed.key, claimed.attempt, group);
        } catch (const StoreError&) {
          group_unrecorded = true;
          throw;
        }
      },
      -1,
      // Its output is published for followers as it comes (SPEC §10).
      [&feed](core::Stream stream, std::string_view bytes) { feed.push(stream, bytes); },
      std::move(traceparent),
      // A checkpoint due, done while the command runs instead of after its outcome.
      [this] {
        try {
          std::lock_guard lock(store_mutex_);
          store_.upkeep();
        } catch (const std::exception&) {
          // Upkeep only: the next writer does it.
        }
      }};
  std::optional<LeaseKeeper> keeper;
  if (claimed.lease_ms > 0) {
    keeper.emplace(
        clock_,
        [&] {
          std::lock_guard lock(store_mutex_);
          return store_.heartbeat(claimed.key, claimed.attempt_token, claimed.lease_ms,
                                  clock_.now_ms());
        },
        claimed.lease_ms, claimed.lease_until_ms);
    attempt.lease_lost_fd = keeper->lost_fd();
  }
  Finished done;
  try {
    done.outcome = effect.perform(attempt);
  } catch (const StoreError& e) {
    if (!group_unrecorded) throw;
    // The command was stopped before it could start: say so in the record if the store still
    // takes it, rather than leave it to look abandoned.
    core::Outcome not_run;
    not_run.note = "not started: its process group could not be recorded";
    record_failure(claimed, std::move(not_run));
    throw StoreError(std::string(e.what()) + "; the command did not start", e.failure());
  }
  // Nothing more is published once the effect is done: the outcome's output holds it all.
  feed.stop();
  IDEM_CRASH_POINT("exited-before-finish");
  if (done.outcome.finished_ms == 0) done.outcome.finished_ms = clock_.now_ms();
  const auto lease_lost = [&](const std::string& why) {
    notify_lease_lost(claimed, done.outcome, why);
    return StoreError("key '" + core::display_key(claimed.key) + "': its lease was lost (" + why +
                          "), so the attempt counts as abandoned; " + effect.performed() +
                          " and its outcome was not recorded",
                      StoreFailure::transient);
  };
  if (keeper) {
    keeper->stop();
    // The keeper may not have looked since the lease ended (this process was paused).
    if (keeper->lost()) throw lease_lost(keeper->why_lost());
    if (clock_.monotonic_ms() >= keeper->until_ms())
      throw lease_lost("it ran out before a renewal got through");
  }
  if (effect.release_instead(done.outcome)) {
    release(claimed, effect, done);
    // Given up, not stored, yet a failure all the same (an upstream's 5xx): told as one.
    if (core::outcome_failed(done.outcome) && notifies(core::NotifyEvent::failed) &&
        core::finish_event(claimed.replaced_status, done.outcome, notify_->on))
      notify(core::NotifyEvent::failed,
             attempt_record(claimed, done.outcome, core::Status::failed,
                            "released: " + done.outcome.note + " (not stored)"));
    return done;
  }
  try {
    done.recorded = keeper ? finish_within_lease(claimed, done.outcome, keeper->until_ms())
                           : store_.finish(claimed.key, claimed.attempt, done.outcome);
  } catch (const StoreError& e) {
    throw StoreError(std::string(e.what()) + "; " + effect.performed() +
                         " but its outcome could not be recorded" +
                         (keeper ? " before its lease ran out: the key counts as abandoned" : ""),
                     e.failure());
  }
  // Refused under a lease: it ran out, or another attempt holds the key; either way this
  // attempt's lease is lost.
  if (keeper && !done.recorded) throw lease_lost("the store refused the outcome");
  IDEM_CRASH_POINT("finish-after-commit");
  if (done.recorded && notify_) {
    const auto event = core::finish_event(claimed.replaced_status, done.outcome, notify_->on);
    if (event && notifies(*event)) notify_recorded(*event, claimed.key, claimed.attempt);
  }
  return done;
}

bool Engine::notifies(core::NotifyEvent event) const {
  return notify_ && notifier_ && core::notifies(notify_->on, event);
}

void Engine::notify(core::NotifyEvent event, const core::Record& record) {
  notifier_->fire(notify_, event, record.key, notify_document(event, record, nullptr));
}

std::string Engine::notify_document(core::NotifyEvent event, const core::Record& record,
                                    const core::EncodedReader* output) {
  std::string document;
  try {
    document = core::notify_document(event, record, clock_.now_ms(), notify_->stream_bytes, output);
  } catch (const std::exception&) {
    // A corrupt stored output: the record without it still says what happened.
    core::Record bare = record;
    bare.output.clear();
    document = core::notify_document(event, bare, clock_.now_ms(), notify_->stream_bytes);
  }
  return document;
}

void Engine::notify_recorded(core::NotifyEvent event, const std::string& key, int64_t attempt) {
  // The record without its output, which is read a window at a time for the document's ends:
  // an output of any size costs the notification no more than the document.
  std::optional<core::Record> record;
  try {
    record = store_.get_without_output(key);
  } catch (const StoreError&) {
    // Told below from what is known of it.
  }
  if (record && record->attempt == attempt) {
    record->attempt_token.clear();
    std::string document;
    {
      // Dropped before the notify command runs: a reader holds its connection's read.
      std::unique_ptr<store::OutputReader> reader;
      try {
        reader = store_.open_output(key, attempt);
      } catch (const StoreError&) {
        // The document then tells the record without its output.
      }
      const core::EncodedReader read = [&reader](int64_t offset, int64_t length) {
        return reader ? reader->read(offset, length) : std::string();
      };
      document = notify_document(event, *record, &read);
    }
    notifier_->fire(notify_, event, key, std::move(document));
    return;
  }
  // Gone already (removed, taken over): tell what this attempt was.
  core::Record gone;
  gone.key = key;
  gone.attempt = attempt;
  gone.status =
      event == core::NotifyEvent::recovered ? core::Status::succeeded : core::Status::failed;
  notify(event, gone);
}

void Engine::notify_lease_lost(const Claimed& claimed, const core::Outcome& outcome,
                               const std::string& why) {
  if (!notifies(core::NotifyEvent::lease_lost)) return;
  // The store may be what is lost: the record is what this attempt knows of itself.
  notify(core::NotifyEvent::lease_lost,
         attempt_record(claimed, outcome, core::Status::abandoned, "lease lost: " + why));
}

core::Record Engine::attempt_record(const Claimed& claimed, const core::Outcome& outcome,
                                    core::Status status, std::string note) {
  core::Record r;
  r.key = claimed.key;
  r.attempt = claimed.attempt;
  r.status = status;
  r.started_ms = claimed.now_ms;
  r.finished_ms = outcome.finished_ms;
  r.exit_code = outcome.exit_code;
  r.signal = outcome.signal;
  r.timed_out = outcome.timed_out;
  r.response = outcome.response;
  r.lease_expires_ms = claimed.lease_expires_ms;
  r.note = std::move(note);
  return r;
}

void Engine::release(const Claimed& claimed, const Effect& effect, Finished& done) {
  try {
    done.released = store_.release(claimed.key, claimed.attempt_token);
  } catch (const StoreError& e) {
    throw StoreError(
        std::string(e.what()) + "; " + effect.performed() + " but the key could not be released",
        e.failure());
  }
}

// A store over a network may fail for a while (a server restarting): the outcome is written
// again, after growing pauses, until the lease it is written under runs out.
bool Engine::finish_within_lease(const Claimed& claimed, const core::Outcome& outcome,
                                 int64_t until_ms) {
  for (int64_t pause_ms = 50;; pause_ms = std::min<int64_t>(pause_ms * 2, 1000)) {
    try {
      return store_.finish(claimed.key, claimed.attempt, outcome);
    } catch (const StoreError& e) {
      const int64_t left_ms = until_ms - clock_.monotonic_ms();
      if (!e.transient() || left_ms <= 0) throw;
      // The last try comes as the lease ends (a write after it is refused, and says so).
      clock_.sleep_ms(std::min(pause_ms, left_ms));
    }
  }
}

bool Engine::record_group(const Claimed& claimed, const core::ProcessGroup& group) {
  return store_.set_process_group(claimed.key, claimed.attempt, group);
}

bool Engine::finish(const std::string& key, int64_t attempt, core::Outcome outcome) {
  if (outcome.finished_ms == 0) outcome.finished_ms = clock_.now_ms();
  // The span its claim stored, read before the outcome replaces the attempt's state. A store
  // that cannot be read now loses the span, never the outcome.
  std::optional<AttemptSpan> span;
  if (spans_) try {
      std::optional<core::Record> r = store_.get_without_output(key);
      if (r && r->attempt == attempt) span = stored_span(*r);
    } catch (const StoreError&) {
    }
  const bool recorded = store_.finish(key, attempt, outcome);
  if (span && recorded) end_span(*span, outcome_end(key, attempt, outcome, clock_.now_ns()));
  return recorded;
}

bool Engine::record_failure(const Claimed& claimed, core::Outcome failed) {
  failed.status = core::Status::failed;
  if (failed.finished_ms == 0) failed.finished_ms = clock_.now_ms();
  bool recorded = false;
  try {
    recorded = store_.finish(claimed.key, claimed.attempt, failed);
  } catch (const std::exception&) {
    return false;  // the first failure is what the caller reports
  }
  if (recorded && notifies(core::NotifyEvent::failed) &&
      core::finish_event(claimed.replaced_status, failed, notify_->on))
    notify_recorded(core::NotifyEvent::failed, claimed.key, claimed.attempt);
  return recorded;
}

}  // namespace idem::engine
