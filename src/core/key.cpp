#include "core/key.hpp"

#include <algorithm>
#include <cstdint>

#include "core/errors.hpp"
#include "core/fingerprint.hpp"

namespace idem::core {

namespace {

// Decodes one UTF-8 sequence at `pos`; returns its code point and advances, or -1 if malformed
// (overlong forms, surrogates and values past U+10FFFF included).
int32_t decode_utf8(std::string_view s, size_t& pos) {
  auto byte = [&](size_t i) { return uint8_t(s[i]); };
  uint8_t b0 = byte(pos);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  int len;
  int32_t cp;
  int32_t min;
  if ((b0 & 0xe0) == 0xc0) {
    len = 2, cp = b0 & 0x1f, min = 0x80;
  } else if ((b0 & 0xf0) == 0xe0) {
    len = 3, cp = b0 & 0x0f, min = 0x800;
  } else if ((b0 & 0xf8) == 0xf0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  if (pos + size_t(len) > s.size()) return -1;
  for (int i = 1; i < len; ++i) {
    uint8_t b = byte(pos + size_t(i));
    if ((b & 0xc0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
  pos += size_t(len);
  return cp;
}

// "U+202E".
std::string code_point_name(int32_t cp) {
  static constexpr char k_digits[] = "0123456789ABCDEF";
  std::string hex;
  for (int shift = 12; shift >= 0; shift -= 4) hex += k_digits[(cp >> shift) & 0xf];
  return "U+" + hex;
}

}  // namespace

std::optional<std::string> key_problem(std::string_view key) {
  if (key.empty()) return "key is empty";
  if (key.size() > k_max_key_bytes)
    return "key is " + std::to_string(key.size()) + " bytes; the limit is 255";
  size_t pos = 0;
  while (pos < key.size()) {
    size_t at = pos;
    int32_t cp = decode_utf8(key, pos);
    if (cp < 0) return "key is not valid UTF-8 at byte " + std::to_string(at);
    // C0 controls, DEL and C1 controls are not printable.
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
      return "key has a control character at byte " + std::to_string(at);
    // Unicode's bidirectional controls reorder what a terminal shows (`idem ls` would print a
    // key as another), and a byte order mark is invisible: both let one key pass for another.
    if (cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069))
      return "key has a bidirectional control character (" + code_point_name(cp) + ") at byte " +
             std::to_string(at);
    if (cp == 0xfeff) return "key has a byte order mark (U+FEFF) at byte " + std::to_string(at);
  }
  return std::nullopt;
}

std::optional<Key> Key::parse(std::string_view text, std::string& why) {
  if (auto problem = key_problem(text)) {
    why = std::move(*problem);
    return std::nullopt;
  }
  return Key(text);
}

Key Key::of_argument(std::string_view text) {
  std::string why;
  if (auto key = parse(text, why)) return std::move(*key);
  throw UsageError("bad key: " + why);
}

namespace {

// The proxy's records: "proxy#" + SCOPE ("-" or 16 lower-case hex digits) + "#" + KEY.
std::optional<std::string> proxy_record_problem(std::string_view name,
                                                const std::optional<std::string>& problem) {
  std::string_view rest = name.substr(6);
  size_t hash = rest.find('#');
  if (hash == std::string_view::npos) return problem;
  std::string_view scope = rest.substr(0, hash);
  bool hex = scope.size() == 16 && std::all_of(scope.begin(), scope.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
             });
  if (scope != "-" && !hex) return problem;
  if (auto key = key_problem(rest.substr(hash + 1)))
    return "after proxy#" + std::string(scope) + "#: " + *key;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> record_name_problem(std::string_view name) {
  auto problem = key_problem(name);
  if (problem && name.starts_with("proxy#")) return proxy_record_problem(name, problem);
  if (!problem || !name.starts_with('/')) return problem;
  // A hook path holds no '#', so the first one ends it.
  size_t hash = name.find('#');
  if (hash == std::string_view::npos) return problem;
  std::string_view path = name.substr(0, hash);
  bool path_ok = path.size() <= k_max_hook_path_bytes;
  for (char c : path) path_ok = path_ok && c > 0x20 && c < 0x7f && c != '?';
  if (!path_ok) return problem;
  if (auto key = key_problem(name.substr(hash + 1)))
    return "after " + std::string(path) + "#: " + *key;
  return std::nullopt;
}

void validate_record_name(std::string_view name) {
  if (auto problem = record_name_problem(name)) throw UsageError("bad key: " + *problem);
}

std::optional<std::string_view> served_front_of(std::string_view key) {
  if (key.starts_with("proxy#")) return "proxy";
  if (key.starts_with('/') && key.find('#') != std::string_view::npos) return "hooks";
  return std::nullopt;
}

std::string derived_key(std::string_view cwd, const std::vector<std::string>& argv) {
  Fingerprinter f;
  f.add_field("cwd", cwd);
  f.add_argv(argv);
  return "cmd:" + f.hex();
}

std::string display_key(std::string_view key, size_t max) {
  if (key.size() <= max) return std::string(key);
  // Cut on a UTF-8 boundary.
  size_t cut = max > 3 ? max - 3 : 0;
  while (cut > 0 && (uint8_t(key[cut]) & 0xc0) == 0x80) --cut;
  return std::string(key.substr(0, cut)) + "...";
}

}  // namespace idem::core
