// `idem each`: a queue consumer. One run per new key of a JSON Lines stream, the message on the
// handler's stdin; keys already done are skipped.
#include "cli/each.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "core/duration.hpp"
#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/json_key.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "engine/attempt.hpp"
#include "engine/command_effect.hpp"
#include "engine/key_queue.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

namespace idem::cli {

namespace {

struct Message {
  int64_t line = 0;
  core::Key key;
  std::string text;  // the line as read, without its newline
};

// The limits of one handler, parsed once from the options.
struct Limits {
  int64_t ttl_ms = 0;
  int64_t lease_ms = 0;
  int64_t timeout_ms = 0;  // 0: none
  int64_t kill_after_ms = 0;
  int64_t max_output = 0;
};

struct Tally {
  std::atomic<int64_t> ran{0}, failed{0}, skipped{0}, malformed{0}, refused{0};
};

// Output of handlers goes out whole, one message at a time, so parallel jobs never interleave.
std::mutex g_output_mutex;
// The first stop signal received (0: none). Global: the thread that waits for signals outlives
// run_each.
std::atomic<int> g_stopped_by{0};

void report(const std::string& line) {
  std::lock_guard lock(g_output_mutex);
  std::cerr << "idem: " << line << "\n";
}

class Consumer {
 public:
  // `traceparent`: the parent of every message's span (CliTraces::parent).
  Consumer(const EachOptions& o, const Limits& limits, engine::Front front, std::string traceparent)
      : o_(o),
        limits_(limits),
        front_(std::move(front)),
        owner_(proc::describe_owner()),
        traceparent_(std::move(traceparent)) {}

  // `store` is the calling worker's own connection (SQLite handles are not shared by threads).
  void handle(const Message& m, store::Store& store) {
    engine::Engine engine(store, front_);
    engine::AttemptRequest req = attempt_request(m);
    req.traceparent = traceparent_;
    const engine::Claimed claimed = engine.claim(req);
    const std::string where =
        "line " + std::to_string(m.line) + ", key '" + core::display_key(m.key.str()) + "'";
    switch (claimed.verdict) {
      case engine::ClaimVerdict::claimed:
        run(m, engine, claimed, where);
        return;
      case engine::ClaimVerdict::replay:
        ++tally_.skipped;
        if (o_.verbose) report(where + ": already done, skipped");
        return;
      case engine::ClaimVerdict::conflict:
        refuse(where + ": the key was used with another message or command");
        return;
      case engine::ClaimVerdict::abandoned:
        refuse(where + (o_.retry_abandoned
                            ? ": an earlier attempt was abandoned mid-run and processes of it "
                              "are still alive; not run"
                            : ": an earlier attempt was abandoned mid-run; not run (see "
                              "--retry-abandoned)"));
        return;
      case engine::ClaimVerdict::superseded:
        refuse(where + ": superseded in its serial group before it ran; not run");
        return;
      case engine::ClaimVerdict::queued:
      case engine::ClaimVerdict::full:
        refuse(where + ": waits its turn in a serial group in another process; not run");
        return;
      case engine::ClaimVerdict::running:
        if (claimed.existing && claimed.existing->status == core::Status::failed) {
          refuse(where +
                 ": an earlier attempt failed and processes of it are still alive; not run");
          return;
        }
        [[fallthrough]];
      case engine::ClaimVerdict::declined:
        refuse(where + ": running in another process; not run");
        return;
    }
  }

  Tally& tally() { return tally_; }

