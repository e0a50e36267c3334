#include "serve/ui.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/errors.hpp"
#include "core/exit_code.hpp"
#include "core/history.hpp"
#include "core/key.hpp"
#include "core/record_json.hpp"
#include "core/schedule.hpp"
#include "engine/attempt.hpp"
#include "engine/follow.hpp"
#include "proc/liveness.hpp"
#include "ui/route.hpp"
#include "util/clock.hpp"
#include "util/hex.hpp"

namespace idem::serve {

namespace {

struct UiHooks {
  std::vector<hooks::Hook> hooks;
  std::map<std::string, std::shared_ptr<hooks::HookSlots>> slots;

  // The configured hook a record is a delivery of ("PATH#KEY"), or null.
  const hooks::Hook* hook_of(const core::Record& r) const {
    if (r.kind != "http") return nullptr;
    const size_t hash = r.key.find('#');
    if (hash == std::string::npos) return nullptr;
    for (const hooks::Hook& hook : hooks)
      if (r.key.compare(0, hash, hook.path) == 0 && hook.path.size() == hash) return &hook;
    return nullptr;
  }
};

// The data of an event stream's `end` event: how the attempt ended, as `idem tail -f` exits.
nlohmann::json follow_end_json(const engine::FollowEnd& end) {
  nlohmann::json j;
  j["exit_code"] = engine::follow_exit_code(end);
  switch (end.kind) {
    case engine::FollowEnd::Kind::ended: {
      const core::Record& r = *end.record;
      j["outcome"] = std::string(core::to_string(r.status));
      if (r.response) j["http_status"] = r.response->status;
      if (r.output_truncated) j["truncated"] = true;
      break;
    }
    case engine::FollowEnd::Kind::abandoned:
      j["outcome"] = "abandoned";
      j["message"] = "attempt " + std::to_string(end.record->attempt) +
                     " died mid-run and its outcome is unknown";
      break;
    case engine::FollowEnd::Kind::replaced:
      j["outcome"] = "replaced";
      j["message"] = "attempt " + std::to_string(end.record->attempt) +
                     " began before the end of the one followed could be read";
      break;
    case engine::FollowEnd::Kind::missing:
      j["outcome"] = "removed";
      j["message"] = "the record was removed";
      break;
  }
  return j;
}

}  // namespace

std::shared_ptr<const front::Route> make_ui_route(
    const std::vector<hooks::Hook>& hooks,
    const std::map<std::string, std::shared_ptr<hooks::HookSlots>>& slots, Services& services,
    const DaemonOptions& daemon) {
  auto known = std::make_shared<UiHooks>(UiHooks{hooks, slots});
  const auto stores = services.stores;
  ui::UiBackend b;
  b.now_ms = [] { return util::process_clock().now_ms(); };
  b.background = [&services](std::function<void()> work) {
    services.background.spawn(std::move(work));
  };
  b.list = [stores](const ui::UiListing& l, const std::function<bool(const core::Record&)>& visit) {
    store::ListQuery q;
    if (l.status) q.statuses = {*l.status};
    q.prefix = l.prefix;
    q.kind = l.kind;
    q.result = l.result;
    q.since_ms = l.since_ms;
    q.until_ms = l.until_ms;
    q.after = l.after;
    q.now_ms = l.now_ms;
    q.scan_limit = l.scan_limit;
    return stores->lease()->list(q, visit);
  };
  b.get = [stores](const std::string& key) { return stores->lease()->get_without_output(key); };
  b.queues = [stores] {
    auto store = stores->lease();
    std::vector<ui::UiQueue> queues;
    for (const store::QueuedGroup& g : store->queued_groups("", ui::k_ui_queue_groups))
      queues.push_back(ui::UiQueue{g.group, g.queued, g.oldest_ms,
                                   store->group_line(g.group, ui::k_ui_queue_rows)});
    return queues;
  };
  b.schedules = [stores] {
    auto store = stores->lease();
    const int64_t now = util::process_clock().now_ms();
    std::vector<ui::UiSchedule> shown;
    for (const store::StoredExpectation& x : store->expectations()) {
      ui::UiSchedule s;
      s.expectation = x.expectation;
      s.findings = store->findings(x.expectation.pattern, false, ui::k_ui_schedule_findings);
      try {
        const core::Schedule schedule(x.expectation);
        const core::ScheduleState& st = x.state;
        if (!st.last_key.empty()) {
          s.last_key = st.last_key;
          s.last_attempt = st.last_number;
          s.last_started = schedule.local_time(st.last_started_ms);
          s.last_outcome = core::to_string(st.last_outcome);
        }
        if (std::optional<int64_t> next = schedule.upcoming(st)) {
          s.next_due = schedule.local_time(*next);
          s.overdue = *next < now;
        }
      } catch (const Error& e) {
        s.problem = e.what();
      }
      shown.push_back(std::move(s));
    }
    return shown;
  };
  b.open_output = [stores](const core::Record& r) -> core::EncodedReader {
    // The provider outlives the lease the reader holds (a download may end after a reload).
    struct Held {
      std::shared_ptr<store::StoreProvider> provider;
      std::unique_ptr<store::OutputReader> reader;  // dropped first
    };
    auto held = std::make_shared<Held>(
        Held{stores, store::leased_output(stores->lease(), r.key, r.attempt)});
    if (!held->reader) return [](int64_t, int64_t) { return std::string(); };
    return [held](int64_t offset, int64_t length) { return held->reader->read(offset, length); };
  };
  b.follow = [stores](const std::string& key, int64_t from, int64_t attempt) -> ui::UiFollowLook {
    auto follower = std::make_shared<engine::Follower>(key, proc::owner_gone, from, attempt);
    return [stores, follower](const ui::UiEmit& emit) -> std::optional<std::string> {
      std::optional<engine::FollowEnd> end;
      {
        auto store = stores->lease();  // held for this look only
        end = follower->look(*store, emit, util::process_clock().now_ms());
      }
      if (!end || follower->stopped()) return std::nullopt;
      return follow_end_json(*end).dump();
    };
  };
  b.stopping = [&services] { return services.streams_stopped.load(); };
  b.attempts = [stores](const core::Record& r, int64_t before) {
    const store::HistoryPage page =
        stores->lease()->history_page(r.key, store::HistoryQuery{ui::k_ui_attempts_page, before});
    ui::UiAttempts shown;
    shown.before = before;
    shown.earlier = page.earlier();
    shown.not_kept = page.not_kept();
    // Newest first, as the list.
    for (auto e = page.entries.rbegin(); e != page.entries.rend(); ++e) {
      ui::UiAttempt a;
      a.number = e->number;
      a.trigger = e->trigger;
      a.status = std::string(core::to_string(e->outcome));
      a.owner = e->host + " pid " + std::to_string(e->pid);
      a.started_ms = e->started_ms;
      a.finished_ms = e->ended_ms;
      a.exit_code = e->exit_code;
      a.http_status = e->http_status;
      a.note = e->note.empty() ? e->reason : e->reason + ": " + e->note;
      shown.rows.push_back(std::move(a));
    }
    if (!page.entries.empty() && page.entries.front().number > page.first_kept)
      shown.older = page.entries.front().number;
    return shown;
  };
  b.remove = [stores](const std::string& key) {
    switch (stores->lease()->remove(key, false, proc::owner_gone)) {
      case store::RemoveResult::removed:
        return ui::UiRemoved::removed;
      case store::RemoveResult::not_found:
        return ui::UiRemoved::not_found;
      case store::RemoveResult::running:
        break;
    }
    return ui::UiRemoved::running;
  };
  b.rerunnable = [known](const core::Record& r) {
    return r.status == core::Status::failed && known->hook_of(r) != nullptr;
  };
  b.rerun = [known, &services](const core::Record& r) {
    ui::UiRerun done;
    const hooks::Hook* hook = known->hook_of(r);
    auto delivery = hook ? hooks::stored_delivery(r.request) : std::nullopt;
    auto held = hook ? known->slots.find(hook->path) : known->slots.end();
    if (!delivery || held == known->slots.end()) {
      done.why = "not a stored delivery of a configured hook";
      return done;
    }
    std::string why;
    const std::optional<core::Key> key = core::Key::parse(r.key.substr(hook->path.size() + 1), why);
    if (!key) {
      done.why = "its key is not one a delivery could carry: " + why;
      return done;
    }
    front::Answer a = hooks::rerun_delivery(
        *hook, *held->second, *delivery,
        serve::delivery_services(services, hook->path, held->second, hook->notify), *key);
    done.http_status = a.status;
    auto now = services.stores->lease()->get_without_output(r.key);
    done.ran = now && now->attempt > r.attempt;
    if (now) done.attempt = now->attempt;
    return done;
  };
  ui::UiOptions options;
  options.credentials = services.ui;
  options.bulk = services.ui_bulk;
  options.loopback = daemon.ui_loopback;
  options.tls = !daemon.tls_cert.empty();
  return ui::ui_route(std::move(b), std::move(options));
}

}  // namespace idem::serve
