// Base64 and hex (util/hex.hpp). The input is used twice: as text to decode, and as bytes to
// encode. from_base64 must accept exactly the canonical encodings plus those whose padding bits
// are not zero (RFC 4648 3.5 lets a decoder refuse those; this one accepts them).
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "util/hex.hpp"

using idem::util::from_base64;
using idem::util::to_base64;
using idem::util::to_hex;

namespace {

constexpr std::string_view k_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int value_of(char c) {
  auto at = k_alphabet.find(c);
  return at == std::string_view::npos ? -1 : int(at);
}

// Is `text` well formed: length a multiple of 4, alphabet characters, then at most two '=' at
// the very end? Sets `dirty` when the bits the padding discards are not zero.
bool well_formed(std::string_view text, bool& dirty) {
  dirty = false;
  if (text.size() % 4 != 0) return false;
  size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  std::string_view body = text.substr(0, text.size() - pad);
  for (char c : body)
    if (value_of(c) < 0) return false;
  if (pad == 0) return true;
  int last = value_of(body.back());
  dirty = pad == 2 ? (last & 0x0f) != 0 : (last & 0x03) != 0;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);

  // Decoding.
  bool dirty = false;
  bool expected = well_formed(input, dirty);
  auto decoded = from_base64(input);
  FUZZ_CHECK(decoded.has_value() == expected);
  if (decoded) {
    size_t pad = input.ends_with("==") ? 2 : input.ends_with("=") ? 1 : 0;
    FUZZ_CHECK(decoded->size() == input.size() / 4 * 3 - pad);
    std::string reencoded = to_base64(*decoded);
    if (dirty) {
      FUZZ_CHECK(reencoded != input);
      FUZZ_CHECK(from_base64(reencoded) == decoded);
    } else {
      FUZZ_CHECK(reencoded == input);
    }
  }

  // Encoding.
  std::string encoded = to_base64(input);
  FUZZ_CHECK(encoded.size() == (size + 2) / 3 * 4);
  bool encoded_dirty = true;
  FUZZ_CHECK(well_formed(encoded, encoded_dirty) && !encoded_dirty);
  FUZZ_CHECK(from_base64(encoded) == std::string(input));

  std::string hex = to_hex(input);
  FUZZ_CHECK(hex.size() == 2 * size);
  for (size_t i = 0; i < size; ++i) {
    auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    FUZZ_CHECK(std::string_view("0123456789abcdef").find(hex[2 * i]) != std::string_view::npos);
    FUZZ_CHECK(std::string_view("0123456789abcdef").find(hex[2 * i + 1]) != std::string_view::npos);
    FUZZ_CHECK(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]) == data[i]);
  }
  return 0;
}
