#pragma once
// HTTP/1.1 message syntax shared by the request and the response parser (RFC 9110, RFC 9112):
// header fields, tokens and lists, CRLF lines, the framing fields and chunked decoding. Pure: no
// I/O. Both parsers refuse the same things the same way, so what one accepts the other frames
// alike (a proxy between two parsers that disagree is how requests are smuggled).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::net {

// Header fields in the order received; names compare case-insensitively.
class Headers {
 public:
  void add(std::string name, std::string value) {
    fields_.emplace_back(std::move(name), std::move(value));
  }
  // The first field named `name`, if any.
  std::optional<std::string_view> get(std::string_view name) const;
  size_t count(std::string_view name) const;
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// ASCII case-insensitive equality, as header names and tokens compare.
bool equals_ignore_case(std::string_view a, std::string_view b);

// application/x-www-form-urlencoded, also the syntax of query strings: fields split on '&', the
// name and the value at the first '=', '+' read as a space and %XX as the byte XX.
using FormFields = std::vector<std::pair<std::string, std::string>>;

// As the WHATWG URL standard parses forms: every non-empty field, in order; a '%' not followed by
// two hex digits stays as it is.
FormFields form_fields(std::string_view text);

// As Go's url.ParseQuery (Go 1.17 and later), which webhook decodes queries and form bodies with:
// a field whose name or value holds a bad escape ('%' without two hex digits), or that holds a
// ';', is left out, and `error` says why for the first such field ("" when there is none).
struct GoFormFields {
  FormFields fields;
  std::string error;
};
GoFormFields go_form_fields(std::string_view text);

namespace syntax {

bool is_digit(char c);
bool is_ows(char c);
bool is_token(std::string_view s);  // RFC 9110 tchar+
// A control character other than HTAB (what no field value or reason phrase may hold).
bool has_control(std::string_view s);
std::string_view trim_ows(std::string_view s);
// The elements of a comma-separated field value, trimmed (RFC 9110 §5.6.1); empty ones kept so
// that the caller can refuse them.
std::vector<std::string_view> list_elements(std::string_view value);
std::string lowered(std::string_view s);
// A printable excerpt of peer input for an error message.
std::string excerpt(std::string_view s);

// A refusal: the status a server answers with (a client only reports the reason).
struct Refusal {
  int status = 400;
  std::string reason;
};

// Collects one CRLF-terminated line (without its CRLF). A bare LF or CR fails: leniency about
// line ends is how two parsers come to disagree on where a message ends.
class LineReader {
 public:
  enum class Got { partial, done, too_long, bad_end };
  // Takes bytes of `in` from `used` on (advancing it) up to the end of a line; the line may take
  // `room` more bytes, its CRLF included. On bad_end, reason() says which.
  Got read(std::string_view in, size_t& used, size_t room);
  const std::string& line() const { return line_; }
  size_t size() const { return line_.size(); }
  void clear() { line_.clear(); }
  const char* reason() const { return reason_; }

 private:
  std::string line_;
  const char* reason_ = "";
};

// Checks a header (or trailer) field line, "name: value", and adds it to `into`. A refusal
// (status 400) when the name is not a token, whitespace precedes the colon, or the value holds
// a control character.
std::optional<Refusal> parse_field(std::string_view line, Headers& into);

// Content-Length: every element of every field a number, all the same (RFC 9110 §8.6; equal
// repeats are accepted, as that section allows: the body is then the same either way). Sets
// `length` when there is one.
std::optional<Refusal> content_length(const Headers& headers, std::optional<uint64_t>& length);

// Transfer-Encoding: `chunked` is set when there is the field. A refusal when its last coding
// is not chunked (the body would have no end), chunked comes twice, or another coding is named
// (501: none is supported, and one passed on undecoded would reach a client without its name).
std::optional<Refusal> transfer_codings(const Headers& headers, bool& chunked);

// Whether the sender wants the connection kept open after this message (RFC 9112 §9.3).
bool keep_alive(const Headers& headers, int minor_version);

struct ChunkedLimits {
  uint64_t max_body = UINT64_MAX;        // decoded bytes in all
  size_t max_trailer_bytes = 16 * 1024;  // the trailer section, CRLFs included
};

// Decodes a chunked body (RFC 9112 §7.1): chunk sizes, extensions (checked, ignored), data, and
// a trailer section checked like header fields and then dropped (nothing reads it).
class ChunkedDecoder {
 public:
  enum class State { running, complete, failed };
  explicit ChunkedDecoder(ChunkedLimits limits = {}) : limits_(limits) {}
  // Consumes a prefix of `in`, appending the data it decodes to `out`; it stops where the body
  // ends. Returns how many bytes it used.
  size_t feed(std::string_view in, std::string& out);
  State state() const { return state_; }
  const Refusal& error() const { return error_; }
  uint64_t decoded() const { return decoded_; }

 private:
  void fail(int status, std::string reason);
  void size_line(std::string_view line);
  void trailer_line(std::string_view line);

  ChunkedLimits limits_;
  State state_ = State::running;
  Refusal error_;
  LineReader line_;
  enum class Part { size_line, data, data_crlf, trailer } part_ = Part::size_line;
  uint64_t chunk_left_ = 0;
  uint64_t decoded_ = 0;
  size_t trailer_bytes_ = 0;
};

}  // namespace syntax
}  // namespace idem::net
