#include "webhook/multipart.hpp"

#include <algorithm>
#include <cstdint>

#include "net/message.hpp"
#include "util/hex.hpp"

namespace idem::webhook::multipart {

namespace {

// The length of the Unicode white space character (Go's unicode.IsSpace) that starts `s`, or 0.
size_t space_length(std::string_view s) {
  if (s.empty()) return 0;
  unsigned char c = static_cast<unsigned char>(s[0]);
  if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
  auto starts = [&](std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; };
  if (starts("\xc2\x85") || starts("\xc2\xa0")) return 2;  // U+0085, U+00A0
  if (starts("\xe1\x9a\x80") || starts("\xe2\x80\xa8") || starts("\xe2\x80\xa9") ||
      starts("\xe2\x80\xaf") || starts("\xe2\x81\x9f") || starts("\xe3\x80\x80"))
    return 3;  // U+1680, U+2028, U+2029, U+202F, U+205F, U+3000
  if (s.size() >= 3 && starts("\xe2\x80") && static_cast<unsigned char>(s[2]) >= 0x80 &&
      static_cast<unsigned char>(s[2]) <= 0x8a)
    return 3;  // U+2000 to U+200A
  return 0;
}

std::string_view trim_left_space(std::string_view s) {
  for (size_t n; (n = space_length(s)) > 0;) s.remove_prefix(n);
  return s;
}

// The length of a white space character that ends `s`, or 0.
size_t trailing_space_length(std::string_view s) {
  for (size_t n = 1; n <= 3 && n <= s.size(); ++n) {
    if (space_length(s.substr(s.size() - n)) == n) return n;
  }
  return 0;
}

std::string_view trim_space(std::string_view s) {
  s = trim_left_space(s);
  for (size_t n; (n = trailing_space_length(s)) > 0;) s.remove_suffix(n);
  return s;
}

bool is_tspecial(char c) {
  return std::string_view(R"(()<>@,;:\"/[]?=)").find(c) != std::string_view::npos;
}

bool is_token_char(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return u > 0x20 && u < 0x7f && !is_tspecial(c);
}

// Go's consumeToken: the leading run of token characters and what follows it.
std::pair<std::string_view, std::string_view> consume_token(std::string_view v) {
  size_t n = 0;
  while (n < v.size() && is_token_char(v[n])) ++n;
  return {v.substr(0, n), v.substr(n)};
}

// Go's consumeValue: a token or a quoted string (a backslash escapes only a tspecial; CR and LF
// end it unquoted). nullopt when there is none.
std::optional<std::pair<std::string, std::string_view>> consume_value(std::string_view v) {
  if (v.empty()) return std::nullopt;
  if (v[0] != '"') {
    auto [token, rest] = consume_token(v);
    if (token.empty()) return std::nullopt;
    return std::make_pair(std::string(token), rest);
  }
  std::string value;
  for (size_t i = 1; i < v.size(); ++i) {
    char c = v[i];
    if (c == '"') return std::make_pair(std::move(value), v.substr(i + 1));
    if (c == '\\' && i + 1 < v.size() && is_tspecial(v[i + 1])) {
      value.push_back(v[++i]);
      continue;
    }
    if (c == '\r' || c == '\n') return std::nullopt;
    value.push_back(c);
  }
  return std::nullopt;  // no closing quote
}

struct Param {
  std::string name;  // lower-cased
  std::string value;
  std::string_view rest;
};

// Go's consumeMediaParam: "; name=value". nullopt when `v` does not start with one.
std::optional<Param> consume_param(std::string_view v) {
  std::string_view rest = trim_left_space(v);
  if (rest.empty() || rest[0] != ';') return std::nullopt;
  rest = trim_left_space(rest.substr(1));
  auto [name, after_name] = consume_token(rest);
  if (name.empty()) return std::nullopt;
  rest = trim_left_space(after_name);
  if (rest.empty() || rest[0] != '=') return std::nullopt;
  rest = trim_left_space(rest.substr(1));
  auto value = consume_value(rest);
  if (!value) return std::nullopt;
  return Param{net::syntax::lowered(name), std::move(value->first), value->second};
}

std::optional<std::string> check_media_type(std::string_view type) {
  auto [main, rest] = consume_token(type);
  if (main.empty()) return "mime: no media type";
  if (rest.empty()) return std::nullopt;
  if (rest[0] != '/') return "mime: expected slash after first token";
  auto [sub, after] = consume_token(rest.substr(1));
  if (sub.empty()) return "mime: expected token after slash";
  if (!after.empty()) return "mime: unexpected content after media subtype";
  return std::nullopt;
}

// Go's percentHexUnescape: nullopt when a % is not followed by two hex digits.
std::optional<std::string> percent_unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size() || util::hex_digit(s[i + 1]) < 0 || util::hex_digit(s[i + 2]) < 0)
      return std::nullopt;
    out.push_back(char(util::hex_digit(s[i + 1]) * 16 + util::hex_digit(s[i + 2])));
    i += 2;
  }
  return out;
}

