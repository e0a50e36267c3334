// Notifications: which end of an attempt fires which event (core/notify.hpp), and the engine
// telling its front's notify command, with a fake clock and fake runners (no processes).
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/notify.hpp"
#include "engine/attempt.hpp"
#include "engine/command_effect.hpp"
#include "engine/notify.hpp"
#include "fakes.hpp"
#include "front/config_fields.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"
#include "util/clock.hpp"
#include "util/hex.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_notify {

using idem::core::NotifyEvent;
using idem::core::NotifyOn;
using idem::core::Outcome;
using idem::core::Status;
using idem::test::env_of;
using idem::test::FakeClock;
using idem::test::FakeRunner;
using idem::test::TempDir;

namespace {

Outcome outcome_with(Status status, std::optional<int> http_status = std::nullopt) {
  Outcome o;
  o.status = status;
  o.exit_code = status == Status::succeeded ? 0 : 1;
  if (http_status) o.response = idem::core::Response{*http_status, {}};
  return o;
}

std::string read_all_fd(int fd) {
  std::string text;
  char buf[4096];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) return text;
    text.append(buf, size_t(n));
    at += n;
  }
}

// An engine whose front notifies through a fake runner; each notify's event, key and document
// are kept.
struct NotifyFixture {
  TempDir dir;
  std::unique_ptr<idem::store::Store> store = idem::store::open_sqlite_store(dir.path() + "/n.db");
  FakeClock clock;
  FakeRunner runner;         // the attempts' commands
  FakeRunner notify_runner;  // the notify commands
  bool owners_gone = false;
  std::vector<std::string> documents;
  std::vector<idem::engine::NotifyReport> reports;
  idem::engine::Front front;

  explicit NotifyFixture(NotifyOn on) {
    auto spec = std::make_shared<idem::core::NotifySpec>();
    spec->argv = idem::core::shell_command("notify-me");
    spec->on = on;
    spec->withheld_env = {"HOOK_SECRET"};
    idem::engine::Notifier::Options options;
    options.runner = &notify_runner;
    options.report = [this](const idem::engine::NotifyReport& r) { reports.push_back(r); };
    notify_runner.during = [this] {
      documents.push_back(read_all_fd(notify_runner.calls.back().stdin_fd));
    };
    front = idem::engine::make_front(clock);
    front.owner_gone = [this](const idem::core::Owner&) { return owners_gone; };
    front.notify = spec;
    front.notifier = std::make_shared<idem::engine::Notifier>(std::move(options));
  }

  idem::engine::AttemptRequest request(bool retry_abandoned = false,
                                       const std::string& key = "k") const {
    idem::engine::AttemptRequest r(idem::core::Key::of_argument(key));
    r.claim.request = R"({"argv":["job"]})";
    r.claim.fingerprint = "f";
    r.claim.owner = {"host-a", "boot-a", 10, 110};
    r.claim.ttl_ms = 60'000;
    r.claim.policy.retry_abandoned = retry_abandoned;
    return r;
  }
  // Runs `key` once with the next scripted result.
  void run(idem::proc::RunResult result, const std::string& key = "k") {
    idem::engine::Engine engine(*store, front);
    idem::engine::AttemptRequest r = request(false, key);
    const idem::engine::Claimed c = engine.claim(r);
    REQUIRE(c.verdict == idem::engine::ClaimVerdict::claimed);
    runner.script.push_back(std::move(result));
    idem::engine::CommandEffect effect(runner, idem::proc::RunSpec{});
    engine.carry_out(c, effect);
  }
  std::vector<std::string> events() const {
    std::vector<std::string> out;
    for (const auto& call : notify_runner.calls) out.push_back(env_of(call, "IDEM_EVENT"));
    return out;
  }
};

// A notifier whose work is kept (`deferred`) for the test to run, its commands run by a fake.
struct DeferringNotifier {
  std::vector<std::function<void()>> deferred;
  std::vector<idem::engine::NotifyReport> reports;
  FakeRunner runner;
  idem::engine::Notifier notifier;
  std::shared_ptr<idem::core::NotifySpec> spec = std::make_shared<idem::core::NotifySpec>();

