#pragma once
// Hex and base64 encodings. Knows nothing about idem.
#include <optional>
#include <string>
#include <string_view>

namespace idem::util {

std::string to_hex(std::string_view bytes);
std::string to_base64(std::string_view bytes);
// Standard alphabet with padding; returns nullopt on any malformed input.
std::optional<std::string> from_base64(std::string_view text);
// The value (0..63) of one digit of the standard base64 alphabet, or -1 for any other byte.
int base64_digit(char c);
// The value (0..15) of one hex digit of either case, or -1 for any other byte.
int hex_digit(char c);

}  // namespace idem::util
