#include "net/message.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/response.hpp"
#include "util/hex.hpp"

namespace idem::net {

namespace {

constexpr size_t k_max_chunk_line = 1024;  // chunk size plus extensions
constexpr uint64_t k_too_big = std::numeric_limits<uint64_t>::max();

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

bool is_control(char c) {
  auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t') || u == 0x7f;
}

}  // namespace

bool equals_ignore_case(std::string_view a, std::string_view b) {
  return core::same_header_name(a, b);
}

std::optional<std::string_view> Headers::get(std::string_view name) const {
  for (const auto& [n, v] : fields_)
    if (equals_ignore_case(n, name)) return std::string_view(v);
  return std::nullopt;
}

size_t Headers::count(std::string_view name) const {
  return size_t(std::count_if(fields_.begin(), fields_.end(),
                              [&](const auto& f) { return equals_ignore_case(f.first, name); }));
}

namespace {

// One name or value of a form. `strict`: a '%' without two hex digits is an error (nullopt);
// otherwise it stays as it is.
std::optional<std::string> form_decode(std::string_view text, bool strict) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    int high = 0, low = 0;
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size() && (high = util::hex_digit(text[i + 1])) >= 0 &&
               (low = util::hex_digit(text[i + 2])) >= 0) {
      out.push_back(char((high << 4) | low));
      i += 2;
    } else if (c == '%' && strict) {
      return std::nullopt;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Calls `field(pair, name, value)` for each non-empty '&'-separated field of `text`, undecoded.
template <typename Field>
void each_form_field(std::string_view text, Field field) {
  while (!text.empty()) {
    size_t amp = text.find('&');
    std::string_view pair = text.substr(0, amp);
    text.remove_prefix(amp == std::string_view::npos ? text.size() : amp + 1);
    if (pair.empty()) continue;
    size_t equals = pair.find('=');
    std::string_view value =
        equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1);
    field(pair, pair.substr(0, equals), value);
  }
}

}  // namespace

FormFields form_fields(std::string_view text) {
  FormFields fields;
  each_form_field(text, [&](std::string_view, std::string_view name, std::string_view value) {
    fields.emplace_back(*form_decode(name, false), *form_decode(value, false));
  });
  return fields;
}

GoFormFields go_form_fields(std::string_view text) {
  GoFormFields form;
  each_form_field(text, [&](std::string_view pair, std::string_view name, std::string_view value) {
    if (pair.find(';') != std::string_view::npos) {
      if (form.error.empty()) form.error = "invalid semicolon separator in query";
      return;
    }
    std::optional<std::string> decoded_name = form_decode(name, true);
    std::optional<std::string> decoded_value = form_decode(value, true);
    if (!decoded_name || !decoded_value) {
      if (form.error.empty())
        form.error = "invalid URL escape in '" + syntax::excerpt(decoded_name ? value : name) + "'";
      return;
    }
    form.fields.emplace_back(std::move(*decoded_name), std::move(*decoded_value));
  });
  return form;
}

namespace syntax {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ows(char c) { return c == ' ' || c == '\t'; }
bool is_token(std::string_view s) { return core::is_token(s); }

bool has_control(std::string_view s) { return std::any_of(s.begin(), s.end(), is_control); }

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> list_elements(std::string_view value) {
  std::vector<std::string_view> out;
  for (;;) {
    size_t comma = value.find(',');
    out.push_back(trim_ows(value.substr(0, comma)));
    if (comma == std::string_view::npos) return out;
    value.remove_prefix(comma + 1);
  }
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

std::string excerpt(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (s.size() > 40) out += "...";
  return out;
}

LineReader::Got LineReader::read(std::string_view in, size_t& used, size_t room) {
  const char* start = in.data() + used;
  const void* nl = std::memchr(start, '\n', in.size() - used);
  size_t take = nl != nullptr ? size_t(static_cast<const char*>(nl) - start) + 1 : in.size() - used;
  if (take > room) return Got::too_long;
  used += take;
  if (nl == nullptr) {
    line_.append(start, take);
    return Got::partial;
  }
  line_.append(start, take - 1);
  if (line_.empty() || line_.back() != '\r') {
    reason_ = "a line ends with a bare LF instead of CRLF";
    return Got::bad_end;
  }
  line_.pop_back();
  if (line_.find('\r') != std::string::npos) {
    reason_ = "a bare CR inside a line";
    return Got::bad_end;
  }
  return Got::done;
}

std::optional<Refusal> parse_field(std::string_view line, Headers& into) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos)
    return Refusal{400, "header line without a colon: '" + excerpt(line) + "'"};
  std::string_view name = line.substr(0, colon);
  if (!name.empty() && is_ows(name.back()))
    return Refusal{400, "whitespace before the colon in header '" + excerpt(name) + "'"};
  if (!is_token(name)) return Refusal{400, "bad header name '" + excerpt(name) + "'"};
  std::string_view value = trim_ows(line.substr(colon + 1));
  if (has_control(value))
    return Refusal{400, "a control character in the value of header " + std::string(name)};
  into.add(std::string(name), std::string(value));
  return std::nullopt;
}