  explicit DeferringNotifier(idem::core::NotifyLimits limits = {}) : notifier(options(), limits) {
    spec->argv = {"tell"};
  }
  idem::engine::Notifier::Options options() {
    idem::engine::Notifier::Options o;
    o.runner = &runner;
    o.defer = [this](std::function<void()> fn) { deferred.push_back(std::move(fn)); };
    o.report = [this](const idem::engine::NotifyReport& r) { reports.push_back(r); };
    return o;
  }
};

}  // namespace

TEST_CASE("notify: which end of an attempt fires which event", "[notify]") {
  using idem::core::finish_event;
  // A failure always fires, whatever came before.
  CHECK(finish_event(std::nullopt, outcome_with(Status::failed)) == NotifyEvent::failed);
  CHECK(finish_event(Status::succeeded, outcome_with(Status::failed)) == NotifyEvent::failed);
  CHECK(finish_event(Status::failed, outcome_with(Status::failed)) == NotifyEvent::failed);
  // Under change, a failure after a failure is no change; after a success or abandoned it is.
  CHECK_FALSE(finish_event(Status::failed, outcome_with(Status::failed), NotifyOn::change));
  CHECK(finish_event(Status::succeeded, outcome_with(Status::failed), NotifyOn::change) ==
        NotifyEvent::failed);
  CHECK(finish_event(std::nullopt, outcome_with(Status::failed), NotifyOn::change) ==
        NotifyEvent::failed);
  CHECK(finish_event(Status::failed, outcome_with(Status::succeeded), NotifyOn::change) ==
        NotifyEvent::recovered);
  // A success after a failure or an abandoned attempt recovered; after nothing or a success, no
  // news.
  CHECK(finish_event(Status::failed, outcome_with(Status::succeeded)) == NotifyEvent::recovered);
  CHECK(finish_event(Status::abandoned, outcome_with(Status::succeeded)) == NotifyEvent::recovered);
  CHECK_FALSE(finish_event(std::nullopt, outcome_with(Status::succeeded)));
  CHECK_FALSE(finish_event(Status::succeeded, outcome_with(Status::succeeded)));
  // An HTTP answer stored with a 5xx is a failure (the proxy records it as an answered outcome).
  CHECK(finish_event(std::nullopt, outcome_with(Status::succeeded, 502)) == NotifyEvent::failed);
  CHECK_FALSE(finish_event(std::nullopt, outcome_with(Status::succeeded, 404)));

  // --on-failure takes the bad news; --on-change also the recovery.
  for (NotifyEvent e : {NotifyEvent::failed, NotifyEvent::abandoned, NotifyEvent::lease_lost}) {
    CHECK(idem::core::notifies(NotifyOn::failure, e));
    CHECK(idem::core::notifies(NotifyOn::change, e));
  }
  CHECK_FALSE(idem::core::notifies(NotifyOn::failure, NotifyEvent::recovered));
  CHECK(idem::core::notifies(NotifyOn::change, NotifyEvent::recovered));
}

