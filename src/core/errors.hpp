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

class StoreError : public Error {
 public:
  explicit StoreError(const std::string& message) : Error(k_exit_store, message) {}
};

}  // namespace idem