std::optional<Refusal> content_length(const Headers& headers, std::optional<uint64_t>& length) {
  for (const auto& [name, value] : headers.fields()) {
    if (!equals_ignore_case(name, "Content-Length")) continue;
    for (std::string_view e : list_elements(value)) {
      if (e.empty() || !std::all_of(e.begin(), e.end(), is_digit))
        return Refusal{400, "Content-Length '" + excerpt(value) + "' is not a number of bytes"};
      uint64_t n = 0;
      for (char c : e) n = n > (k_too_big - 9) / 10 ? k_too_big : n * 10 + uint64_t(c - '0');
      if (length && *length != n) return Refusal{400, "two different Content-Length values"};
      length = n;
    }
  }
  return std::nullopt;
}

std::optional<Refusal> transfer_codings(const Headers& headers, bool& chunked) {
  std::vector<std::string> codings;
  for (const auto& [name, value] : headers.fields())
    if (equals_ignore_case(name, "Transfer-Encoding"))
      for (std::string_view e : list_elements(value)) codings.push_back(lowered(e));
  chunked = !codings.empty();
  if (codings.empty()) return std::nullopt;
  if (codings.back() != "chunked")
    return Refusal{400, "Transfer-Encoding does not end with chunked, so the body has no end"};
  if (std::count(codings.begin(), codings.end(), "chunked") > 1)
    return Refusal{400, "Transfer-Encoding applies chunked twice"};
  if (codings.size() > 1)
    return Refusal{501, "transfer coding '" + excerpt(codings.front()) + "' is not supported"};
  return std::nullopt;
}

bool keep_alive(const Headers& headers, int minor_version) {
  bool keep = minor_version == 1;
  for (const auto& [name, value] : headers.fields()) {
    if (!equals_ignore_case(name, "Connection")) continue;
    for (std::string_view e : list_elements(value)) {
      if (equals_ignore_case(e, "close"))
        return false;
      else if (equals_ignore_case(e, "keep-alive") && minor_version == 0)
        keep = true;
    }
  }
  return keep;
}

void ChunkedDecoder::fail(int status, std::string reason) {
  state_ = State::failed;
  error_ = Refusal{status, std::move(reason)};
}

void ChunkedDecoder::size_line(std::string_view line) {
  size_t digits = 0;
  uint64_t size = 0;
  for (; digits < line.size(); ++digits) {
    char c = lower(line[digits]);
    int v = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) break;
    size = size > (k_too_big >> 4) ? k_too_big : size << 4 | uint64_t(v);
  }
  std::string_view ext = trim_ows(line.substr(digits));
  if (digits == 0 || (!ext.empty() && ext.front() != ';'))
    return fail(400, "bad chunk size line '" + excerpt(line) + "'");
  if (has_control(ext)) return fail(400, "a control character in a chunk extension");
  if (size == 0) {
    part_ = Part::trailer;
    return;
  }
  if (size > limits_.max_body - decoded_)
    return fail(413, "the chunked body grows past " + std::to_string(limits_.max_body) + " bytes");
  chunk_left_ = size;
  part_ = Part::data;
}

void ChunkedDecoder::trailer_line(std::string_view line) {
  if (line.empty()) {
    state_ = State::complete;
    return;
  }
  if (is_ows(line.front())) return fail(400, "obsolete line folding in the trailer");
  Headers ignored;
  if (auto refusal = parse_field(line, ignored)) fail(refusal->status, refusal->reason);
}

size_t ChunkedDecoder::feed(std::string_view in, std::string& out) {
  size_t used = 0;
  auto left = [](size_t limit, size_t had) { return limit > had ? limit - had : 0; };
  while (used < in.size() && state_ == State::running) {
    if (part_ == Part::data) {
      size_t n = size_t(std::min<uint64_t>(in.size() - used, chunk_left_));
      out.append(in.data() + used, n);
      used += n;
      chunk_left_ -= n;
      decoded_ += n;
      if (chunk_left_ == 0) part_ = Part::data_crlf;
      continue;
    }
    size_t before = used;
    size_t room = part_ == Part::trailer     ? left(limits_.max_trailer_bytes, trailer_bytes_)
                  : part_ == Part::data_crlf ? left(2, line_.size())
                                             : left(k_max_chunk_line + 2, line_.size());
    LineReader::Got got = line_.read(in, used, room);
    if (part_ == Part::trailer) trailer_bytes_ += used - before;
    if (got == LineReader::Got::too_long) {
      if (part_ == Part::trailer)
        fail(431, "the trailer section is longer than " +
                      std::to_string(limits_.max_trailer_bytes) + " bytes");
      else if (part_ == Part::data_crlf)
        fail(400, "a chunk holds more data than its size line says");
      else
        fail(400,
             "a chunk size line is longer than " + std::to_string(k_max_chunk_line) + " bytes");
    }
    if (got == LineReader::Got::bad_end) fail(400, line_.reason());
    if (got != LineReader::Got::done) break;
    const std::string line = line_.line();
    line_.clear();
    if (part_ == Part::size_line)
      size_line(line);
    else if (part_ == Part::data_crlf)
      part_ = Part::size_line;  // the reader refused anything but CRLF
    else
      trailer_line(line);
  }
  return used;
}

}  // namespace syntax
}  // namespace idem::net