TEST_CASE("notify: the attempt object says how the attempt ended", "[notify]") {
  idem::core::Record r;
  r.key = "k";
  r.attempt = 3;
  r.status = Status::failed;
  r.owner = {"host-a", "boot-a", 10, 110};
  r.started_ms = 1'000;
  r.finished_ms = 3'500;
  r.exit_code = 124;
  r.signal = 15;
  r.timed_out = true;
  nlohmann::json a = idem::core::attempt_json(r);
  CHECK(a["number"] == 3);
  CHECK(a["owner"]["host"] == "host-a");
  CHECK(a["owner"]["pid"] == 10);
  CHECK(a["duration_ms"] == 2'500);
  CHECK(a["outcome"] == "failed");
  CHECK(a["reason"] == "timeout");
  CHECK(a["http_status"].is_null());
  r.timed_out = false;
  CHECK(idem::core::ended_by(r) == "signal");
  r.signal.reset();
  CHECK(idem::core::ended_by(r) == "exit");
  r.exit_code.reset();
  CHECK(idem::core::ended_by(r) == "error");
  r.status = Status::abandoned;
  r.note = idem::core::k_note_lease_ran_out;
  CHECK(idem::core::ended_by(r) == "lease ran out");
  r.note = idem::core::k_note_owner_died;
  CHECK(idem::core::ended_by(r) == "owner died");
  CHECK(idem::core::ended_by(r, NotifyEvent::lease_lost) == "lease lost");
  r.response = idem::core::Response{503, {}};
  CHECK(idem::core::attempt_json(r)["http_status"] == 503);
}

TEST_CASE("notify: a failure fires --on-failure with the record and attempt on stdin", "[notify]") {
  NotifyFixture f(NotifyOn::failure);
  f.run(FakeRunner::exited(3, "boom"));
  REQUIRE(f.events() == std::vector<std::string>{"failed"});
  const auto& call = f.notify_runner.calls[0];
  CHECK(call.argv == std::vector<std::string>{"/bin/sh", "-c", "notify-me"});
  CHECK(env_of(call, "IDEM_KEY") == "k");
  CHECK(call.unset_env == std::vector<std::string>{"HOOK_SECRET"});
  CHECK(call.timeout_ms == idem::core::k_notify_timeout_ms);
  nlohmann::json doc = nlohmann::json::parse(f.documents.at(0));
  CHECK(doc["event"] == "failed");
  CHECK(doc["key"] == "k");
  CHECK(doc["record"]["status"] == "failed");
  CHECK(doc["record"]["exit_code"] == 3);
  CHECK(doc["record"]["stdout_b64"] == "Ym9vbQ==");
  CHECK(doc["attempt"]["number"] == 1);
  CHECK(doc["attempt"]["exit_code"] == 3);
  CHECK(doc["attempt"]["outcome"] == "failed");
  CHECK(doc["attempt"]["reason"] == "exit");
  REQUIRE(f.reports.size() == 1);
  CHECK(f.reports[0].result == idem::engine::NotifyReport::Result::ran);

  // A second failure fires again; the success after it is a recovery --on-failure leaves out.
  f.run(FakeRunner::exited(4));
  f.run(FakeRunner::exited(0));
  CHECK(f.events() == std::vector<std::string>{"failed", "failed"});
}

TEST_CASE("notify: --on-change also tells a success after a failure, and only that one",
          "[notify]") {
  NotifyFixture f(NotifyOn::change);
  f.run(FakeRunner::exited(0), "other");  // a first success: nothing to tell
  CHECK(f.events().empty());
  f.run(FakeRunner::timed_out());
  f.run(FakeRunner::exited(2));  // failed after failed: no change
  f.run(FakeRunner::exited(0));
  CHECK(f.events() == std::vector<std::string>{"failed", "recovered"});
  nlohmann::json doc = nlohmann::json::parse(f.documents.at(1));
  CHECK(doc["event"] == "recovered");
  CHECK(doc["attempt"]["number"] == 3);
  CHECK(doc["record"]["status"] == "succeeded");
  // A replay fires nothing.
  idem::engine::Engine engine(*f.store, f.front);
  auto r = f.request();
  CHECK(engine.claim(r).verdict == idem::engine::ClaimVerdict::replay);
  CHECK(f.events().size() == 2);
}

TEST_CASE("notify: an owner found gone fires abandoned once, then the retry's success recovers",
          "[notify]") {
  NotifyFixture f(NotifyOn::change);
  idem::engine::Engine engine(*f.store, f.front);
  auto first = f.request();
  REQUIRE(engine.claim(first).verdict == idem::engine::ClaimVerdict::claimed);
  f.owners_gone = true;  // its owner died without finishing
  idem::engine::Engine later(*f.store, f.front);
  auto again = f.request();
  CHECK(later.claim(again).verdict == idem::engine::ClaimVerdict::abandoned);
  REQUIRE(f.events() == std::vector<std::string>{"abandoned"});
  nlohmann::json doc = nlohmann::json::parse(f.documents.at(0));
  CHECK(doc["record"]["status"] == "abandoned");
  CHECK(doc["attempt"]["reason"] == "owner died");
  CHECK(doc["attempt"]["owner"]["pid"] == 10);
  // Found abandoned again: the store says so already, nothing new to tell.
  auto third = f.request();
  CHECK(later.claim(third).verdict == idem::engine::ClaimVerdict::abandoned);
  CHECK(f.events().size() == 1);
  // Retried and succeeded: recovered.
  auto retry = f.request(true);
  const idem::engine::Claimed c = later.claim(retry);
  REQUIRE(c.verdict == idem::engine::ClaimVerdict::claimed);
  idem::engine::CommandEffect effect(f.runner, idem::proc::RunSpec{});
  later.carry_out(c, effect);
  CHECK(f.events() == std::vector<std::string>{"abandoned", "recovered"});
}

TEST_CASE("notify: a lease lost mid-run is told, with what the attempt knows of itself",
          "[notify][lease]") {
  NotifyFixture f(NotifyOn::failure);
  idem::engine::Engine engine(*f.store, f.front);
  auto r = f.request();
  r.claim.lease_ms = 3000;
  const idem::engine::Claimed c = engine.claim(r);
  REQUIRE(c.verdict == idem::engine::ClaimVerdict::claimed);
  f.runner.during = [&] {
    f.clock.advance(5000);  // paused past its lease: the keeper stops the command
    pollfd p{f.runner.calls.back().stop_fd, POLLIN, 0};
    CHECK(::poll(&p, 1, 60'000) == 1);
  };
  idem::engine::CommandEffect effect(f.runner, idem::proc::RunSpec{});
  CHECK_THROWS_AS(engine.carry_out(c, effect), idem::StoreError);
  REQUIRE(f.events() == std::vector<std::string>{"lease_lost"});
  nlohmann::json doc = nlohmann::json::parse(f.documents.at(0));
  CHECK(doc["record"]["status"] == "abandoned");
  CHECK(doc["attempt"]["number"] == 1);
  CHECK(doc["attempt"]["reason"] == "lease lost");
  CHECK(doc["attempt"]["note"] == "lease lost: it ran out before a renewal got through");
}

TEST_CASE("notify: a notify command that fails or times out is reported, the outcome stands",
          "[notify]") {
  NotifyFixture f(NotifyOn::failure);
  f.notify_runner.script.push_back(FakeRunner::exited(7, "cannot send"));
  f.notify_runner.script.push_back(FakeRunner::timed_out());
  f.run(FakeRunner::exited(1));
  f.run(FakeRunner::exited(2));
  REQUIRE(f.reports.size() == 2);
  CHECK(f.reports[0].result == idem::engine::NotifyReport::Result::failed);
  CHECK(f.reports[0].exit_code == 7);
  CHECK(f.reports[0].output == "cannot send");
  CHECK(f.reports[0].text() == "notify for key 'k' (failed) exited 7");
  CHECK(f.reports[1].result == idem::engine::NotifyReport::Result::timed_out);
  CHECK(f.store->get("k")->exit_code == 2);
}

TEST_CASE("notify: at most one runs per key, one more waits, further ones are dropped",
          "[notify]") {
  DeferringNotifier n;
  auto& [deferred, reports, runner, notifier, spec] = n;
  notifier.fire(spec, NotifyEvent::failed, "k", "{}");
  notifier.fire(spec, NotifyEvent::failed, "k", "{}");
  notifier.fire(spec, NotifyEvent::failed, "k", "{}");  // two are queued for k already
  notifier.fire(spec, NotifyEvent::failed, "other", "{}");
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].result == idem::engine::NotifyReport::Result::dropped);
  CHECK(reports[0].key == "k");
  // A worker for k and one for other; k's second waits for k's worker.
  REQUIRE(deferred.size() == 2);
  for (size_t i = 0; i < deferred.size(); ++i) deferred[i]();
  CHECK(runner.calls.size() == 3);
  // Once they ran, the key takes new ones again.
  notifier.fire(spec, NotifyEvent::failed, "k", "{}");
  CHECK(deferred.size() == 3);
  // A recovery is not what an on-failure command is for: nothing is queued.
  notifier.fire(spec, NotifyEvent::recovered, "k", "{}");
  CHECK(deferred.size() == 3);
}

TEST_CASE("notify: at most max_running run at once, max_queue wait, the rest are dropped",
          "[notify]") {
  DeferringNotifier n({2, 3});
  auto& [deferred, reports, runner, notifier, spec] = n;
  for (int i = 0; i < 10; ++i)
    notifier.fire(spec, NotifyEvent::failed, "k" + std::to_string(i), "{}");
  // Two workers (nothing else runs a notify command), three wait, five are dropped.
  CHECK(deferred.size() == 2);
  auto stats = notifier.stats();
  CHECK(stats.running == 2);
  CHECK(stats.queued == 3);
  CHECK(stats.dropped == 5);
  REQUIRE(reports.size() == 5);
  CHECK(reports[0].key == "k5");
  CHECK(reports[0].text() ==
        "notify for key 'k5' (failed) dropped: the queue is full (3 waiting for one of 2 places)");
  // The first worker, done with its own, takes the queue's in order; the second has its own.
  deferred[0]();
  CHECK(runner.calls.size() == 4);
  deferred[1]();
  CHECK(runner.calls.size() == 5);
  stats = notifier.stats();
  CHECK(stats.running == 0);
  CHECK(stats.queued == 0);
  CHECK(stats.dropped == 5);
  CHECK(deferred.size() == 2);
}

TEST_CASE("notify: finish_by stops a running notify command's whole group, and reports it",
          "[notify][process]") {
  TempDir dir;
  const std::string pid_file = dir.path() + "/bg.pid";
  std::vector<idem::engine::NotifyReport> reports;
  idem::engine::Notifier::Options options;
  options.kill_after_ms = 300;
  options.report = [&](const idem::engine::NotifyReport& r) { reports.push_back(r); };
  idem::engine::Notifier notifier(std::move(options));
  auto spec = std::make_shared<idem::core::NotifySpec>();
  // Ignores TERM, leaves a child that ignores it too, and exits: only KILL to the group ends it.
  spec->argv = idem::core::shell_command("trap '' TERM; sleep 60 & echo $! > " + pid_file +
                                         ".tmp; mv " + pid_file + ".tmp " + pid_file);
  std::thread firing([&] { notifier.fire(spec, NotifyEvent::failed, "k", "{}"); });
  pid_t child = 0;
  for (int i = 0; i < 10000 && child == 0; ++i) {
    std::ifstream in(pid_file);
    if (!(in >> child)) child = 0;
    if (child == 0) ::usleep(1000);
  }
  REQUIRE(child > 0);
  CHECK(::kill(child, 0) == 0);  // it waits for its child: the notify command still runs
  notifier.finish_by(idem::util::monotonic_ms() + 400);
  firing.join();
  // Killed by the time fire() returned (reaped by init soon after).
  std::string state;
  for (int i = 0; i < 5000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm;
    state.clear();
    if (!(stat >> pid >> comm >> state) || state == "Z") break;
    ::usleep(1000);
  }
  CHECK((state.empty() || state == "Z"));
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].result == idem::engine::NotifyReport::Result::cut);
  CHECK(reports[0].text().ends_with(": the daemon is stopping"));
  // One fired after the deadline has no time left: dropped, and said so.
  notifier.fire(spec, NotifyEvent::failed, "k2", "{}");
  REQUIRE(reports.size() == 2);
  CHECK(reports[1].result == idem::engine::NotifyReport::Result::dropped);
  CHECK(notifier.stats().dropped == 1);
}

