#include "ui/html.hpp"

#include "util/hex.hpp"
#include "util/utf8.hpp"

namespace idem::ui {

namespace {

constexpr std::string_view k_replacement = "\xEF\xBF\xBD";

// The code point of a bidirectional formatting character encoded at the start of `seq` (the
// embeddings, overrides and isolates, the marks LRM, RLM and ALM), or 0. Shown as they are, they
// reorder what follows them on the page: a key or a body could make itself read as another.
unsigned bidi_control(std::string_view seq) {
  const auto at = [&](size_t i) { return static_cast<unsigned char>(seq[i]); };
  if (seq.size() == 2 && at(0) == 0xD8 && at(1) == 0x9C) return 0x061C;
  if (seq.size() != 3 || at(0) != 0xE2) return 0;
  const unsigned cp = 0x2000u | ((at(1) & 0x3Fu) << 6) | (at(2) & 0x3Fu);
  if (cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
      (cp >= 0x2066 && cp <= 0x2069))
    return cp;
  return 0;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  while (!text.empty()) {
    const unsigned char c = static_cast<unsigned char>(text[0]);
    size_t n = util::utf8_sequence_at(text, 0);
    if (n == 0) {
      out += k_replacement;
      n = 1;
    } else if (unsigned cp = n > 1 ? bidi_control(text.substr(0, n)) : 0) {
      static constexpr char k_digits[] = "0123456789ABCDEF";
      out += "[U+";
      for (int shift = 12; shift >= 0; shift -= 4) out += k_digits[(cp >> shift) & 15];
      out += ']';
    } else if (n > 1) {
      out.append(text.substr(0, n));
    } else {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        case '\t':
        case '\n':
        case '\r':
          out += char(c);
          break;
        default:
          if (c < 0x20 || c == 0x7f)
            out += k_replacement;
          else
            out += char(c);
      }
    }
    text.remove_prefix(n);
  }
  return out;
}

std::string url_component(std::string_view bytes) {
  static constexpr char k_digits[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : bytes) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += char(c);
    } else {
      out += '%';
      out += k_digits[c >> 4];
      out += k_digits[c & 15];
    }
  }
  return out;
}

std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = util::hex_digit(s[i + 1]), lo = util::hex_digit(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += char(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::optional<std::vector<std::pair<std::string, std::string>>> parse_form(std::string_view text) {
  const auto decode = [](std::string_view s) { return percent_decode(s, true); };
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!text.empty()) {
    const size_t amp = text.find('&');
    std::string_view pair = text.substr(0, amp);
    text.remove_prefix(amp == std::string_view::npos ? text.size() : amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    auto name = decode(pair.substr(0, eq));
    auto value = decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!name || !value) return std::nullopt;
    pairs.emplace_back(std::move(*name), std::move(*value));
  }
  return pairs;
}

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t semi = header.find(';');
    std::string_view item = header.substr(0, semi);
    header.remove_prefix(semi == std::string_view::npos ? header.size() : semi + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos && item.substr(0, eq) == name)
      return std::string(item.substr(eq + 1));
  }
  return std::nullopt;
}

}  // namespace idem::ui
