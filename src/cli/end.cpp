// `idem end`: record the outcome of a key claimed with `idem begin`.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/begin.hpp"
#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "engine/attempt.hpp"
#include "proc/liveness.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

namespace idem::cli {

namespace {
// Appends the file to the capture piece by piece, as a command's pipe is read, so the file is
// held once, in the capture, which finish then stores without copying (take_encoded).
void capture_file(const std::string& path, const char* flag, core::Stream stream,
                  core::CapturedOutput& output) {
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto refuse = [&] {
    throw UsageError(std::string("cannot read ") + flag + " '" + path +
                     "': " + std::strerror(errno));
  };
  if (!fd.valid()) refuse();
  std::vector<char> buf(size_t(64) << 10);
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n > 0) {
      output.append(stream, std::string_view(buf.data(), size_t(n)));
    } else if (n == 0) {
      return;
    } else if (errno != EINTR) {
      refuse();
    }
  }
}
}  // namespace

CLI::App* register_end(CLI::App& app, EndOptions& o) {
  auto* end = app.add_subcommand("end", "Record the outcome of a key claimed with 'idem begin'");
  add_key_option(*end, o.key, "The idempotency key")->required();
  end->add_option("--exit", o.exit_code, "The outcome: 0 succeeded, anything else failed")
      ->type_name("CODE")
      ->capture_default_str()
      ->check(CLI::Range(0, 255));
  end->add_option("--stdout-file", o.stdout_file, "Store this file as the outcome's stdout")
      ->type_name("FILE");
  end->add_option("--stderr-file", o.stderr_file, "Store this file as the outcome's stderr")
      ->type_name("FILE");
  o.owner_pid_option =
      end->add_option("--owner-pid", o.owner_pid, "The owner given to 'idem begin --owner-pid'")
          ->type_name("PID");
  end->footer(
      "Exit: 0 recorded; 77 the caller does not own the key's current attempt (nothing changes);\n"
      "1 no record, or the caller's attempt already finished (a second end); 64 usage; 74 store.\n"
      "Example:\n  idem end -k order-42 --exit 0 --stdout-file receipt.json");
  return end;
}

int run_end(const GlobalOptions& global, const EndOptions& o) {
  const core::Key key = core::Key::of_argument(o.key);
  core::CapturedOutput output;
  if (!o.stdout_file.empty())
    capture_file(o.stdout_file, "--stdout-file", core::Stream::out, output);
  if (!o.stderr_file.empty())
    capture_file(o.stderr_file, "--stderr-file", core::Stream::err, output);
  auto store = open_store(global);
  engine::Front front = engine::make_front(*store, 0);
  const CliTraces traces(front);  // ends the span begin's claim stored (SPEC §12)
  engine::Engine engine(*store, front);
  const std::string shown = "key '" + core::display_key(key.str()) + "'";
  auto record = engine.current(key.str());
  if (!record) throw Error(k_exit_already_done, "no record for " + shown);
  const core::Owner me = script_owner(o.owner_pid_option, o.owner_pid);
  const core::Owner& owner = record->owner;
  auto same = [&](const core::Owner& who) {
    // A twin host or another container may hold a process of the same pid and start time; a
    // record from before machine ids and namespaces were recorded is matched as it was then.
    return owner.host == who.host && owner.boot_id == who.boot_id && owner.pid == who.pid &&
           owner.start_ticks == who.start_ticks &&
           (owner.machine_id.empty() || owner.machine_id == who.machine_id) &&
           (owner.pid_ns == 0 || owner.pid_ns == who.pid_ns);
  };
  // Without --owner-pid the owner is the caller: idem's parent, or idem itself when the caller
  // exec'd it (bash runs the last command of `bash -c '... && idem end -k K'` by exec, which keeps
  // the pid and its start time).
  const bool given = o.owner_pid_option->count() > 0;
  bool mine = same(me) || (!given && same(proc::describe_owner()));
  // A second end by the owner (a script's error path after its success path, say): the outcome
  // stands, nothing to do.
  if (mine && (record->status == core::Status::succeeded || record->status == core::Status::failed))
    throw Error(k_exit_already_done, shown + " already finished (" +
                                         std::string(core::to_string(record->status)) + ", exit " +
                                         exit_summary(*record) + ", attempt " +
                                         std::to_string(record->attempt) + "); nothing recorded");
  if (record->status != core::Status::running || !mine)
    throw Error(k_exit_not_owner, shown + ": the caller (pid " + std::to_string(me.pid) +
                                      ") does not own its current attempt (" +
                                      std::string(core::to_string(record->status)) + ", attempt " +
                                      std::to_string(record->attempt) + ", owner pid " +
                                      std::to_string(owner.pid) + "); nothing recorded");
  core::Outcome outcome;
  outcome.status = o.exit_code == 0 ? core::Status::succeeded : core::Status::failed;
  outcome.exit_code = o.exit_code;
  outcome.output_bytes = output.stored_bytes();
  outcome.output_truncated = output.truncated();
  outcome.output = output.take_encoded();
  if (!engine.finish(key.str(), record->attempt, std::move(outcome)))
    throw Error(k_exit_not_owner, shown + ": the attempt changed meanwhile; nothing recorded");
  return k_exit_ok;
}

}  // namespace idem::cli