TEST_CASE("notify: the document carries the first and last bytes of each stream, and its size",
          "[notify]") {
  idem::core::CapturedOutput out;
  out.append(idem::core::Stream::out, "AB");
  out.append(idem::core::Stream::err, "x");
  out.append(idem::core::Stream::out, "CDEFG");
  out.append(idem::core::Stream::err, "y");
  out.append(idem::core::Stream::out, "HIJ");
  idem::core::Record r;
  r.key = "k";
  r.attempt = 1;
  r.status = Status::failed;
  r.output = out.encode();
  nlohmann::json doc =
      nlohmann::json::parse(idem::core::notify_document(NotifyEvent::failed, r, 0, 3));
  const auto& rec = doc["record"];
  CHECK(rec["stdout_bytes"] == 10);
  CHECK(rec["stdout_b64"] == idem::util::to_base64("ABC"));
  CHECK(rec["stdout_tail_b64"] == idem::util::to_base64("HIJ"));
  CHECK(rec["stdout_omitted_bytes"] == 4);
  CHECK(rec["stderr_bytes"] == 2);
  CHECK(rec["stderr_b64"] == idem::util::to_base64("xy"));
  CHECK_FALSE(rec.contains("stderr_tail_b64"));
  // A request's body is cut the same way; a short one is left as it is.
  r.request =
      nlohmann::json{{"method", "POST"}, {"body_b64", idem::util::to_base64("0123456789")}}.dump();
  doc = nlohmann::json::parse(idem::core::notify_document(NotifyEvent::failed, r, 0, 3));
  CHECK(doc["record"]["request"]["method"] == "POST");
  CHECK(doc["record"]["request"]["body_bytes"] == 10);
  CHECK(doc["record"]["request"]["body_b64"] == idem::util::to_base64("012"));
  CHECK(doc["record"]["request"]["body_tail_b64"] == idem::util::to_base64("789"));
  CHECK(doc["record"]["request"]["body_omitted_bytes"] == 4);
  doc = nlohmann::json::parse(idem::core::notify_document(NotifyEvent::failed, r, 0, 5));
  CHECK(doc["record"]["request"]["body_b64"] == idem::util::to_base64("0123456789"));
  CHECK_FALSE(doc["record"]["request"].contains("body_bytes"));
  // Up to twice the bytes kept, all of it.
  CHECK(doc["record"]["stdout_b64"] == idem::util::to_base64("ABCDEFGHIJ"));
  CHECK_FALSE(doc["record"].contains("stdout_tail_b64"));
  // The default: 64 KiB of each end of a 1 MiB stream, the document a fraction of it.
  std::string big;
  for (int i = 0; big.size() < (1 << 20); ++i) big += std::to_string(i) + "\n";
  idem::core::CapturedOutput large;
  for (size_t at = 0; at < big.size(); at += 1000)
    large.append(idem::core::Stream::out, std::string_view(big).substr(at, 1000));
  r.output = large.encode();
  const std::string text = idem::core::notify_document(NotifyEvent::failed, r, 0);
  CHECK(text.size() < 200 * 1024);
  doc = nlohmann::json::parse(text);
  CHECK(doc["record"]["stdout_bytes"] == big.size());
  CHECK(doc["record"]["stdout_b64"] == idem::util::to_base64(big.substr(0, 65536)));
  CHECK(doc["record"]["stdout_tail_b64"] == idem::util::to_base64(big.substr(big.size() - 65536)));
  CHECK(doc["record"]["stdout_omitted_bytes"] == big.size() - 2 * 65536);
}

