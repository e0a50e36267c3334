// `idem begin`: claim a key for the calling script.
#include "cli/begin.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "core/duration.hpp"
#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "engine/attempt.hpp"
#include "proc/liveness.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"
#include "util/sha256.hpp"

namespace idem::cli {

core::Owner script_owner(const CLI::Option* owner_pid_option, int64_t owner_pid) {
  const bool given = owner_pid_option != nullptr && owner_pid_option->count() > 0;
  if (given && (owner_pid <= 0 || owner_pid > INT32_MAX))
    throw UsageError("--owner-pid must be a positive process id, got " + std::to_string(owner_pid));
  pid_t pid = given ? pid_t(owner_pid) : ::getppid();
  core::Owner owner = proc::describe_owner(pid);
  if (owner.start_ticks == 0) {
    if (given) throw UsageError("--owner-pid " + std::to_string(pid) + ": no such process");
    throw UsageError("no process " + std::to_string(pid) + " to own the key");
  }
  return owner;
}

CLI::App* register_begin(CLI::App& app, BeginOptions& o) {
  auto* begin = app.add_subcommand(
      "begin", "Claim a key for the calling script; 'idem end' records the outcome");
  add_key_option(*begin, o.key, "The idempotency key")->required();
  begin->add_option("--ttl", o.ttl, "How long a finished outcome counts as done")
      ->type_name("DURATION")
      ->capture_default_str();
  begin
      ->add_option("--wait", o.wait,
                   "If the key is running, wait up to DURATION for it (default: refuse, 75)")
      ->type_name("DURATION");
  o.owner_pid_option =
      begin
          ->add_option("--owner-pid", o.owner_pid,
                       "The process that owns the claim (default: the caller, idem's parent)")
          ->type_name("PID");
  o.fingerprint_option =
      begin
          ->add_option(
              "--fingerprint", o.fingerprint,
              "What the work is about (an amount, a payload's digest): the same key with another "
              "STRING is a conflict (65)")
          ->type_name("STRING");
  begin->add_flag("--hash-stdin", o.hash_stdin,
                  "Read stdin fully and add its SHA-256 to the fingerprint");
  begin->add_flag("--print", o.print, "When the key already succeeded, write its stored stdout");
  begin->add_flag("--retry-abandoned", o.retry_abandoned,
                  "Claim again after an owner that died mid-run (default: refuse, 69); refused "
                  "with 75 while processes of its process group are still alive");
  begin->add_flag("--kill-stale", o.kill_stale,
                  "With --retry-abandoned: first end the dead owner's surviving process group "
                  "(TERM, KILL 10s later)");
  begin->add_flag(
      "-q,--quiet", o.quiet,
      "Print no message when the key is running elsewhere (75); 65, 69 and a 75 for processes "
      "an abandoned attempt left running still print their line");
  begin->footer(
      "Exit: 0 the caller owns the key and must do the work; 1 the key already succeeded;\n"
      "65 conflict; 69 abandoned; 74 store; 75 running.\n"
      "Example:\n"
      "  if idem begin -k order-42 --fingerprint \"amount=$amount\"; then\n"
      "    if charge_card; then idem end -k order-42; else idem end -k order-42 --exit $?; fi\n"
      "  fi");
  return begin;
}

namespace {

// The owner's process group, when the owner leads it (a script started as a job, by setsid, or
// by idem run): then everything in it is the script's. 0 otherwise (the group is someone else's,
// such as the shell or cron job that started the script).
core::ProcessGroup owned_group(const core::Owner& owner) {
  const pid_t pid = pid_t(owner.pid);
  if (::getpgid(pid) != pid) return {};
  return core::ProcessGroup{owner.pid, owner.start_ticks};
}

constexpr int64_t k_kill_stale_grace_ms = 10000;

// --hash-stdin: stdin's SHA-256 in hex, read to its end (begin runs nothing to feed it to).
std::string hash_stdin() {
  util::Sha256 hash;
  if (!util::read_chunks(0, [&hash](std::string_view chunk) { hash.update(chunk); }))
    throw UsageError(std::string("cannot read stdin for --hash-stdin: ") + std::strerror(errno));
  return util::to_hex(hash.finish());
}

// --fingerprint and --hash-stdin: what the work is about, so the same key asked for other work
// is a conflict rather than "already done".
std::string fingerprint_of(const BeginOptions& o) {
  const bool given = o.fingerprint_option != nullptr && o.fingerprint_option->count() > 0;
  if (given && o.fingerprint.empty())
    throw UsageError("--fingerprint must not be empty (an unset variable?)");
  const std::string stdin_sha256 = o.hash_stdin ? hash_stdin() : std::string();
  return core::begin_fingerprint(given ? &o.fingerprint : nullptr,
                                 o.hash_stdin ? &stdin_sha256 : nullptr);
}

// As `idem run --retry-abandoned`: never claim over a dead owner whose group still runs.
void clear_abandoned(const core::Record& r, const BeginOptions& o, const std::string& shown) {
  const std::string what = shown + ": the dead owner's " + core::processes_place(r.process_group) +
                           " still has live processes";
  switch (engine::clear_leftovers(r, o.kill_stale, k_kill_stale_grace_ms)) {
    case engine::Leftovers::none:
      return;
    case engine::Leftovers::unproven:
      warn_unproven_leftovers(r, shown);
      return;
    case engine::Leftovers::alive:
      throw LeftoversRefusal(
          what + "; not claimed. Wait for them to end, or add --kill-stale to stop them");
    case engine::Leftovers::survived:
      throw LeftoversRefusal(what + " that TERM and KILL did not end; not claimed");
  }
}

}  // namespace

namespace {

// A verdict other than `claimed`: 1 for a key already done (its stdout with --print), or the
// refusal with its code.
int answer_without_claim(const engine::Claimed& claimed, const BeginOptions& o,
                         const std::string& shown) {
  const core::Record& r = *claimed.existing;
  switch (claimed.verdict) {
    case engine::ClaimVerdict::replay:
      if (o.print) {
        auto out = core::CapturedOutput::decode(r.output);
        if (out) util::write_all(1, out->stream_bytes(core::Stream::out));
        if (r.output_truncated && !o.quiet)
          std::cerr << "idem: stored output of " << shown << " is truncated: only its first "
                    << r.output_bytes << " bytes were stored\n";
      }
      return k_exit_already_done;
    case engine::ClaimVerdict::conflict:
      throw Error(k_exit_conflict, shown +
                                       " was used by another command or with another "
                                       "fingerprint; nothing to do here");
    case engine::ClaimVerdict::abandoned:
      throw Error(k_exit_abandoned, shown + ": an earlier owner (pid " +
                                        std::to_string(r.owner.pid) +
                                        ") died mid-run; its outcome is unknown");
    case engine::ClaimVerdict::running:
      throw Error(k_exit_running, shown + " is running in pid " + std::to_string(r.owner.pid) +
                                      " on " + r.owner.host);
    case engine::ClaimVerdict::queued:
    case engine::ClaimVerdict::full:
      throw Error(k_exit_running, shown + " waits its turn in a serial group (pid " +
                                      std::to_string(r.owner.pid) + " on " + r.owner.host + ")");
    case engine::ClaimVerdict::superseded:
      throw Error(k_exit_conflict, shown + " was superseded in its serial group before it ran");
    case engine::ClaimVerdict::claimed:
    case engine::ClaimVerdict::declined:
      break;
  }
  throw Error(k_exit_internal,
              "unexpected verdict " + std::string(engine::to_string(claimed.verdict)));
}

}  // namespace

int run_begin(const GlobalOptions& global, const BeginOptions& o) {
  const core::Key key = core::Key::of_argument(o.key);
  if (o.kill_stale && !o.retry_abandoned) throw UsageError("--kill-stale needs --retry-abandoned");
  const int64_t ttl_ms = core::positive_duration_arg("--ttl", o.ttl);
  const int64_t wait_ms = o.wait.empty() ? 0 : core::duration_arg("--wait", o.wait);
  const std::string fingerprint = fingerprint_of(o);
  auto store = open_store(global);
  // No lease: nothing would renew it once begin has exited.
  engine::Front front = engine::make_front(*store, 0);
  // The attempt's span is stored with its claim and ended by `idem end` (SPEC §12).
  const CliTraces traces(front);
  engine::Engine engine(*store, front);
  const std::string shown = "key '" + core::display_key(o.key) + "'";
  engine::AttemptRequest req(key);
  req.claim.fingerprint = fingerprint;
  req.claim.kind = "begin";
  req.claim.owner = script_owner(o.owner_pid_option, o.owner_pid);
  req.claim.ttl_ms = ttl_ms;
  req.claim.request = nlohmann::json{{"owner_pid", req.claim.owner.pid}}.dump();
  req.claim.policy = core::Policy{false, o.retry_abandoned};
  req.wait.wait_ms = wait_ms;
  req.traceparent = traces.parent();
  req.clear_abandoned = [&](const core::Record& r) {
    clear_abandoned(r, o, shown);
    return true;
  };
  const engine::Claimed claimed = engine.claim(req);
  if (claimed.verdict != engine::ClaimVerdict::claimed)
    return answer_without_claim(claimed, o, shown);
  if (core::ProcessGroup group = owned_group(req.claim.owner); group.pgid != 0)
    engine.record_group(claimed, group);
  return k_exit_ok;
}

}  // namespace idem::cli
