// `idem run`: claim the key, run the command once, record and replay its outcome.
#include "cli/run.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "core/duration.hpp"
#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "util/clock.hpp"
#include "util/crash_point.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"

namespace idem::cli {

namespace {

struct Settings {
  int64_t ttl_ms;
  int64_t wait_ms;
  int64_t timeout_ms;
  int64_t kill_after_ms;
  int64_t max_output;
};

Settings parse_settings(const RunOptions& o) {
  Settings s{};
  s.ttl_ms = core::duration_arg("--ttl", o.ttl);
  s.wait_ms = o.wait.empty() ? 0 : core::duration_arg("--wait", o.wait);
  s.timeout_ms = o.timeout.empty() ? 0 : core::duration_arg("--timeout", o.timeout);
  s.kill_after_ms = core::duration_arg("--kill-after", o.kill_after);
  s.max_output = core::output_cap_arg("--max-output", o.max_output);
  if (!o.timeout.empty() && s.timeout_ms == 0) throw UsageError("--timeout must be above zero");
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
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UsageError(std::string("cannot read stdin for --hash-stdin: ") + strerror(errno));
    if (n == 0) break;
    hash.update(std::string_view(buf, size_t(n)));
    if (!util::write_all(copy.get(), std::string_view(buf, size_t(n))))
      throw Error(k_exit_internal, std::string("cannot buffer stdin: ") + strerror(errno));
  }
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
  auto output = core::CapturedOutput::decode(record.output);
  if (!output)
    throw StoreError("stored output of key '" + core::display_key(record.key) +
                     "' is corrupt; nothing was replayed");
  for (const auto& chunk : output->chunks())
    util::write_all(chunk.stream == core::Stream::out ? 1 : 2, chunk.bytes);
}

// A truncated record replays only what was kept: say so, or a caller takes part for the whole.
void warn_if_truncated(const core::Record& record, const std::string& shown) {
  if (!record.output_truncated) return;
  std::cerr << "idem: replayed output of " << shown << " is truncated: only its first "
            << record.output_bytes << " bytes were stored (--max-output)\n";
}

// " (process group N still has live processes)" for an attempt whose processes outlived it.
std::string live_group_text(const core::Record& record) {
  if (!proc::process_group_alive(record.owner, record.process_group)) return "";
  return "; its process group " + std::to_string(record.process_group.pgid) +
         " still has live processes";
}

// --retry-abandoned: a retry must never overlap what is left of the abandoned attempt (a script's
// background jobs survive idem's kill -9). Refuses (75) while its process group lives, or with
// --kill-stale ends that group first.
void clear_abandoned(const core::Record& r, const RunOptions& o, const Settings& s,
                     const std::string& shown) {
  if (!proc::process_group_alive(r.owner, r.process_group)) return;
  const std::string what = shown + ": abandoned attempt " + std::to_string(r.attempt) +
                           " still has live processes in process group " +
                           std::to_string(r.process_group.pgid);
  if (!o.kill_stale)
    throw Error(k_exit_running,
                what + "; nothing ran. Wait for them to end, or add --kill-stale to stop them");
  if (o.verbose) std::cerr << "idem: " << what << "; stopping them (--kill-stale)\n";
  if (!proc::kill_process_group(r.owner, r.process_group, s.kill_after_ms))
    throw Error(k_exit_running, what + " that TERM and KILL did not end; nothing ran");
}

}  // namespace

