// `idem tail`: the output of a key's latest attempt so far, and with -f live until it ends
// (SPEC §10). engine::Follower reads it; this writes stdout's bytes to stdout and stderr's to
// stderr, and ends as a replay would.
#include <iostream>
#include <string>

#include "cli/inspect.hpp"
#include "core/errors.hpp"
#include "core/key.hpp"
#include "engine/follow.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

namespace idem::cli {

namespace {
// Between two looks at an attempt that wrote nothing new (the feed writes every 20 ms).
constexpr int64_t k_tail_pause_ms = 20;
}  // namespace

CLI::App* register_tail(CLI::App& app, TailOptions& o) {
  auto* tail = app.add_subcommand(
      "tail", "Print the output of a key's latest attempt so far; with -f, follow it live");
  tail->add_option("key", o.key, "The record's key (or its name PATH#KEY, as idem ls prints it)")
      ->required()
      ->type_name("KEY");
  tail->add_flag("-f,--follow", o.follow,
                 "Follow the attempt until it ends, then exit with its exit code (as a replay)");
  tail->footer(
      "Examples:\n  idem tail nightly-backup\n  idem tail -f nightly-backup\n"
      "  idem tail -f '/hooks/deploy#d-42'");
  return tail;
}

int run_tail(const GlobalOptions& global, const TailOptions& o) {
  core::validate_record_name(o.key);
  const std::string shown = "key '" + core::display_key(o.key) + "'";
  auto store = open_store(global);
  const util::Clock& clock = util::process_clock();
  engine::Follower follower(o.key, proc::owner_gone);
  const engine::Follower::Emit write = [](core::Stream s, std::string_view bytes, int64_t) {
    return util::write_all(s == core::Stream::out ? 1 : 2, bytes);
  };
  proc::install_child_handlers();  // SIGPIPE ignored: a reader that goes ends the follow
  for (;;) {
    const std::optional<engine::FollowEnd> end = follower.look(*store, write, clock.now_ms());
    if (follower.stopped()) return k_exit_ok;  // stdout or stderr was closed
    if (!end) {
      if (follower.emitted()) continue;  // more may be there already
      if (!o.follow) {
        if (follower.attempt() == 0)
          std::cerr << "idem: " << shown
                    << " waits its turn in its serial group; 'idem tail -f' follows it\n";
        else
          std::cerr << "idem: " << shown << " is still running (attempt " << follower.attempt()
                    << "); 'idem tail -f' follows it\n";
        return k_exit_running;
      }
      clock.sleep_ms(k_tail_pause_ms);
      continue;
    }
    const std::optional<core::Record>& r = end->record;
    const int code = engine::follow_exit_code(*end);  // the page's end event says the same
    switch (end->kind) {
      case engine::FollowEnd::Kind::missing:
        throw Error(ExitCode(code), follower.attempt() == 0
                                        ? "no record for " + shown
                                        : shown + " was removed while it was followed");
      case engine::FollowEnd::Kind::replaced:
        throw Error(ExitCode(code),
                    shown + ": attempt " + std::to_string(follower.attempt()) +
                        " ended and attempt " + std::to_string(r->attempt) +
                        " began before its end could be read; 'idem log' shows how it ended");
      case engine::FollowEnd::Kind::abandoned:
        throw Error(ExitCode(code), shown + ": attempt " + std::to_string(r->attempt) + " (pid " +
                                        std::to_string(r->owner.pid) + " on " + r->owner.host +
                                        ", started " +
                                        util::human_duration(clock.now_ms() - r->started_ms) +
                                        " ago) died mid-run and its outcome is unknown");
      case engine::FollowEnd::Kind::ended:
        break;
    }
    if (r->status == core::Status::superseded)
      throw Error(ExitCode(code), shown + " was superseded by '" +
                                      core::display_key(r->superseded_by) +
                                      "' in its serial group before it ran");
    if (r->output_truncated)
      std::cerr << "idem: output of " << shown << " is truncated: only its first "
                << r->output_bytes << " bytes were stored (--max-output)\n";
    return code;
  }
}

}  // namespace idem::cli
