#pragma once
// The one list of idem's exit codes (documented in README.md and idem(1)). A command's own exit
// code passes through unchanged; these are the codes idem itself chooses.
namespace idem {

enum ExitCode : int {
  k_exit_ok = 0,
  k_exit_already_done = 1,     // begin: the key already succeeded; end: already finished;
                               // rm/show/end: no such record
  k_exit_messages_failed = 1,  // each: a message failed, was refused or was malformed
  k_exit_findings = 1,         // doctor: something needs doing (each finding says what)
  k_exit_usage = 64,           // EX_USAGE: bad flag, key, duration or size
  k_exit_conflict = 65,        // EX_DATAERR: key reused with another fingerprint
  k_exit_abandoned = 69,       // EX_UNAVAILABLE: previous attempt's owner died mid-run
  k_exit_store = 74,           // EX_IOERR: the store cannot be opened, read or written
  k_exit_running = 75,         // EX_TEMPFAIL: the key is running in another live process
  k_exit_not_owner = 77,       // EX_NOPERM: end from a process that does not own the attempt
  k_exit_internal = 70,        // EX_SOFTWARE: a bug in idem
  k_exit_listen = 71,          // EX_OSERR: serve cannot listen on its address (in use, not allowed)
  k_exit_os = 71,              // EX_OSERR: a closed stdin/stdout/stderr cannot be made /dev/null,
                               // or the system refused a pipe or memory (ulimit -n reached)
  k_exit_timeout = 124,        // --timeout stopped the command (as timeout(1))
  k_exit_not_executable = 126,
  k_exit_not_found = 127,
  k_exit_signal_base = 128,  // 128 + N for a command killed by signal N
};

}  // namespace idem