// Go's decode2231Enc: "charset'lang'percent-encoded", UTF-8 or US-ASCII only.
std::optional<std::string> decode_2231(std::string_view v) {
  size_t first = v.find('\'');
  if (first == std::string_view::npos) return std::nullopt;
  size_t second = v.find('\'', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  std::string charset = net::syntax::lowered(v.substr(0, first));
  if (charset != "us-ascii" && charset != "utf-8") return std::nullopt;
  return percent_unescape(v.substr(second + 1));
}

// Go's stitching of RFC 2231 parameters ("name*", "name*0", "name*1*"...) of one base name.
void stitch(const std::string& base, const std::map<std::string, std::string>& pieces,
            std::map<std::string, std::string>& params) {
  if (auto single = pieces.find(base + "*"); single != pieces.end()) {
    if (auto decoded = decode_2231(single->second)) params[base] = *decoded;
    return;
  }
  std::string value;
  bool valid = false;
  for (size_t n = 0;; ++n) {
    std::string simple = base + "*" + std::to_string(n);
    if (auto piece = pieces.find(simple); piece != pieces.end()) {
      valid = true;
      value += piece->second;
      continue;
    }
    auto encoded = pieces.find(simple + "*");
    if (encoded == pieces.end()) break;
    valid = true;
    if (n == 0) {
      if (auto decoded = decode_2231(encoded->second)) value += *decoded;
    } else {
      value += percent_unescape(encoded->second).value_or("");
    }
  }
  if (valid) params[base] = value;
}

}  // namespace

std::string canonical_mime_key(std::string_view name) {
  std::string out(name);
  for (char c : out) {
    if (!is_token_char(c)) return out;
  }
  bool upper = true;
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    upper = c == '-';
  }
  return out;
}

MediaType parse_media_type(std::string_view value) {
  MediaType out;
  std::string_view base = value.substr(0, value.find(';'));
  std::string type = net::syntax::lowered(trim_space(base));
  if (auto why = check_media_type(type)) {
    out.error = *why;
    return out;
  }
  out.type = type;
  std::map<std::string, std::map<std::string, std::string>> continuations;
  std::string_view v = value.substr(base.size());
  while (!v.empty()) {
    v = trim_left_space(v);
    if (v.empty()) break;
    std::optional<Param> param = consume_param(v);
    if (!param) {
      if (trim_space(v) == ";") break;  // a trailing semicolon is not an error
      out.params.clear();
      out.error = "mime: invalid media parameter";
      return out;
    }
    size_t star = param->name.find('*');
    std::map<std::string, std::string>& map =
        star == std::string::npos ? out.params : continuations[param->name.substr(0, star)];
    auto [at, inserted] = map.emplace(param->name, param->value);
    if (!inserted && at->second != param->value) {  // a repeated name, unless with the same value
      out = MediaType{};
      out.error = "mime: duplicate parameter name";
      return out;
    }
    v = param->rest;
  }
  for (const auto& [name, pieces] : continuations) stitch(name, pieces, out.params);
  return out;
}

const std::string* Part::header(std::string_view canonical_name) const {
  for (const auto& [field, value] : headers) {
    if (field == canonical_name) return &value;
  }
  return nullptr;
}

namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim_ascii(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view skip_lwsp(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// Go's quotedprintable.Reader, which multipart.Reader puts under a part whose
// Content-Transfer-Encoding is quoted-printable: "=XX" (either case) is a byte, "=" at a line's
// end a soft line break, a trailing space or tab of a line dropped, a "=" not followed by two hex
// digits taken as it is (but not before a line end). nullopt where Go's reader fails.
std::optional<std::string> decode_quoted_printable(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    size_t newline = text.find('\n');
    bool last = newline == std::string_view::npos;
    std::string_view whole = text.substr(0, last ? text.size() : newline + 1);
    text.remove_prefix(whole.size());
    std::string_view kept = whole;
    while (!kept.empty() && is_ascii_space(kept.back())) kept.remove_suffix(1);
    std::string line(kept);
    bool bad_soft_break = false;
    if (!line.empty() && line.back() == '=') {
      std::string_view stripped = whole.substr(kept.size());
      line.pop_back();
      bad_soft_break = stripped.substr(0, 1) != "\n" && stripped.substr(0, 2) != "\r\n" &&
                       !(stripped.empty() && !line.empty() && last);
    } else if (!last) {
      line += whole.size() >= 2 && whole[whole.size() - 2] == '\r' ? "\r\n" : "\n";
    }
    for (size_t i = 0; i < line.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(line[i]);
      if (c == '=') {
        int high = i + 1 < line.size() ? util::hex_digit(line[i + 1]) : -1;
        int low = i + 2 < line.size() ? util::hex_digit(line[i + 2]) : -1;
        if (high >= 0 && low >= 0) {
          out.push_back(char(high * 16 + low));
          i += 2;
          continue;
        }
        if (i + 1 < line.size() && line[i + 1] != '\r' && line[i + 1] != '\n') {
          out.push_back('=');
          continue;
        }
        return std::nullopt;
      }
      if (c != '\t' && c != '\r' && c != '\n' && c < 0x80 && (c < ' ' || c > '~'))
        return std::nullopt;
      out.push_back(char(c));
    }
    if (bad_soft_break) return std::nullopt;
  }
  return out;
}

// Go's bufio.Reader under multipart.Reader holds 4096 bytes: a line that NextPart reads (the
// preamble's, a delimiter's) must fit, '\n' included.
constexpr size_t k_line_buffer = 4096;
constexpr int64_t k_value_reserve = int64_t(10) << 20;  // ReadForm's extra room for values
constexpr int64_t k_map_entry_overhead = 200;           // ReadForm's accounting, in bytes
constexpr int64_t k_file_header_size = 100;
constexpr int64_t k_max_header_lines = 10000;  // Go's multipartmaxheaders

class FormReader {
 public:
  FormReader(std::string_view body, std::string_view boundary)
      : body_(body), dash_("--" + std::string(boundary)), nl_dash_("\r\n" + dash_) {}

  // Go's NextPart: true with `part` filled, false at the close delimiter or on an error. A part
  // may have at most `header_lines` header fields.
  bool next(Part& part, int64_t header_lines) {
    bool expect_new_part = false;
    for (;;) {
      std::string_view rest = body_.substr(pos_);
      size_t newline = rest.find('\n');
      bool at_end = newline == std::string_view::npos;
      size_t length = at_end ? rest.size() : newline + 1;
      if (length > k_line_buffer || (at_end && rest.size() >= k_line_buffer))
        return fail("multipart: NextPart: bufio: buffer full");
      std::string_view line = rest.substr(0, length);
      pos_ += length;
      if (at_end) {
        if (is_close_delimiter(line)) return false;
        return fail("multipart: NextPart: EOF");
      }
      if (is_delimiter(line)) {
        ++parts_read_;
        return read_part(part, header_lines);
      }
      if (is_close_delimiter(line)) return false;
      if (expect_new_part)
        return fail("multipart: expecting a new Part; got line " + net::syntax::excerpt(line));
      if (parts_read_ == 0) continue;  // the preamble
      if (line == nl()) {
        expect_new_part = true;
        continue;
      }
      return fail("multipart: unexpected line in Next(): " + net::syntax::excerpt(line));
    }
  }

  const std::string& error() const { return error_; }

 private:
  std::string_view nl() const { return lf_only_ ? "\n" : "\r\n"; }
  std::string_view nl_dash() const {
    return lf_only_ ? std::string_view(nl_dash_).substr(1) : std::string_view(nl_dash_);
  }

  bool fail(std::string why) {
    error_ = std::move(why);
    return false;
  }

  // `--boundary--`, optional spaces and tabs, then a line end or the end of the body.
  bool is_close_delimiter(std::string_view line) const {
    if (line.substr(0, dash_.size() + 2) != dash_ + "--") return false;
    std::string_view rest = skip_lwsp(line.substr(dash_.size() + 2));
    return rest.empty() || rest == nl();
  }

  // `--boundary`, optional spaces and tabs, then a line end; the first one may end in LF alone,
  // and then every line does (not RFC 2046, but what some senders write, and Go accepts).
  bool is_delimiter(std::string_view line) {
    if (line.substr(0, dash_.size()) != dash_) return false;
    std::string_view rest = skip_lwsp(line.substr(dash_.size()));
    if (parts_read_ == 0 && rest == "\n") lf_only_ = true;
    return rest == nl();
  }

  // One line as textproto's readLineSlice reads it (its line end removed); nullopt at the end.
  std::optional<std::string_view> header_line() {
    if (pos_ >= body_.size()) return std::nullopt;
    std::string_view rest = body_.substr(pos_);
    size_t newline = rest.find('\n');
    if (newline == std::string_view::npos) {
      pos_ = body_.size();
      return rest;
    }
    pos_ += newline + 1;
    std::string_view line = rest.substr(0, newline);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  }

  // textproto's ReadMIMEHeader, then the body up to the next delimiter. A body that ends within
  // the headers ends the form without an error (Go's NextPart returns io.EOF then).
  bool read_part(Part& part, int64_t header_lines) {
    part = Part{};
    if (pos_ < body_.size() && (body_[pos_] == ' ' || body_[pos_] == '\t')) {
      std::string_view line = header_line().value_or("");
      return fail("malformed MIME header initial line: " + net::syntax::excerpt(line));
    }
    for (;;) {
      std::optional<std::string_view> line = header_line();
      if (!line) return false;
      if (line->empty()) break;
      if (line->find(':') == std::string_view::npos)
        return fail("malformed MIME header: missing colon: " + net::syntax::excerpt(*line));
      std::string field(trim_ascii(*line));
      // Continuation lines (obsolete folding): joined with one space.
      while (pos_ < body_.size() && (body_[pos_] == ' ' || body_[pos_] == '\t')) {
        while (pos_ < body_.size() && (body_[pos_] == ' ' || body_[pos_] == '\t')) ++pos_;
        std::optional<std::string_view> more = header_line();
        if (!more) break;
        field += ' ';
        field += trim_ascii(*more);
      }
      size_t colon = field.find(':');
      std::string key = canonical_mime_key(std::string_view(field).substr(0, colon));
      if (key.empty()) continue;
      if (--header_lines < 0) return fail("multipart: message too large");
      part.headers.emplace_back(std::move(key),
                                std::string(skip_lwsp(std::string_view(field).substr(colon + 1))));
    }
    bool quoted_printable = false;
    if (const std::string* encoding = part.header("Content-Transfer-Encoding"))
      quoted_printable = net::equals_ignore_case(*encoding, "quoted-printable");
    if (quoted_printable) {  // Go hides the field and decodes the body
      auto& h = part.headers;
      h.erase(std::remove_if(
                  h.begin(), h.end(),
                  [](const auto& field) { return field.first == "Content-Transfer-Encoding"; }),
              h.end());
    }
    const std::string* disposition = part.header("Content-Disposition");
    MediaType type = parse_media_type(disposition ? *disposition : "");
    if (type.error.empty()) {
      if (type.type == "form-data") part.name = type.params["name"];
      part.filename = type.params["filename"];
    }
    if (!read_body(part)) return false;
    if (quoted_printable) {
      std::optional<std::string> decoded = decode_quoted_printable(part.body);
      if (!decoded) return fail("quotedprintable: invalid quoted-printable body");
      part.body = std::move(*decoded);
    }
    return true;
  }

  // Go's scanUntilBoundary: the body ends before a line end and `--boundary` followed by two
  // dashes, a space, a tab, a line end or the end of the body (an empty body may lack the line
  // end); `--boundaryX` and `--boundary-X` are data.
  bool read_body(Part& part) {
    auto delimits = [&](size_t after) {
      if (after >= body_.size()) return true;
      char c = body_[after];
      if (c == '-') return after + 1 < body_.size() && body_[after + 1] == '-';
      return c == ' ' || c == '\t' || c == '\r' || c == '\n';
    };
    if (body_.substr(pos_, dash_.size()) == dash_ && delimits(pos_ + dash_.size())) return true;
    std::string_view delimiter = nl_dash();
    for (size_t from = pos_;;) {
      size_t at = body_.find(delimiter, from);
      if (at == std::string_view::npos) return fail("unexpected EOF");
      if (delimits(at + delimiter.size())) {
        part.body = std::string(body_.substr(pos_, at - pos_));
        pos_ = at;
        return true;
      }
      from = at + delimiter.size();
    }
  }

  std::string_view body_;
  std::string dash_;     // "--" + boundary
  std::string nl_dash_;  // "\r\n--" + boundary
  bool lf_only_ = false;
  size_t pos_ = 0;
  size_t parts_read_ = 0;
  std::string error_;
};

int64_t header_size(const Part& part) {
  int64_t size = 400;
  for (const auto& [name, value] : part.headers) size += int64_t(value.size());
  std::map<std::string_view, bool> seen;
  for (const auto& [name, value] : part.headers) {
    if (seen.emplace(name, true).second) size += int64_t(name.size()) + k_map_entry_overhead;
  }
  return size;
}

// ReadForm's accounting of one named part, checked where Go checks it: an in-memory file may
// take `memory` below zero, which only the next named part finds.
bool within_memory(const Part& part, int64_t& memory, int64_t& file_memory) {
  memory -= int64_t(part.name.size()) + k_map_entry_overhead;
  if (memory < 0) return false;
  int64_t size = int64_t(part.body.size());
  if (part.filename.empty()) {
    memory -= size;
    return memory >= 0;
  }
  memory -= header_size(part) + k_map_entry_overhead + k_file_header_size;
  if (memory < 0) return false;
  if (size <= file_memory) {  // else Go writes it to a temporary file, outside the accounting
    file_memory -= size;
    memory -= size;
  }
  return true;
}

}  // namespace

