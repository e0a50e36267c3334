#include "webhook/template.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace idem::webhook {

namespace {

constexpr size_t k_max_output_bytes = size_t(64) << 20;  // an expanded hooks file, 64 MiB
constexpr int k_max_nesting = 32;                        // parenthesised pipelines

[[noreturn]] void error_at(int line, const std::string& what) {
  throw TemplateError("line " + std::to_string(line) + ": " + what);
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Text fit for a one-line message: control characters and bytes above 0x7e escaped.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 60)) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      const char* digits = "0123456789abcdef";
      out += "\\x";
      out += digits[byte >> 4];
      out += digits[byte & 0xf];
    } else {
      out += c;
    }
  }
  return "'" + out + (text.size() > 60 ? "…'" : "'");
}

// --- Go's escapers (text/template's js, html and urlquery) ------------------------------------

void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += char(code);
  } else if (code < 0x800) {
    out += char(0xC0 | (code >> 6));
    out += char(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += char(0xE0 | (code >> 12));
    out += char(0x80 | ((code >> 6) & 0x3F));
    out += char(0x80 | (code & 0x3F));
  } else {
    out += char(0xF0 | (code >> 18));
    out += char(0x80 | ((code >> 12) & 0x3F));
    out += char(0x80 | ((code >> 6) & 0x3F));
    out += char(0x80 | (code & 0x3F));
  }
}

// A valid UTF-8 sequence at text[i] of two bytes or more: its code point and length.
std::optional<std::pair<uint32_t, size_t>> decode_utf8(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t length = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || i + length > text.size()) return std::nullopt;
  uint32_t code = lead & (0xFF >> (length + 1));
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return std::nullopt;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  if (overlong || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return std::nullopt;
  return std::pair{code, length};
}

// The non-ASCII characters Go's unicode.IsPrint refuses that a hooks file could plausibly hold:
// C1 controls, no-break and other non-ASCII spaces, format characters, line separators.
bool go_unprintable(uint32_t code) {
  return (code >= 0x80 && code <= 0xA0) || code == 0xAD || (code >= 0x2000 && code <= 0x200F) ||
         (code >= 0x2028 && code <= 0x202F) || (code >= 0x205F && code <= 0x2064) ||
         code == 0x3000 || code == 0xFEFF;
}

std::string hex4(uint32_t code) {
  const char* digits = "0123456789ABCDEF";
  std::string out = "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += digits[(code >> shift) & 0xF];
  return out;
}

std::string js_escape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (c) {
      case '\\':
        out += "\\\\";
        continue;
      case '\'':
        out += "\\'";
        continue;
      case '"':
        out += "\\\"";
        continue;
      case '<':
        out += "\\u003C";
        continue;
      case '>':
        out += "\\u003E";
        continue;
      case '&':
        out += "\\u0026";
        continue;
      case '=':
        out += "\\u003D";
        continue;
      default:
        break;
    }
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20) {
      out += hex4(byte);
    } else if (byte < 0x80) {
      out += c;
    } else if (auto decoded = decode_utf8(text, i)) {
      auto [code, length] = *decoded;
      if (go_unprintable(code))
        out += hex4(code);
      else
        out.append(text.substr(i, length));
      i += length - 1;
    } else {
      out += c;  // an invalid byte is written as it is, as Go's does
    }
  }
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\0':
        out += "\xEF\xBF\xBD";
        break;  // U+FFFD
      default:
        out += c;
    }
  }
  return out;
}

std::string query_escape(std::string_view text) {
  std::string out;
  const char* digits = "0123456789ABCDEF";
  for (char c : text) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out += c;
    } else if (c == ' ') {
      out += '+';
    } else {
      auto byte = static_cast<unsigned char>(c);
      out += '%';
      out += digits[byte >> 4];
      out += digits[byte & 0xF];
    }
  }
  return out;
}

// --- the action language ----------------------------------------------------------------------

// Reads and runs one action's pipeline: commands separated by '|', each a function and its
// arguments (string literals or parenthesised pipelines) or a lone string literal; the value of
// a command is passed to the next as its last argument, as in Go.
class Action {
 public:
  Action(std::string_view body, int line, const front::EnvLookup& env, const FileLookup& read_file,
         TemplateOutput& out)
      : body_(body), line_(line), env_(env), read_file_(read_file), out_(out) {}

  std::string run() {
    std::string value = pipeline(0);
    skip_blanks();
    if (pos_ < body_.size()) error("unexpected " + shown(body_.substr(pos_, 1)));
    return value;
  }

 private:
  std::string_view body_;
  size_t pos_ = 0;
  int line_;
  const front::EnvLookup& env_;
  const FileLookup& read_file_;
  TemplateOutput& out_;

