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

}  // namespace idem::util