 private:
  engine::AttemptRequest attempt_request(const Message& m) const {
    engine::AttemptRequest req(m.key);
    core::Fingerprinter f;
    f.add_field("kind", "each");
    f.add_argv(o_.command);
    f.add_field("message", m.text);
    req.claim.fingerprint = f.hex();
    req.claim.kind = "each";
    req.claim.owner = owner_;
    req.claim.ttl_ms = limits_.ttl_ms;
    // Built by a claim that writes it only (handle holds `m` until the claim is made).
    req.describe_request = [this, &m] {
      return nlohmann::json{{"argv", o_.command}, {"line", m.line}, {"message", m.text}}.dump(
          -1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    req.claim.policy = core::Policy{o_.replay_failures, o_.retry_abandoned};
    // --retry-abandoned: never overlap what is left of the abandoned attempt; while its process
    // group lives the message is refused, as `idem run` refuses (it has no --kill-stale here).
    req.clear_abandoned = [](const core::Record& r) {
      const engine::Leftovers left = engine::clear_leftovers(r, false, 0);
      if (left == engine::Leftovers::unproven)
        warn_unproven_leftovers(r, "key '" + core::display_key(r.key) + "'");
      return left != engine::Leftovers::alive;
    };
    // Nor a failed attempt's: while its group lives the key counts as running.
    req.clear_failed = req.clear_abandoned;
    // A key running in another process is refused at once. This process's jobs never hold it
    // here: the queue (engine::KeyQueue) hands a key's lines out one at a time, in input order.
    return req;
  }

  void refuse(const std::string& why) {
    ++tally_.refused;
    if (!o_.quiet) report(why);
  }

  void run(const Message& m, engine::Engine& engine, const engine::Claimed& claimed,
           const std::string& where) {
    util::Fd input = util::memory_file("idem-message", m.text + "\n");
    if (!input.valid()) throw Error(k_exit_internal, "cannot buffer a message");
    proc::RunSpec spec;
    spec.argv = o_.command;
    spec.stdin_fd = input.get();
    spec.live_stdout_fd = -1;
    spec.live_stderr_fd = -1;
    spec.extra_env = {{"IDEM_KEY", m.key.str()}, {"IDEM_LINE", std::to_string(m.line)}};
    spec.timeout_ms = limits_.timeout_ms;
    spec.kill_after_ms = limits_.kill_after_ms;
    // The whole output is written out below; only what is stored is capped.
    engine::CommandEffect effect(proc::spawning_runner(), std::move(spec),
                                 engine::CommandEffect::Capture::kept, limits_.max_output);
    const engine::Finished done = engine.carry_out(claimed, effect);
    const proc::RunResult& result = effect.result();
    {
      std::lock_guard lock(g_output_mutex);
      for (const auto& chunk : result.output.chunks())
        util::write_all(chunk.stream == core::Stream::out ? 1 : 2, chunk.bytes);
    }
    if (done.outcome.status == core::Status::succeeded) {
      ++tally_.ran;
      return;
    }
    ++tally_.failed;
    if (!o_.quiet) report(where + ": handler " + failure_text(effect));
  }

  std::string failure_text(const engine::CommandEffect& effect) const {
    const proc::RunResult& result = effect.result();
    if (!result.started) return std::string("could not start: ") + strerror(result.exec_errno);
    if (result.timed_out)
      return "timed out after " + o_.timeout + " (exit " + std::to_string(effect.exit_code()) + ")";
    return "exited " + std::to_string(effect.exit_code());
  }

  const EachOptions& o_;
  Limits limits_;
  engine::Front front_;
  core::Owner owner_;
  const std::string traceparent_;
  Tally tally_;
};

// Reads stdin line by line, and stops early when `wake` becomes readable (a signal asked to stop).
class LineReader {
 public:
  explicit LineReader(int wake_fd) : wake_fd_(wake_fd) {}
  // False at end of input or when woken.
  bool next(std::string& line) {
    for (;;) {
      auto newline = buffer_.find('\n', scanned_);
      if (newline != std::string::npos) {
        line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        scanned_ = 0;
        return true;
      }
      scanned_ = buffer_.size();
      if (eof_) {
        if (buffer_.empty()) return false;
        line = std::move(buffer_);
        buffer_.clear();
        scanned_ = 0;
        return true;
      }
      pollfd fds[2] = {{0, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      if (fds[1].revents != 0) return false;
      ssize_t n = ::read(0, chunk_.data(), chunk_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        eof_ = true;
      else
        buffer_.append(chunk_.data(), size_t(n));
    }
  }

 private:
  int wake_fd_;
  std::vector<char> chunk_ = std::vector<char>(65536);  // on the heap: see util::read_chunks
  std::string buffer_;
  size_t scanned_ = 0;
  bool eof_ = false;
};

}  // namespace

CLI::App* register_each(CLI::App& app, EachOptions& o) {
  auto* each = app.add_subcommand(
      "each", "Consume JSON Lines on stdin: run the command once per new key, message on stdin");
  each->add_option("--key-field", o.key_field, "JSON Pointer to each message's key, e.g. /id")
      ->required()
      ->type_name("POINTER");
  each->add_option("--ttl", o.ttl, "How long a handled key stays done")
      ->type_name("DURATION")
      ->capture_default_str();
  add_lease_option(*each, o.lease);
  each->add_option("--jobs", o.jobs, "Handlers running at once (one key never runs twice at once)")
      ->type_name("N")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  each->add_option("--timeout", o.timeout,
                   "Stop a handler after DURATION: TERM to its process group, KILL after "
                   "--kill-after; the message failed, exit 124 (default: none)")
      ->type_name("DURATION");
  each->add_option("--kill-after", o.kill_after, "Grace between TERM and KILL for --timeout")
      ->type_name("DURATION")
      ->capture_default_str();
  each->add_option("--max-output", o.max_output,
                   "Stored output cap per message; the handler's output is still written whole")
      ->type_name("SIZE")
      ->capture_default_str();
  each->add_flag("--replay-failures", o.replay_failures,
                 "A failed message counts as done, for later runs without this flag too "
                 "(default: it runs again next time)");
  each->add_flag("--retry-abandoned", o.retry_abandoned,
                 "Run a message again whose earlier handler's owner died mid-run (default: "
                 "refuse it); refused while processes of that attempt are still alive");
  add_notify_options(*each, o.notify);
  each->add_flag("-q,--quiet", o.quiet, "Report only malformed lines and the summary");
  each->add_flag("-v,--verbose", o.verbose, "Also report every skipped message");
  add_command_argument(*each, o.command,
                       "The handler and its arguments; idem's options end at its first word "
                       "(or at --)");
  each->footer(
      "Exit: 0 when every message ran or was already done; 1 when any failed, was refused or\n"
      "was malformed (each reported with its line number); 64 usage; 74 store.\n"
      "Example:\n  idem each --key-field /id --jobs 4 -- ./handle-order.sh < orders.jsonl");
  return each;
}

namespace {

// SIGINT, SIGTERM, SIGHUP: stop taking messages, let the handlers running now finish and record
// their outcomes (a message cut off would be left abandoned), then exit 128+N. A second signal
// exits at once. Blocked here, before any thread starts, and taken by one thread with sigwait.
// Returns the end of a pipe that becomes readable at the first signal.
int watch_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, sig);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) throw os_error("pipe", errno);
  std::thread([stop_signals, wake_fd = wake[1]] {
    for (;;) {
      int sig = 0;
      if (sigwait(&stop_signals, &sig) != 0) continue;
      if (g_stopped_by.exchange(sig) != 0) _exit(k_exit_signal_base + sig);
      report("received " + proc::signal_name(sig) +
             ": finishing the messages being handled; send it again to stop at once");
      [[maybe_unused]] ssize_t n = ::write(wake_fd, "x", 1);
    }
  }).detach();
  return wake[0];
}

// The key of one line, or nullopt with `why` set.
std::optional<core::Key> line_key(const std::string& line, const std::string& key_field,
                                  std::string& why) {
  nlohmann::json doc = nlohmann::json::parse(line, nullptr, false);
  if (doc.is_discarded()) {
    why = "not JSON";
    return std::nullopt;
  }
  std::optional<std::string> text = core::key_from_json(doc, key_field, &why);
  if (!text) return std::nullopt;
  return core::Key::parse(*text, why);
}

// Every limit checked before the store is opened or a line read: a usage error (64) up front.
Limits parse_limits(const EachOptions& o) {
  Limits l;
  l.ttl_ms = core::positive_duration_arg("--ttl", o.ttl);
  l.lease_ms = configured_lease_ms(o.lease);
  l.timeout_ms = o.timeout.empty() ? 0 : core::positive_duration_arg("--timeout", o.timeout);
  l.kill_after_ms = core::duration_arg("--kill-after", o.kill_after);
  l.max_output = core::output_cap_arg("--max-output", o.max_output);
  return l;
}

void print_summary(int64_t total, const Tally& tally) {
  std::cerr << "idem each: " << total << (total == 1 ? " message: " : " messages: ") << tally.ran
            << " ran, " << tally.failed << " failed, " << tally.skipped
            << " skipped (already done), " << tally.refused << " refused, " << tally.malformed
            << " malformed\n";
}

}  // namespace

int run_each(const GlobalOptions& global, const EachOptions& o) {
  if (o.command.empty())
    throw UsageError("missing command: idem each --key-field POINTER -- COMMAND [ARG...]");
  if (!o.key_field.empty() && o.key_field[0] != '/')
    throw UsageError("bad --key-field '" + o.key_field + "': a JSON Pointer starts with '/'");
  Limits limits = parse_limits(o);
  auto notify = notify_spec(o.notify);
  // A store problem is one error up front, not one per message.
  engine::Front front = engine::make_front(*open_store(global), limits.lease_ms);
  use_notify(front, std::move(notify), false, [](const std::string& text) {
    std::lock_guard lock(g_output_mutex);
    util::write_all(2, text);
  });
  // Replays counted here and written once at the end, in one unsynced transaction.
  front.replays = std::make_shared<store::ReplayTally>();
  proc::install_child_handlers();
  LineReader reader(watch_stop_signals());

  const CliTraces traces(front, true);  // its spans go out once the last message is done
  Consumer consumer(o, limits, front, traces.parent());
  // The messages read but not yet taken by a job, bounded so a long stream is never held whole;
  // the lines of one key go to the jobs one at a time, in input order.
  engine::KeyQueue<Message> queue(size_t(o.jobs) * 4, g_stopped_by);
  std::atomic<bool> broken{false};
  std::mutex error_mutex;
  std::string store_error;
  std::vector<std::thread> workers;
  for (int i = 0; i < o.jobs; ++i)
    workers.emplace_back([&] {
      std::unique_ptr<store::Store> store;
      while (std::optional<Message> popped = queue.pop()) {
        const Message& m = *popped;
        try {
          if (!store) store = open_store(global);
          consumer.handle(m, *store);
        } catch (const std::exception& e) {
          std::lock_guard lock(error_mutex);
          if (!broken.exchange(true)) store_error = e.what();
        }
        queue.finish(m.key.str());
      }
    });

  Tally& tally = consumer.tally();
  int64_t line_no = 0, total = 0;
  std::string line;
  while (!broken && reader.next(line)) {
    ++line_no;
    if (line.empty()) continue;
    ++total;
    std::string why;
    std::optional<core::Key> key = line_key(line, o.key_field, why);
    if (!key) {
      ++tally.malformed;
      report("line " + std::to_string(line_no) + ": " + why);
      continue;
    }
    if (!queue.push(Message{line_no, *key, line})) break;
  }
  queue.close();
  for (auto& w : workers) w.join();
  try {
    if (!front.replays->empty()) front.replays->flush(*open_store(global));
  } catch (const StoreError&) {
    // A statistic: the replays themselves were answered.
  }
  if (broken) throw StoreError(store_error);

  print_summary(total, tally);
  if (int sig = g_stopped_by.load()) return k_exit_signal_base + sig;
  bool clean = tally.failed == 0 && tally.refused == 0 && tally.malformed == 0;
  return clean ? k_exit_ok : k_exit_messages_failed;
}

}  // namespace idem::cli
