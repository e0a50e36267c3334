#include "util/hex.hpp"

#include <array>
#include <cstdint>

namespace idem::util {

std::string to_hex(std::string_view bytes) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(k_digits[c >> 4]);
    out.push_back(k_digits[c & 0x0f]);
  }
  return out;
}

namespace {
constexpr char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int base64_digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::string to_base64(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) |
                 uint8_t(bytes[i + 2]);
    out.push_back(k_b64[(n >> 18) & 63]);
    out.push_back(k_b64[(n >> 12) & 63]);
    out.push_back(k_b64[(n >> 6) & 63]);
    out.push_back(k_b64[n & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    out.push_back(k_b64[(n >> 18) & 63]);
    out.push_back(k_b64[(n >> 12) & 63]);
    out += "==";
  } else if (rest == 2) {
    uint32_t n = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8);
    out.push_back(k_b64[(n >> 18) & 63]);
    out.push_back(k_b64[(n >> 12) & 63]);
    out.push_back(k_b64[(n >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> from_base64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    std::array<int, 4> v{};
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      char c = text[i + j];
      if (c == '=') {
        // Padding only in the last quantum, only in its last two places, and only trailing.
        if (i + 4 != text.size() || j < 2) return std::nullopt;
        ++pad;
        v[j] = 0;
      } else {
        if (pad > 0) return std::nullopt;
        v[j] = base64_digit(c);
        if (v[j] < 0) return std::nullopt;
      }
    }
    uint32_t n = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | v[3];
    out.push_back(char((n >> 16) & 0xff));
    if (pad < 2) out.push_back(char((n >> 8) & 0xff));
    if (pad < 1) out.push_back(char(n & 0xff));
  }
  return out;
}

}  // namespace idem::util
