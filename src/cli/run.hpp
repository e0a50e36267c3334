#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"

namespace idem::cli {

struct RunOptions {
  std::string key;
  std::string ttl = "24h";
  std::string wait;
  std::string timeout;
  std::string kill_after = "10s";
  std::string drain = "5s";
  std::string lease;        // empty: $IDEM_LEASE, else 30s (stores shared by hosts only)
  std::string serial;       // --serial GROUP: empty, none
  std::string serial_wait;  // empty: wait for the turn without a limit
  bool replay_failures = false;
  bool retry_abandoned = false;
  bool kill_stale = false;
  bool hash_stdin = false;
  std::string max_output = "16MiB";
  bool quiet_replay = false;
  bool quiet = false;
  bool verbose = false;
  bool pty = false;
  NotifyOptions notify;
  std::vector<std::string> command;
  const CLI::Option* key_option = nullptr;  // tells `-k ""` (an error) from no -k (derived)
};

// A capture's buffers (up to --max-output) come from mmap and go back to the system when freed:
// glibc's threshold otherwise rises with each buffer freed, until freed buffers stay in the
// heap, still resident, while the output is being stored. Set by main for `run`, with
// k_run_heap_bytes (util::prefault_heap).
inline constexpr size_t k_run_mmap_threshold = 256 * 1024;
// About what `idem run` allocates from its heap in a first run or a replay (the command line,
// SQLite's schema, statements and pages, the child's plan): faulted in at its start, in one
// call (util/heap.hpp).
inline constexpr size_t k_run_heap_bytes = 512 * 1024;

CLI::App* register_run(CLI::App& app, RunOptions& options);
int run_run(const GlobalOptions& global, RunOptions& options);

}  // namespace idem::cli
