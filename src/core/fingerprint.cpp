#include "core/fingerprint.hpp"

#include "util/hex.hpp"

namespace idem::core {

void Fingerprinter::add_field(std::string_view name, std::string_view value) {
  hash_.update(name);
  hash_.update("=");
  hash_.update(std::to_string(value.size()));
  hash_.update(":");
  hash_.update(value);
}

void Fingerprinter::add_argv(const std::vector<std::string>& argv) {
  add_field("argc", std::to_string(argv.size()));
  for (const auto& arg : argv) add_field("arg", arg);
}

std::string Fingerprinter::hex() { return util::to_hex(hash_.finish()); }

std::string run_fingerprint(const std::vector<std::string>& argv, const std::string* stdin_sha256) {
  Fingerprinter f;
  f.add_field("kind", "run");
  f.add_argv(argv);
  if (stdin_sha256 != nullptr) f.add_field("stdin-sha256", *stdin_sha256);
  return f.hex();
}

std::string begin_fingerprint(const std::string* given, const std::string* stdin_sha256) {
  Fingerprinter f;
  f.add_field("kind", "begin");
  if (given != nullptr) f.add_field("fingerprint", *given);
  if (stdin_sha256 != nullptr) f.add_field("stdin-sha256", *stdin_sha256);
  return f.hex();
}

}  // namespace idem::core