CLI::App* register_run(CLI::App& app, RunOptions& o) {
  auto* run = app.add_subcommand("run", "Run a command once per key; replay its outcome after");
  o.key_option = run->add_option("-k,--key", o.key,
                  "Idempotency key (1-255 bytes of printable UTF-8); default: derived from the "
                  "working directory and the command")
      ->type_name("KEY");
  run->add_option("--ttl", o.ttl, "How long a finished outcome is replayed")
      ->type_name("DURATION")->capture_default_str();
  run->add_option("--wait", o.wait,
                  "If the key is running elsewhere, wait up to DURATION for it, then act as a new "
                  "attempt would (default: refuse at once with 75)")
      ->type_name("DURATION");
  run->add_option("--timeout", o.timeout,
                  "Stop the command after DURATION: TERM to its process group, KILL after "
                  "--kill-after; exit 124 (default: none)")
      ->type_name("DURATION");
  run->add_option("--kill-after", o.kill_after,
                  "Grace between TERM and KILL for --timeout, a signal idem forwards, and "
                  "--kill-stale (a second INT/TERM/HUP KILLs at once)")
      ->type_name("DURATION")->capture_default_str();
  run->add_flag("--replay-failures", o.replay_failures,
                "A failed outcome is final and replayed (default: the next attempt runs again)");
  run->add_flag("--retry-abandoned", o.retry_abandoned,
                "Run again when the previous attempt's owner died mid-run (default: refuse, 69); "
                "refused with 75 while processes of that attempt are still alive");
  run->add_flag("--kill-stale", o.kill_stale,
                "With --retry-abandoned: first end the abandoned attempt's surviving processes "
                "(TERM to its process group, KILL after --kill-after)");
  run->add_flag("--hash-stdin", o.hash_stdin,
                "Read stdin fully, add its SHA-256 to the fingerprint, feed it to the command");
  run->add_option("--max-output", o.max_output,
                  "Stored output cap per record; live output always passes whole")
      ->type_name("SIZE")->capture_default_str();
  run->add_flag("--quiet-replay", o.quiet_replay,
                "On replay write nothing, only return the stored exit code");
  run->add_flag("-q,--quiet", o.quiet,
                "Print no refusal message for 65, 69 and 75, nor the notice that a replayed "
                "output is truncated");
  run->add_flag("-v,--verbose", o.verbose, "Say on stderr when an outcome is replayed or a wait happens");
  run->add_option("command", o.command, "The command and its arguments, after --")
      ->type_name("COMMAND [ARG...]");
  run->footer(
      "Examples:\n"
      "  idem run -k backup-$(date +%F) --ttl 7d -- ./backup.sh\n"
      "  idem run --wait 10m -- make release       # key derived from cwd and argv\n"
      "  printf '%s' \"$payload\" | idem run -k order-42 --hash-stdin -- ./charge.sh");
  return run;
}

namespace {

// Claims the key, waiting (with --wait) while another live owner runs it. Returns any verdict but
// `running`; throws the 75 refusal when the wait runs out. A signal while waiting ends the wait.
store::ClaimResult claim_or_wait(store::Store& store, store::ClaimRequest& req,
                                 const RunOptions& o, const Settings& s, const std::string& shown) {
  util::SystemClock clock;
  const int64_t wait_until = util::monotonic_ms() + s.wait_ms;
  int64_t poll_ms = 10;
  bool said_waiting = false;
  for (;;) {
    req.now_ms = clock.now_ms();
    store::ClaimResult claim = store.claim(req, proc::owner_gone);
    if (claim.verdict != core::Verdict::running) return claim;
    const core::Record& holder = *claim.existing;
    if (int sig = proc::pending_signal())
      throw Error(ExitCode(k_exit_signal_base + sig),
                  std::string("interrupted by ") + sigabbrev_np(sig) + " while waiting for " +
                      shown + "; nothing ran");
    if (util::monotonic_ms() >= wait_until) {
      std::string message = shown + " is running in " + owner_text(holder.owner) + " (started " +
                            ago(holder.started_ms, req.now_ms) + "); nothing ran";
      if (s.wait_ms > 0) message += " (waited " + o.wait + ")";
      throw Error(k_exit_running, message);
    }
    if (o.verbose && !said_waiting) {
      std::cerr << "idem: waiting up to " << o.wait << " for " << shown << " (running in "
                << owner_text(holder.owner) << ")\n";
      said_waiting = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::min<int64_t>(poll_ms, std::max<int64_t>(1, wait_until - util::monotonic_ms()))));
    poll_ms = std::min<int64_t>(poll_ms * 2, 250);
  }
}

// A verdict other than `claim`: replay the stored outcome, or refuse with the verdict's code.
int answer_without_running(const store::ClaimResult& claim, const RunOptions& o,
                           const std::string& shown, int64_t now_ms) {
  const core::Record& r = *claim.existing;
  switch (claim.verdict) {
    case core::Verdict::replay:
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
    case core::Verdict::conflict:
      throw Error(k_exit_conflict,
                  shown + " was used with a different command or input; nothing ran");
    case core::Verdict::abandoned:
      throw Error(k_exit_abandoned,
                  shown + ": attempt " + std::to_string(r.attempt) + " (" + owner_text(r.owner) +
                      ", started " + ago(r.started_ms, now_ms) +
                      ") died mid-run and its outcome is unknown" + live_group_text(r) +
                      "; nothing ran. Use --retry-abandoned or 'idem rm' once you have checked");
    case core::Verdict::running:
    case core::Verdict::claim:
      break;
  }
  throw Error(k_exit_internal, "unexpected verdict " + std::string(core::to_string(claim.verdict)));
}