// An effect given up instead of recorded, as the proxy's for an upstream's 5xx.
class ReleasedEffect final : public idem::engine::Effect {
 public:
  idem::core::Outcome perform(const idem::engine::Attempt&) override {
    return outcome_with(Status::succeeded, 502);
  }
  std::string performed() const override { return "forwarded"; }
  bool release_instead(const idem::core::Outcome&) const override { return true; }
};

TEST_CASE("notify: a failure given up instead of recorded (the proxy's 5xx) is told too",
          "[notify]") {
  NotifyFixture f(NotifyOn::failure);
  idem::engine::Engine engine(*f.store, f.front);
  auto r = f.request();
  const idem::engine::Claimed c = engine.claim(r);
  REQUIRE(c.verdict == idem::engine::ClaimVerdict::claimed);
  ReleasedEffect effect;
  CHECK(engine.carry_out(c, effect).released);
  CHECK_FALSE(f.store->get("k"));
  REQUIRE(f.events() == std::vector<std::string>{"failed"});
  nlohmann::json doc = nlohmann::json::parse(f.documents.at(0));
  CHECK(doc["attempt"]["http_status"] == 502);
  CHECK(doc["record"]["status"] == "failed");
}

TEST_CASE("notify: the config's notify object", "[notify][config]") {
  using idem::front::config_fields::Json;
  using idem::front::config_fields::Problem;
  using idem::front::config_fields::read_notify;
  auto spec = read_notify(Json::parse(R"({"command": "mail -s x root", "on": "change",
                                          "timeout": "5s"})"),
                          "hooks[0].notify");
  CHECK(spec->argv == std::vector<std::string>{"/bin/sh", "-c", "mail -s x root"});
  CHECK(spec->on == NotifyOn::change);
  CHECK(spec->timeout_ms == 5000);
  spec = read_notify(Json::parse(R"({"command": ["curl", "-fsS", "http://x/fail"]})"), "n");
  CHECK(spec->argv == std::vector<std::string>{"curl", "-fsS", "http://x/fail"});
  CHECK(spec->on == NotifyOn::failure);
  CHECK(spec->timeout_ms == idem::core::k_notify_timeout_ms);
  const auto problem = [](const char* text) {
    try {
      read_notify(Json::parse(text), "proxy.notify");
    } catch (const Problem& p) {
      return p.at + ": " + p.what;
    }
    return std::string("accepted");
  };
  CHECK(problem(R"({"on": "change"})") == "proxy.notify: missing field 'command'");
  CHECK(problem(R"({"command": "  "})").starts_with("proxy.notify.command: is empty"));
  CHECK(problem(R"({"command": []})").starts_with("proxy.notify.command: is empty"));
  CHECK(problem(R"({"command": "x", "on": "always"})")
            .starts_with("proxy.notify.on: 'always' is neither \"failure\""));
  CHECK(problem(R"({"command": "x", "timeout": "0s"})") ==
        "proxy.notify.timeout: must be more than 0");
  CHECK(problem(R"({"command": "x", "when": "x"})").starts_with("proxy.notify: unknown field"));
}

TEST_CASE("notify: a document from the store's reader equals the in-memory one, read in windows",
          "[notify]") {
  idem::core::CapturedOutput out;
  std::string big;
  for (int i = 0; big.size() < (3 << 20); ++i) big += std::to_string(i) + "\n";
  out.append(idem::core::Stream::out, "head\n");
  out.append(idem::core::Stream::err, "warning\n");
  out.append(idem::core::Stream::out, big);
  out.append(idem::core::Stream::err, "last words");
  idem::core::Record r;
  r.key = "k";
  r.attempt = 2;
  r.status = Status::failed;
  r.output = out.encode();
  r.output_bytes = out.stored_bytes();
  const std::string whole = idem::core::notify_document(NotifyEvent::failed, r, 0);
  const std::string encoded = r.output;
  int64_t largest = 0;
  const idem::core::EncodedReader read = [&](int64_t offset, int64_t length) {
    largest = std::max(largest, length);
    if (offset >= int64_t(encoded.size())) return std::string();
    return encoded.substr(size_t(offset), size_t(length));
  };
  idem::core::Record bare = r;
  bare.output.clear();  // as Store::get_without_output gives it
  CHECK(idem::core::notify_document(NotifyEvent::failed, bare, 0, idem::core::k_notify_stream_bytes,
                                    &read) == whole);
  CHECK(largest <= 64 * 1024);  // a window at a time, never the 3 MiB whole
  // Not an encoding: refused, as a corrupt stored output is.
  const idem::core::EncodedReader junk = [](int64_t, int64_t) { return std::string("\x07junk"); };
  CHECK_THROWS_AS(idem::core::notify_document(NotifyEvent::failed, bare, 0,
                                              idem::core::k_notify_stream_bytes, &junk),
                  idem::StoreError);
}

}  // namespace unit_notify
