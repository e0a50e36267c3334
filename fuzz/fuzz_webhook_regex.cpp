// The regex rules of webhook hooks (webhook/regex.hpp): whatever pattern an operator writes
// either compiles or is refused with std::invalid_argument and a reason; whatever value a sender
// sends is matched without crashing, and reads as Go reads it: a byte that is not UTF-8 is a
// U+FFFD (checked against the fuzz targets' own reading of UTF-8), and every value is a run of
// characters that (?s). matches.
//
// Input layout: the pattern up to the first newline, then the value.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "utf8_oracle.hpp"
#include "webhook/regex.hpp"

using idem::webhook::Regex;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Regex k_replacement("\\x{FFFD}");
  static const Regex k_characters("(?s)^.*$");
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nl = input.find('\n');
  std::string_view pattern = input.substr(0, nl);
  std::string_view value = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  FUZZ_CHECK(k_characters.search(value));
  FUZZ_CHECK(k_replacement.search(value) ==
             (!well_formed_utf8(value) || value.find("\xEF\xBF\xBD") != std::string_view::npos));
  try {
    Regex regex(pattern);
    FUZZ_CHECK(regex.pattern() == pattern);
    regex.search(value);
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(*e.what() != '\0');
  }
  return 0;
}
