#pragma once
// Typed errors carrying their exit code. Thrown above the low-level layers and caught once in
// main(), which prints "idem: <message>" and returns the code.
#include <stdexcept>
#include <string>

#include "core/exit_code.hpp"

namespace idem {

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(k_exit_usage, message) {}
};

// A system call failed for want of something the system did not give (71, EX_OSERR):
// "WHAT: <strerror>", and for EMFILE the open-files limit that was reached (`ulimit -n`).
Error os_error(const std::string& what, int err);

// Whether retrying later may succeed: transient for a store that is busy (a lock held past the
// busy timeout) or unreachable for now (a lost connection); permanent for one that never will
// without a change (not a store, a newer schema, no permission, a backend this build lacks).
// The daemon answers 503 + Retry-After for the first and 500 for the second; the CLI exits 74
// for both.
enum class StoreFailure { permanent, transient };

class StoreError : public Error {
 public:
  explicit StoreError(const std::string& message, StoreFailure failure = StoreFailure::permanent)
      : Error(k_exit_store, message), failure_(failure) {}
  StoreFailure failure() const { return failure_; }
  bool transient() const { return failure_ == StoreFailure::transient; }

 private:
  StoreFailure failure_;
};

}  // namespace idem