  [[noreturn]] void error(const std::string& what) const { error_at(line_, what); }

  void skip_blanks() {
    while (pos_ < body_.size() && is_blank(body_[pos_])) {
      if (body_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }

  std::string pipeline(int depth) {
    if (depth > k_max_nesting) error("parentheses nested too deeply");
    std::optional<std::string> value;
    for (;;) {
      value = command(std::move(value), depth);
      skip_blanks();
      if (pos_ >= body_.size() || body_[pos_] != '|') return *value;
      ++pos_;
    }
  }

  bool at_argument() {
    skip_blanks();
    return pos_ < body_.size() && (body_[pos_] == '"' || body_[pos_] == '`' || body_[pos_] == '(');
  }

  std::string argument(int depth) {
    if (body_[pos_] != '(') return literal();
    ++pos_;
    std::string value = pipeline(depth + 1);
    skip_blanks();
    if (pos_ >= body_.size() || body_[pos_] != ')') error("unclosed '('");
    ++pos_;
    return value;
  }

  std::string command(std::optional<std::string> piped, int depth) {
    skip_blanks();
    if (pos_ >= body_.size()) error(piped ? "missing command after '|'" : "empty action");
    if (body_[pos_] == '"' || body_[pos_] == '`' || body_[pos_] == '(') {
      if (piped) error("a value cannot take a piped argument; pipe into a function");
      return argument(depth);
    }
    std::string name = word();
    std::vector<std::string> args;
    while (at_argument()) args.push_back(argument(depth));
    if (piped) args.push_back(std::move(*piped));
    return call(name, args);
  }

  std::string word() {
    size_t start = pos_;
    while (pos_ < body_.size() && !is_blank(body_[pos_]) &&
           std::string_view("|()\"`").find(body_[pos_]) == std::string_view::npos)
      ++pos_;
    if (pos_ == start) error("unexpected " + shown(body_.substr(pos_, 1)));
    return std::string(body_.substr(start, pos_ - start));
  }

  std::string call(const std::string& name, const std::vector<std::string>& args);
  std::string one_argument(const std::string& name, const std::vector<std::string>& args) const {
    if (args.size() != 1)
      error("wrong number of arguments for " + name + ": want 1, got " +
            std::to_string(args.size()));
    return args[0];
  }
  std::string getenv(const std::string& name);
  std::string cat(const std::string& path);
  std::string credential(const std::string& name);
  std::string literal();
  void escape(std::string& out);
};

std::string Action::call(const std::string& name, const std::vector<std::string>& args) {
  std::string joined;  // Go's fmt.Sprint of strings: their concatenation
  for (const std::string& arg : args) joined += arg;
  if (name == "getenv") return getenv(one_argument(name, args));
  if (name == "cat") return cat(one_argument(name, args));
  if (name == "credential") return credential(one_argument(name, args));
  if (name == "js") return js_escape(joined);
  if (name == "html") return html_escape(joined);
  if (name == "urlquery") return query_escape(joined);
  if (name == "print") return joined;
  if (name.starts_with('.') || name.starts_with('$'))
    error(shown(name) + ": data and variables are not supported in hooks templates");
  error("function " + shown(name) +
        " is not supported (use getenv, cat, credential, js, html, urlquery or print)");
}

std::string Action::getenv(const std::string& name) {
  if (std::find(out_.read_env.begin(), out_.read_env.end(), name) == out_.read_env.end())
    out_.read_env.push_back(name);
  std::optional<std::string> value = env_(name);
  if (!value &&
      std::find(out_.unset_env.begin(), out_.unset_env.end(), name) == out_.unset_env.end())
    out_.unset_env.push_back(name);
  return value.value_or("");
}

std::string Action::cat(const std::string& path) {
  std::optional<std::string> content = read_file_(path);
  if (!content) {
    out_.unreadable_files.push_back(path);
    return "";
  }
  if (content->ends_with('\n')) content->pop_back();
  return *content;
}

std::string Action::credential(const std::string& name) {
  std::optional<std::string> directory = env_("CREDENTIALS_DIRECTORY");
  if (!directory || directory->empty()) return getenv(name);
  // systemd's credential names are file names: never a path out of the directory.
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    error("credential " + shown(name) + " is not a credential name");
  return cat(*directory + "/" + name);
}

std::string Action::literal() {
  char quote = body_[pos_++];
  std::string value;
  for (;;) {
    if (pos_ >= body_.size()) error("unterminated string");
    char c = body_[pos_++];
    if (c == quote) return value;
    if (c == '\n') {
      if (quote == '"') error("newline in string");
      ++line_;
    }
    if (c == '\\' && quote == '"')
      escape(value);
    else
      value += c;
  }
}

// A Go escape in a double-quoted string, after its backslash.
void Action::escape(std::string& out) {
  if (pos_ >= body_.size()) error("unterminated string");
  char c = body_[pos_++];
  std::string_view simple = "abfnrtv\\\"";
  std::string_view meaning = "\a\b\f\n\r\t\v\\\"";
  if (auto at = simple.find(c); at != std::string_view::npos) {
    out += meaning[at];
    return;
  }
  auto digits = [&](size_t count, int base) {
    if (pos_ + count > body_.size()) error("bad escape in string");
    uint32_t value = 0;
    for (size_t k = 0; k < count; ++k) {
      char d = body_[pos_++];
      int v = d >= '0' && d <= '9'   ? d - '0'
              : d >= 'a' && d <= 'f' ? d - 'a' + 10
              : d >= 'A' && d <= 'F' ? d - 'A' + 10
                                     : 99;
      if (v >= base) error("bad escape in string");
      value = value * uint32_t(base) + uint32_t(v);
    }
    return value;
  };
  if (c >= '0' && c <= '7') {
    --pos_;
    uint32_t value = digits(3, 8);
    if (value > 255) error("bad escape in string");
    out += char(value);
  } else if (c == 'x') {
    out += char(digits(2, 16));
  } else if (c == 'u' || c == 'U') {
    uint32_t code = digits(c == 'u' ? 4 : 8, 16);
    if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) error("bad escape in string");
    append_utf8(out, code);
  } else {
    error("bad escape in string");
  }
}

// --- the text around actions ------------------------------------------------------------------

struct Delimited {
  std::string_view body;  // between the delimiters and trim markers
  bool trim_before = false;
  bool trim_after = false;
  bool comment = false;
  size_t end = 0;  // just past "}}"
};

// The action that starts at text[start] ("{{"). A comment's "*/" must come right before the
// closing delimiter, as in Go.
Delimited delimit(std::string_view text, size_t start, int line) {
  Delimited action;
  size_t begin = start + 2;
  if (text.size() > begin + 1 && text[begin] == '-' && is_blank(text[begin + 1])) {
    action.trim_before = true;
    ++begin;
  }
  size_t cursor = begin;
  while (cursor < text.size() && is_blank(text[cursor])) ++cursor;
  if (text.substr(cursor).starts_with("/*")) {
    size_t close = text.find("*/", cursor + 2);
    if (close == std::string_view::npos) error_at(line, "unclosed comment");
    action.comment = true;
    size_t after = close + 2;
    if (text.substr(after).starts_with(" -}}")) {
      action.trim_after = true;
      after += 2;
    }
    if (!text.substr(after).starts_with("}}"))
      error_at(line, "comment ends before closing delimiter");
    action.end = after + 2;
    return action;
  }
  // Scan to the closing delimiter, skipping string literals (which may hold "}}").
  for (; cursor < text.size(); ++cursor) {
    char c = text[cursor];
    if (c == '"' || c == '`') {
      for (++cursor; cursor < text.size() && text[cursor] != c; ++cursor)
        if (c == '"' && text[cursor] == '\\') ++cursor;
      if (cursor >= text.size()) break;
    } else if (text.substr(cursor).starts_with("}}")) {
      size_t body_end = cursor;
      if (body_end >= begin + 2 && text[body_end - 1] == '-' && is_blank(text[body_end - 2])) {
        action.trim_after = true;
        --body_end;
      }
      action.body = text.substr(begin, body_end - begin);
      action.end = cursor + 2;
      return action;
    }
  }
  error_at(line, "unclosed action");
}

}  // namespace

TemplateOutput expand_template(std::string_view text, const front::EnvLookup& env,
                               const FileLookup& read_file) {
  TemplateOutput out;
  size_t pos = 0;
  int line = 1;
  bool trim_next = false;
  while (pos <= text.size()) {
    size_t open = text.find("{{", pos);
    std::string_view literal =
        text.substr(pos, open == std::string_view::npos ? text.npos : open - pos);
    if (trim_next)
      while (!literal.empty() && is_blank(literal.front())) literal.remove_prefix(1);
    if (open == std::string_view::npos) {
      out.text.append(literal);
      break;
    }
    line += int(std::count(text.begin() + long(pos), text.begin() + long(open), '\n'));
    Delimited action = delimit(text, open, line);
    if (action.trim_before)
      while (!literal.empty() && is_blank(literal.back())) literal.remove_suffix(1);
    out.text.append(literal);
    if (!action.comment) out.text += Action(action.body, line, env, read_file, out).run();
    if (out.text.size() > k_max_output_bytes) error_at(line, "the expanded file exceeds 64 MiB");
    line += int(std::count(text.begin() + long(open), text.begin() + long(action.end), '\n'));
    trim_next = action.trim_after;
    pos = action.end;
  }
  return out;
}

}  // namespace idem::webhook