Form parse_form(std::string_view body, std::string_view boundary, size_t max_memory) {
  Form form;
  FormReader reader(body, boundary);
  // ReadForm's memory accounting: values, names and files' metadata against max_memory plus
  // 10 MiB, file contents against max_memory (a larger file would go to a temporary file, which
  // costs nothing here: the body is in memory already).
  int64_t file_memory = int64_t(max_memory);
  int64_t memory = int64_t(max_memory) + k_value_reserve;
  const std::string k_too_large = "multipart: message too large";
  // Go's limit of header fields: 10000 in a part, and in all file parts together.
  int64_t header_lines = k_max_header_lines;
  for (Part part; reader.next(part, header_lines);) {
    if (form.parts.size() >= k_max_parts) return Form{{}, k_too_large};
    if (!part.name.empty() && !within_memory(part, memory, file_memory))
      return Form{{}, k_too_large};
    if (!part.name.empty() && !part.filename.empty()) header_lines -= int64_t(part.headers.size());
    form.parts.push_back(std::move(part));
  }
  if (!reader.error().empty()) return Form{{}, reader.error()};
  return form;
}

Boundary form_boundary(std::string_view content_type) {
  const std::string k_not_multipart = "request Content-Type isn't multipart/form-data";
  if (content_type.empty()) return {std::nullopt, k_not_multipart};
  MediaType type = parse_media_type(content_type);
  if (!type.error.empty() || type.type != "multipart/form-data")
    return {std::nullopt, k_not_multipart};
  auto boundary = type.params.find("boundary");
  // Go 1.19 refuses an empty one too (boundary=""), though RFC 2046 would not parse it either.
  if (boundary == type.params.end() || boundary->second.empty())
    return {std::nullopt, "no multipart boundary param in Content-Type"};
  return {boundary->second, {}};
}

}  // namespace idem::webhook::multipart
