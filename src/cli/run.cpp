// `idem run`: claim the key, run the command once, record and replay its outcome.
#include "cli/run.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/duration.hpp"
#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "engine/attempt.hpp"
#include "engine/command_effect.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"

namespace idem::cli {

namespace {

struct Settings {
  int64_t ttl_ms;
  int64_t wait_ms;
  int64_t timeout_ms;
  int64_t kill_after_ms;
  int64_t drain_ms;
  int64_t max_output;
  std::optional<core::Key> serial;  // the group's name (--serial), a key's syntax
  int64_t serial_wait_ms;           // -1: no limit
};

// The serial group `idem run --serial NAME` waits in, as the store names it: run's own, apart
// from a daemon's groups of the same name.
std::string run_group(const core::Key& name) { return "run:" + name.str(); }

Settings parse_settings(const RunOptions& o) {
  Settings s{};
  s.ttl_ms = core::positive_duration_arg("--ttl", o.ttl);
  s.wait_ms = o.wait.empty() ? 0 : core::duration_arg("--wait", o.wait);
  s.timeout_ms = o.timeout.empty() ? 0 : core::positive_duration_arg("--timeout", o.timeout);
  s.kill_after_ms = core::duration_arg("--kill-after", o.kill_after);
  s.drain_ms = core::duration_arg("--drain", o.drain);
  s.max_output = core::output_cap_arg("--max-output", o.max_output);
  if (!o.serial_wait.empty() && o.serial.empty())
    throw UsageError("--serial-wait needs --serial GROUP");
  s.serial_wait_ms =
      o.serial_wait.empty() ? -1 : core::duration_arg("--serial-wait", o.serial_wait);
  if (!o.serial.empty()) {
    std::string why;
    s.serial = core::Key::parse(o.serial, why);
    if (!s.serial) throw UsageError("bad --serial group: " + why);
  }
  return s;
}

std::string current_dir() {
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  return ec ? std::string() : cwd.string();
}

// --hash-stdin: reads stdin to its end into an anonymous file while hashing it, so the command
// gets exactly the bytes that were fingerprinted.
util::Fd buffer_stdin(std::string& sha256_hex) {
  util::Fd copy(::memfd_create("idem-stdin", MFD_CLOEXEC));
  if (!copy.valid()) throw Error(k_exit_internal, std::string("memfd_create: ") + strerror(errno));
  util::Sha256 hash;
  const bool complete = util::read_chunks(0, [&](std::string_view chunk) {
    hash.update(chunk);
    if (!util::write_all(copy.get(), chunk))
      throw Error(k_exit_internal, std::string("cannot buffer stdin: ") + strerror(errno));
  });
  if (!complete)
    throw UsageError(std::string("cannot read stdin for --hash-stdin: ") + strerror(errno));
  ::lseek(copy.get(), 0, SEEK_SET);
  sha256_hex = util::to_hex(hash.finish());
  return copy;
}

std::string owner_text(const core::Owner& owner) {
  return "pid " + std::to_string(owner.pid) + " on " + owner.host;
}

std::string ago(int64_t then_ms, int64_t now_ms) {
  return util::human_duration(now_ms - then_ms) + " ago";
}

// Writes the stored output back byte for byte, in the order it was first written.
void replay(const core::Record& record) {
  auto chunks = core::CapturedOutput::chunks_of(record.output);
  if (!chunks)
    throw StoreError("stored output of key '" + core::display_key(record.key) +
                     "' is corrupt; nothing was replayed");
  for (const auto& chunk : *chunks)
    util::write_all(chunk.stream == core::Stream::out ? 1 : 2, chunk.bytes);
}

// A truncated record replays only what was kept: say so, or a caller takes part for the whole.
void warn_if_truncated(const core::Record& record, const std::string& shown) {
  if (!record.output_truncated) return;
  std::cerr << "idem: replayed output of " << shown << " is truncated: only its first "
            << record.output_bytes << " bytes were stored (--max-output)\n";
}

// "; its process group N still has live processes" for an attempt whose processes outlived it
// (its cgroup, where one is recorded).
std::string live_group_text(const core::Record& record) {
  if (!proc::process_group_alive(record.owner, record.process_group, core::attempt_mark(record)))
    return "";
  return "; its " + core::processes_place(record.process_group) + " still has live processes";
}

// "key 'k': failed attempt 2 still has live processes in process group 123"
std::string leftovers_text(const core::Record& r, const std::string& shown) {
  return shown + ": " + std::string(core::to_string(r.status)) + " attempt " +
         std::to_string(r.attempt) + " still has live processes in " +
         core::processes_place(r.process_group);
}

// A failed or abandoned attempt whose processes live on holds the key as a live owner would.
bool held_by_leftovers(const core::Record& holder) {
  return holder.status == core::Status::failed || holder.status == core::Status::abandoned;
}

constexpr const char* k_leftovers_advice =
    "; nothing ran. Wait for them to end, or add --kill-stale to stop them";

// A run must never overlap what is left of the previous attempt, abandoned (--retry-abandoned)
// or failed. True when nothing of it lives on; with --kill-stale its group is ended first.
// Throws 75 for a group that outlived TERM and KILL.
bool clear_previous(const core::Record& r, const RunOptions& o, const Settings& s,
                    const std::string& shown) {
  if (o.verbose && o.kill_stale &&
      proc::process_group_alive(r.owner, r.process_group, core::attempt_mark(r)))
    std::cerr << "idem: " << leftovers_text(r, shown) << "; stopping them (--kill-stale)\n";
  switch (engine::clear_leftovers(r, o.kill_stale, s.kill_after_ms)) {
    case engine::Leftovers::none:
      return true;
    case engine::Leftovers::unproven:
      warn_unproven_leftovers(r, shown);
      return true;
    case engine::Leftovers::alive:
      return false;
    case engine::Leftovers::survived:
      throw LeftoversRefusal(leftovers_text(r, shown) +
                             " that TERM and KILL did not end; nothing ran");
  }
  return false;
}

}  // namespace

CLI::App* register_run(CLI::App& app, RunOptions& o) {
  auto* run = app.add_subcommand("run", "Run a command once per key; replay its outcome after");
  o.key_option = add_key_option(*run, o.key,
                                "Idempotency key (1-255 bytes of printable UTF-8); default: "
                                "derived from the working directory and the command");
  run->add_option("--ttl", o.ttl, "How long a finished outcome is replayed")
      ->type_name("DURATION")
      ->capture_default_str();
  run->add_option("--wait", o.wait,
                  "If the key is running elsewhere, wait up to DURATION for it, then act as a new "
                  "attempt would (default: refuse at once with 75)")
      ->type_name("DURATION");
  run->add_option("--serial", o.serial,
                  "Run one at a time with every other `idem run --serial` of GROUP, in the order "
                  "they arrived, across processes (and hosts, on PostgreSQL); wait for the turn "
                  "(shown as queued)")
      ->type_name("GROUP");
  run->add_option("--serial-wait", o.serial_wait,
                  "With --serial: wait at most DURATION for the turn, then leave the line and "
                  "exit 75 (default: no limit)")
      ->type_name("DURATION");
  run->add_option("--timeout", o.timeout,
                  "Stop the command after DURATION: TERM to its process group, KILL after "
                  "--kill-after; exit 124 (default: none)")
      ->type_name("DURATION");
  run->add_option("--kill-after", o.kill_after,
                  "Grace between TERM and KILL for --timeout, a signal idem forwards, and "
                  "--kill-stale (a second INT/TERM/HUP KILLs at once)")
      ->type_name("DURATION")
      ->capture_default_str();
  run->add_option("--drain", o.drain,
                  "After the command exits, read its output until no process holds it open, for "
                  "DURATION at most; then close it (late writers get SIGPIPE). 0: stop at once")
      ->type_name("DURATION")
      ->capture_default_str();
  add_lease_option(*run, o.lease);
  run->add_flag("--replay-failures", o.replay_failures,
                "A failed outcome is final and replayed, to later attempts without this flag too "
                "(default: the next attempt runs again)");
  run->add_flag("--retry-abandoned", o.retry_abandoned,
                "Run again when the previous attempt's owner died mid-run (default: refuse, 69); "
                "refused with 75 while processes of that attempt are still alive");
  run->add_flag("--kill-stale", o.kill_stale,
                "Before running again, end the surviving processes of a failed attempt (or, with "
                "--retry-abandoned, an abandoned one): TERM to its process group, KILL after "
                "--kill-after (default: refuse with 75 while they live)");
  run->add_flag("--hash-stdin", o.hash_stdin,
                "Read stdin fully, add its SHA-256 to the fingerprint, feed it to the command");
  run->add_option("--max-output", o.max_output,
                  "Stored output cap per record; live output always passes whole")
      ->type_name("SIZE")
      ->capture_default_str();
  run->add_flag("--pty", o.pty,
                "Give the command a pseudo-terminal for its stdout and stderr, so what buffers "
                "when piped (Python's print) shows live; the stored output is what the terminal "
                "received, all of it as stdout");
  add_notify_options(*run, o.notify);
  run->add_flag("--quiet-replay", o.quiet_replay,
                "On replay write nothing, only return the stored exit code");
  run->add_flag("-q,--quiet", o.quiet,
                "Print no message when the key is running elsewhere (75), nor the notice that "
                "a replayed output is truncated; 65, 69 and a 75 for processes a failed or "
                "abandoned attempt left running still print their line");
  run->add_flag("-v,--verbose", o.verbose,
                "Say on stderr when an outcome is replayed or a wait happens");
  add_command_argument(*run, o.command,
                       "The command and its arguments; idem's options end at its first word "
                       "(or at --)");
  run->footer(
      "Examples:\n"
      "  idem run -k backup-$(date +%F) --ttl 7d -- ./backup.sh\n"
      "  idem run --wait 10m -- make release       # key derived from cwd and argv\n"
      "  printf '%s' \"$payload\" | idem run -k order-42 --hash-stdin -- ./charge.sh");
  return run;
}

namespace {

// A serial group's name as its front gave it (the store's, without run's prefix).
std::string serial_name(const core::Record& r) {
  const std::string& g = r.serial_group;
  return g.rfind("run:", 0) == 0 ? g.substr(4) : g;
}

std::string running_refusal(const core::Record& holder, const RunOptions& o, const Settings& s,
                            const std::string& shown, int64_t now_ms) {
  std::string message = held_by_leftovers(holder)
                            ? leftovers_text(holder, shown) + k_leftovers_advice
                            : shown + " is running in " + owner_text(holder.owner) + " (started " +
                                  ago(holder.started_ms, now_ms) + "); nothing ran";
  if (s.wait_ms > 0) message += " (waited " + o.wait + ")";
  return message;
}

// A verdict other than `claimed`: replay the stored outcome, or refuse with the verdict's code.
int answer_without_running(const engine::Claimed& claimed, const RunOptions& o, const Settings& s,
                           const std::string& shown) {
  const core::Record& r = *claimed.existing;
  const int64_t now_ms = claimed.now_ms;
  switch (claimed.verdict) {
    case engine::ClaimVerdict::replay:
      if (o.verbose)
        std::cerr << "idem: replaying " << shown << " (" << core::to_string(r.status) << " "
                  << ago(r.finished_ms, now_ms) << ", exit " << core::replay_exit_code(r)
                  << ", attempt " << r.attempt << (r.output_truncated ? ", output truncated" : "")
                  << ")\n";
      if (!o.quiet_replay) {
        replay(r);
        if (!o.quiet) warn_if_truncated(r, shown);
      }
      return core::replay_exit_code(r);
    case engine::ClaimVerdict::conflict:
      throw Error(k_exit_conflict,
                  shown + " was used with a different command or input; nothing ran");
    case engine::ClaimVerdict::running:
      if (held_by_leftovers(r)) throw LeftoversRefusal(running_refusal(r, o, s, shown, now_ms));
      throw Error(k_exit_running, running_refusal(r, o, s, shown, now_ms));
    case engine::ClaimVerdict::abandoned:
      throw Error(k_exit_abandoned,
                  shown + ": attempt " + std::to_string(r.attempt) + " (" + owner_text(r.owner) +
                      ", started " + ago(r.started_ms, now_ms) +
                      ") died mid-run and its outcome is unknown" + live_group_text(r) +
                      "; nothing ran. Use --retry-abandoned or 'idem rm' once you have checked");
    case engine::ClaimVerdict::queued:
      if (claimed.waited)
        throw Error(k_exit_running, shown + " waited " + o.serial_wait +
                                        " for its turn in serial group '" + o.serial + "' (place " +
                                        std::to_string(claimed.position) +
                                        " when it left the line); nothing ran");
      throw Error(k_exit_running, shown + " waits its turn in serial group '" +
                                      core::display_key(serial_name(r)) + "' in " +
                                      owner_text(r.owner) + "; nothing ran");
    case engine::ClaimVerdict::full:
      throw Error(k_exit_running,
                  "serial group '" + o.serial + "' holds as many waiting as it may; nothing ran");
    case engine::ClaimVerdict::superseded:
      throw Error(k_exit_conflict, shown + " was superseded by '" +
                                       core::display_key(r.superseded_by) +
                                       "' in its serial group before it ran; nothing ran");
    case engine::ClaimVerdict::claimed:
    case engine::ClaimVerdict::declined:
      break;
  }
  throw Error(k_exit_internal,
              "unexpected verdict " + std::string(engine::to_string(claimed.verdict)));
}

// The attempt `idem run` asks for: its claim, --wait, and the checks of --retry-abandoned.
engine::AttemptRequest attempt_request(const core::Key& key, const RunOptions& o, const Settings& s,
                                       const std::string& cwd, const std::string* stdin_sha256,
                                       const std::string& shown) {
  engine::AttemptRequest req(key);
  req.claim.fingerprint = core::run_fingerprint(o.command, stdin_sha256);
  req.describe_owner = [] { return proc::describe_owner(); };
  req.claim.ttl_ms = s.ttl_ms;
  // Built by a first run's claim only (`o` outlives the request, run_run's own options).
  req.describe_request = [&command = o.command, cwd] {
    return nlohmann::json{{"argv", command}, {"cwd", cwd}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  req.claim.policy = core::Policy{o.replay_failures, o.retry_abandoned};
  req.wait.wait_ms = s.wait_ms;
  if (s.serial) {
    req.claim.serial = store::SerialClaim{run_group(*s.serial)};
    // A run killed -9 leaves its command running: the group waits until it has ended.
    req.claim.serial->left_behind = [](const core::Record& r) {
      return engine::clear_leftovers(r, false, 0) == engine::Leftovers::alive;
    };
    req.wait_turn = true;
    req.turn_wait_ms = s.serial_wait_ms;
    if (o.verbose)
      req.on_queued = [&o, shown](int64_t position) {
        std::cerr << "idem: " << shown << " waits its turn in serial group '" << o.serial
                  << "' (place " << position << ")\n";
      };
  }
  // A retry must never overlap what is left of the abandoned attempt: it holds the key as a
  // failed attempt's leftovers do (75, or --wait waits for it).
  req.clear_abandoned = [&o, &s, shown](const core::Record& r) {
    return clear_previous(r, o, s, shown);
  };
  req.abandoned_leftovers_hold = true;
  // Nor a rerun what is left of the failed one: it holds the key (75, or --wait waits for it).
  req.clear_failed = [&o, &s, shown](const core::Record& r) {
    return clear_previous(r, o, s, shown);
  };
  // A signal while waiting ends the wait (a wait in line leaves the line).
  req.before_pause = [shown](const core::Record& holder) {
    if (int sig = proc::pending_signal())
      throw Error(ExitCode(k_exit_signal_base + sig),
                  "interrupted by " + proc::signal_name(sig) + " while " +
                      (holder.status == core::Status::queued ? shown + " waited its turn"
                                                             : "waiting for " + shown) +
                      "; nothing ran");
  };
  if (o.verbose)
    req.on_wait = [&o, shown](const core::Record& holder) {
      std::cerr << "idem: waiting up to " << o.wait << " for " << shown << " ("
                << (held_by_leftovers(holder)
                        ? "processes of " + std::string(core::to_string(holder.status)) +
                              " attempt " + std::to_string(holder.attempt)
                        : "running in " + owner_text(holder.owner))
                << ")\n";
    };
  return req;
}

proc::RunSpec command_spec(const RunOptions& o, const Settings& s, int stdin_fd) {
  proc::RunSpec spec;
  spec.argv = o.command;
  spec.extra_env = {{"IDEM_KEY", o.key}};
  spec.stdin_fd = stdin_fd;
  spec.max_output = s.max_output;
  spec.timeout_ms = s.timeout_ms;
  spec.kill_after_ms = s.kill_after_ms;
  spec.drain_ms = s.drain_ms;
  spec.terminal = true;  // one command, in the terminal's foreground as without idem
  spec.pty = o.pty;
  return spec;
}

// Runs the command of a durable claim and records its outcome under its attempt.
int run_claimed(engine::Engine& engine, const engine::Claimed& claimed,
                engine::CommandEffect& effect, const RunOptions& o, const std::string& shown) {
  const engine::Finished done = engine.carry_out(claimed, effect);
  if (effect.interrupted_by() == 0 && !effect.result().started)
    std::cerr << "idem: cannot run '" << o.command[0]
              << "': " << strerror(effect.result().exec_errno) << "\n";
  if (!done.recorded)
    std::cerr << "idem: " << shown << " was taken over by another attempt while this one ran; "
              << "this outcome was not recorded\n";
  return effect.exit_code();
}

}  // namespace

int run_run(const GlobalOptions& global, RunOptions& o) {
  if (o.command.empty())
    throw UsageError("missing command: idem run [OPTIONS] [-k KEY] -- COMMAND [ARG...]");
  const Settings s = parse_settings(o);
  const std::string cwd = current_dir();
  if (o.key_option->count() == 0) o.key = core::derived_key(cwd, o.command);
  const core::Key key = core::Key::of_argument(o.key);

  std::string stdin_sha256;
  util::Fd stdin_copy;
  if (o.hash_stdin) stdin_copy = buffer_stdin(stdin_sha256);

  // Handlers first: a SIGINT during the claim must be seen and recorded, not kill idem with the
  // key claimed (which would leave it to be judged abandoned).
  proc::install_signal_handlers();

  const int64_t lease_ms = configured_lease_ms(o.lease);  // a usage error before the store's
  auto notify = notify_spec(o.notify);
  auto store = open_store(global);
  engine::Front front = engine::make_front(*store, lease_ms);
  use_notify(front, std::move(notify), true,
             [](const std::string& text) { util::write_all(2, text); });
  // A replay is counted after its output went out, never before: the count is a write, and a
  // replay must not wait behind another process's write transaction to answer.
  front.replays = std::make_shared<store::ReplayTally>();
  const CliTraces traces(front);  // its spans go out once the command has ended
  engine::Engine engine(*store, front);
  const std::string shown = "key '" + core::display_key(o.key) + "'";
  engine::AttemptRequest req =
      attempt_request(key, o, s, cwd, o.hash_stdin ? &stdin_sha256 : nullptr, shown);
  req.traceparent = traces.parent();
  engine::CommandEffect effect(proc::spawning_runner(),
                               command_spec(o, s, stdin_copy.valid() ? stdin_copy.get() : 0),
                               engine::CommandEffect::Capture::handed_to_outcome);
  req.effect = &effect;  // a first run's claim records the command's group: one write, not two
  const engine::Claimed claimed = engine.claim(req);
  if (claimed.verdict != engine::ClaimVerdict::claimed) {
    const int code = answer_without_running(claimed, o, s, shown);
    std::cout.flush();
    try {
      if (!front.replays->empty()) front.replays->flush(*store);
    } catch (const StoreError&) {
      // A statistic: the replay itself was answered.
    }
    traces.send_now();
    if (!front.notifier) end_process(code);
    return code;
  }
  const int code = run_claimed(engine, claimed, effect, o, shown);
  traces.send_now();
  if (!front.notifier) end_process(code);
  return code;
}

}  // namespace idem::cli
