// Keys (core/key.hpp): key_problem against an independent reading of "1-255 bytes of printable
// UTF-8 without bidirectional controls or a byte order mark", Key::of_argument agreeing with it,
// and display_key's bounds.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "fuzz_check.hpp"
#include "utf8_oracle.hpp"

namespace {

// C0 controls and DEL are single bytes; C1 controls (U+0080-U+009F) are C2 80 .. C2 9F.
bool has_control(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    auto b = uint8_t(s[i]);
    if (b < 0x20 || b == 0x7f) return true;
    if (b == 0xc2 && i + 1 < s.size() && uint8_t(s[i + 1]) >= 0x80 && uint8_t(s[i + 1]) <= 0x9f)
      return true;
  }
  return false;
}

// Bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and the byte
// order mark (U+FEFF), found by their UTF-8 bytes: in well-formed UTF-8 a character's encoding
// never starts inside another's.
bool has_spoofing(std::string_view s) {
  for (std::string_view seq : {"\xd8\x9c", "\xe2\x80\x8e", "\xe2\x80\x8f", "\xef\xbb\xbf"})
    if (s.find(seq) != std::string_view::npos) return true;
  for (size_t i = 0; i + 2 < s.size(); ++i) {
    if (uint8_t(s[i]) != 0xe2) continue;
    auto b1 = uint8_t(s[i + 1]), b2 = uint8_t(s[i + 2]);
    if (b1 == 0x80 && b2 >= 0xaa && b2 <= 0xae) return true;
    if (b1 == 0x81 && b2 >= 0xa6 && b2 <= 0xa9) return true;
  }
  return false;
}

void check_display(std::string_view key, size_t max) {
  std::string shown = idem::core::display_key(key, max);
  FUZZ_CHECK(shown.size() <= key.size() + 3);
  if (key.size() <= max) {
    FUZZ_CHECK(shown == key);
    return;
  }
  // Cut: a prefix of the key, then "...", within max (or within "..." when max < 3).
  FUZZ_CHECK(shown.size() <= (max > 3 ? max : 3));
  FUZZ_CHECK(shown.size() >= 3 && shown.ends_with("..."));
  std::string_view prefix = std::string_view(shown).substr(0, shown.size() - 3);
  FUZZ_CHECK(key.starts_with(prefix));
  // The cut falls on a character boundary, so a valid key stays valid UTF-8 when shortened.
  if (well_formed_utf8(key)) FUZZ_CHECK(well_formed_utf8(shown));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view key(reinterpret_cast<const char*>(data), size);

  auto problem = idem::core::key_problem(key);
  bool expected_valid = !key.empty() && key.size() <= idem::core::k_max_key_bytes &&
                        well_formed_utf8(key) && !has_control(key) && !has_spoofing(key);
  FUZZ_CHECK(problem.has_value() == !expected_valid);
  if (problem) {
    FUZZ_CHECK(!problem->empty());
  } else {
    FUZZ_CHECK(key.size() >= 1 && key.size() <= 255);
    for (char c : key) FUZZ_CHECK(uint8_t(c) >= 0x20 && uint8_t(c) != 0x7f);
  }

  bool threw = false;
  try {
    (void)idem::core::Key::of_argument(key);
  } catch (const idem::UsageError& e) {
    threw = true;
    FUZZ_CHECK(std::string_view(e.what()).ends_with(*problem));
  }
  FUZZ_CHECK(threw == problem.has_value());

  check_display(key, 255);
  // Small limits exercise the cut; the first byte picks one so every length meets every limit.
  for (size_t max : {size_t(0), size_t(1), size_t(3), size_t(4), size_t(8)})
    check_display(key, max);
  if (size > 0) check_display(key, data[0] % 64);
  return 0;
}