// Runs the command of a durable claim and records its outcome under `attempt`.
int run_claimed(store::Store& store, const RunOptions& o, const Settings& s, int64_t attempt,
                int stdin_fd, const std::string& shown) {
  util::SystemClock clock;
  if (int sig = proc::pending_signal()) {
    // Interrupted between the claim and the start: nothing ran; record why.
    core::Outcome interrupted;
    interrupted.status = core::Status::failed;
    interrupted.signal = sig;
    interrupted.finished_ms = clock.now_ms();
    interrupted.note =
        std::string("idem received ") + sigabbrev_np(sig) + " before the command started";
    store.finish(o.key, attempt, interrupted);
    return k_exit_signal_base + sig;
  }

  proc::RunSpec spec;
  spec.argv = o.command;
  spec.extra_env = {{"IDEM_KEY", o.key}, {"IDEM_ATTEMPT", std::to_string(attempt)}};
  spec.stdin_fd = stdin_fd;
  spec.max_output = s.max_output;
  spec.timeout_ms = s.timeout_ms;
  spec.kill_after_ms = s.kill_after_ms;
  // Durable before the command starts, so if idem dies, a retry can find what it left running.
  spec.on_spawn = [&](const core::ProcessGroup& group) {
    store.set_process_group(o.key, attempt, group);
  };
  proc::RunResult result;
  try {
    result = proc::run_command(spec);
  } catch (const StoreError& e) {
    // The group could not be recorded, so the command was stopped before it could exec: say so
    // in the record if the store still takes it, rather than leave it to look abandoned.
    core::Outcome not_run;
    not_run.status = core::Status::failed;
    not_run.finished_ms = clock.now_ms();
    not_run.note = "not started: its process group could not be recorded";
    try {
      store.finish(o.key, attempt, not_run);
    } catch (const StoreError&) {
    }
    throw StoreError(std::string(e.what()) + "; the command did not start");
  }
  IDEM_CRASH_POINT("exited-before-finish");
  const int code = proc::exit_code_for(result);
  if (!result.started)
    std::cerr << "idem: cannot run '" << o.command[0] << "': " << strerror(result.exec_errno)
              << "\n";

  bool recorded;
  try {
    recorded = store.finish(o.key, attempt, proc::outcome_of(result, clock.now_ms()));
  } catch (const StoreError& e) {
    throw StoreError(std::string(e.what()) + "; the command ran (exit " + std::to_string(code) +
                     ") but its outcome could not be recorded");
  }
  IDEM_CRASH_POINT("finish-after-commit");
  if (!recorded)
    std::cerr << "idem: " << shown << " was taken over by another attempt while this one ran; "
              << "this outcome was not recorded\n";
  return code;
}

}  // namespace

int run_run(const GlobalOptions& global, RunOptions& o) {
  if (o.command.empty())
    throw UsageError("missing command: idem run [OPTIONS] [-k KEY] -- COMMAND [ARG...]");
  if (o.kill_stale && !o.retry_abandoned) throw UsageError("--kill-stale needs --retry-abandoned");
  const Settings s = parse_settings(o);
  const std::string cwd = current_dir();
  if (o.key_option->count() == 0) {
    o.key = core::derived_key(cwd, o.command);
  } else {
    core::validate_key(o.key);
  }

  std::string stdin_sha256;
  util::Fd stdin_copy;
  if (o.hash_stdin) stdin_copy = buffer_stdin(stdin_sha256);

  // Handlers first: a SIGINT during the claim must be seen and recorded, not kill idem with the
  // key claimed (which would leave it to be judged abandoned).
  proc::install_signal_handlers();

  auto store = open_store(global);
  store::ClaimRequest req;
  req.key = o.key;
  req.fingerprint = core::run_fingerprint(o.command, o.hash_stdin ? &stdin_sha256 : nullptr);
  req.owner = proc::describe_owner();
  req.ttl_ms = s.ttl_ms;
  req.request = nlohmann::json{{"argv", o.command}, {"cwd", cwd}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  req.policy = core::Policy{o.replay_failures, o.retry_abandoned};

  const std::string shown = "key '" + core::display_key(o.key) + "'";
  // With --retry-abandoned, an abandoned attempt is retried only once this process has seen that
  // none of its processes is left: claim first allowing no retry, check the attempt the claim
  // names, then claim allowing exactly that one (another may have been abandoned meanwhile).
  if (o.retry_abandoned) req.policy.retry_only_attempt = -1;
  store::ClaimResult claim = claim_or_wait(*store, req, o, s, shown);
  while (o.retry_abandoned && claim.verdict == core::Verdict::abandoned) {
    clear_abandoned(*claim.existing, o, s, shown);
    req.policy.retry_only_attempt = claim.existing->attempt;
    claim = claim_or_wait(*store, req, o, s, shown);
  }
  if (claim.verdict != core::Verdict::claim)
    return answer_without_running(claim, o, shown, req.now_ms);

  // The claim is durable: from here on, a crash of idem shows as abandoned, never as a key that
  // silently runs again.
  IDEM_CRASH_POINT("claim-after-commit");
  return run_claimed(*store, o, s, claim.attempt, stdin_copy.valid() ? stdin_copy.get() : 0, shown);
}

}  // namespace idem::cli
