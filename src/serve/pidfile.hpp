#pragma once
// `idem serve --pidfile PATH`: the daemon's process id, for init scripts and supervisors that
// want one. Written whole (a temp file renamed) once the daemon listens, removed when it exits.
#include <string>
#include <utility>

namespace idem::serve {

// Removes the pid file at `path` if it holds this process's id.
void remove_pid_file(const std::string& path) noexcept;

class PidFile {
 public:
  // Refuses (UsageError, one line) a file at `path` that holds the id of a live process, or that
  // holds no process id at all (it may be someone else's file); a dead process's is replaced.
  static void check(const std::string& path);

  explicit PidFile(std::string path) : path_(std::move(path)) {}
  ~PidFile() { remove(); }
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;

  // Writes this process's id. Throws UsageError when the file cannot be written.
  void write();
  // Removes the file if it still holds this process's id (never a successor's). Safe to call
  // from any thread, also just before _exit.
  void remove() const noexcept { remove_pid_file(path_); }

 private:
  std::string path_;
};

// The process id a pid file holds ("1234\n"), or -1. Pure.
long parse_pid(const std::string& text);

}  // namespace idem::serve
