#pragma once
// Fingerprints: SHA-256 over what an attempt asks for, with unambiguous boundaries between
// fields, so `a "b c"` and `a b c` differ.
#include <string>
#include <string_view>
#include <vector>

#include "util/sha256.hpp"

namespace idem::core {

class Fingerprinter {
 public:
  // Each field is framed as <name>=<decimal length>:<bytes>; names are fixed by the caller.
  void add_field(std::string_view name, std::string_view value);
  // argc, then each argument framed by its length.
  void add_argv(const std::vector<std::string>& argv);
  // Lower-case hex digest; call once.
  std::string hex();

 private:
  util::Sha256 hash_;
};

// The fingerprint of `idem run`: argv, plus stdin's SHA-256 when --hash-stdin is given.
std::string run_fingerprint(const std::vector<std::string>& argv, const std::string* stdin_sha256);

// The fingerprint of `idem begin`: the kind alone, plus --fingerprint's string and stdin's SHA-256
// (--hash-stdin) when given. Without either it is the one every begin had before they existed,
// so a key claimed by an older idem is still the same attempt.
std::string begin_fingerprint(const std::string* given, const std::string* stdin_sha256);

}  // namespace idem::core
