#include "front/config_fields.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "core/duration.hpp"
#include "util/utf8.hpp"

namespace idem::front::config_fields {

constexpr size_t k_max_quoted_bytes = 100;  // of a user's value in a message
constexpr size_t k_max_reason_bytes = 300;  // of nlohmann's parse error
constexpr size_t k_max_path_bytes = 200;    // of a field path in a message

[[noreturn]] void fail(const std::string& at, std::string what) {
  throw Problem{at, std::move(what)};
}

// Text from the file made fit for a one-line message: at most `max_bytes` (then "…"), control
// characters escaped, and with `ascii_only` every byte above 0x7f too (nlohmann quotes the
// bytes it choked on, which need not be UTF-8).
std::string printable(std::string_view text, size_t max_bytes, bool ascii_only) {
  bool shortened = text.size() > max_bytes;
  if (shortened) {
    size_t end = max_bytes;
    // Not in the middle of a UTF-8 sequence.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text = text.substr(0, end);
  }
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    auto byte = static_cast<unsigned char>(c);
    // A byte of valid UTF-8 is kept as it is (unless ascii_only); one that is not is escaped,
    // so a message never carries broken UTF-8 (a template's text is read before it is parsed).
    if (byte > 0x7f && !ascii_only) {
      if (const size_t n = util::utf8_sequence_at(text, i); n > 0) {
        out.append(text.substr(i, n));
        i += n - 1;
        continue;
      }
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte >= 0x7f) {  // a control, or no valid UTF-8 here (or ascii_only)
      const char* digits = "0123456789abcdef";
      out += "\\x";
      out += digits[byte >> 4];
      out += digits[byte & 0xf];
    } else {
      out += c;
    }
  }
  if (shortened) out += "…";
  return out;
}

// A user's value in single quotes.
std::string quote(std::string_view text) {
  return "'" + printable(text, k_max_quoted_bytes, false) + "'";
}

std::string describe(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number with a fraction or exponent";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    default:
      return std::string("a ") + value.type_name();
  }
}

[[noreturn]] void wrong_type(const std::string& at, const std::string& expected,
                             const Json& value) {
  fail(at, "expected " + expected + ", got " + describe(value));
}

std::string member(const std::string& at, const std::string& name) {
  return at.empty() ? name : at + "." + name;
}

std::string element(const std::string& at, size_t index) {
  return at + "[" + std::to_string(index) + "]";
}

// A member name as a path component: plain names as they are, others quoted.
std::string member_any(const std::string& at, const std::string& name) {
  bool plain = !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
               std::all_of(name.begin(), name.end(), [](char c) {
                 return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '-';
               });
  return plain ? member(at, name) : at + "[" + quote(name) + "]";
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; users need only what
// follows, which says where ("parse error at line 3, column 5: ...").
std::string without_exception_prefix(const Json::exception& e) {
  std::string_view text = e.what();
  if (auto end = text.find("] "); text.starts_with("[json.exception.") && end != text.npos)
    text.remove_prefix(end + 2);
  return printable(text, k_max_reason_bytes, true);
}

// nlohmann keeps the last of two members with the same name; a field given twice is as likely
// a mistake as a typo, so it is refused like one. A SAX pass over the (already valid) text
// finds them with their path.
class DuplicateFinder : public nlohmann::json_sax<Json> {
 public:
  std::optional<Problem> found;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    value();
    frames_.push_back(Frame{});
    return true;
  }
  bool key(string_t& name) override {
    Frame& frame = frames_.back();
    if (!frame.names.insert(name).second) {
      found = Problem{path_to_top(), "duplicate field " + quote(name)};
      return false;
    }
    frame.current = name;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    frames_.emplace_back().is_array = true;
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Frame {
    bool is_array = false;
    size_t elements = 0;  // arrays: how many values have started
    std::string current;  // objects: the member being read
    std::set<std::string> names;
  };
  std::vector<Frame> frames_;

  bool value() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().elements;
    return true;
  }

  // The path of the innermost open object or array, shortened when the nesting is deep.
  std::string path_to_top() const {
    std::string at;
    for (size_t i = 0; i + 1 < frames_.size() && at.size() <= k_max_path_bytes; ++i) {
      const Frame& frame = frames_[i];
      at = frame.is_array ? element(at, frame.elements - 1) : member_any(at, frame.current);
    }
    return printable(at, k_max_path_bytes, false);
  }
};

Json parse_json(const std::string& text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {
    fail("", "not JSON: " + without_exception_prefix(e));
  }
  DuplicateFinder finder;
  Json::sax_parse(text, &finder);
  if (finder.found) throw *finder.found;
  return doc;
}

// Refuses any member not in `known`. A "secret" gets its own answer: secrets never live in the
// file, where they would end up in backups and version control.
void check_fields(const Json& object, const std::string& at,
                  const std::vector<std::string_view>& known) {
  for (const auto& [name, value] : object.items()) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    if (name == "secret")
      fail(member(at, name),
           "secrets are not read from the config file; put the secret in an environment "
           "variable and name that variable in \"secret_env\"");
    fail(at, "unknown field " + quote(name));
  }
}

const Json& required(const Json& object, const std::string& at, const std::string& name) {
  auto it = object.find(name);
  if (it == object.end()) fail(at, "missing field " + quote(name));
  return *it;
}

const Json* optional_field(const Json& object, const std::string& name) {
  auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

void expect_object(const Json& value, const std::string& at) {
  if (!value.is_object()) wrong_type(at, "an object", value);
}

std::string read_string(const Json& value, const std::string& at) {
  if (!value.is_string()) wrong_type(at, "a string", value);
  return value.get<std::string>();
}

bool read_bool(const Json& value, const std::string& at) {
  if (!value.is_boolean()) wrong_type(at, "true or false", value);
  return value.get<bool>();
}

int read_int(const Json& value, const std::string& at, int low, int high) {
  if (!value.is_number_integer()) wrong_type(at, "an integer", value);
  // Above INT64_MAX only an unsigned value can be, and that is out of range anyway.
  bool fits = !value.is_number_unsigned() ||
              value.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max());
  int64_t n = fits ? value.get<int64_t>() : std::numeric_limits<int64_t>::max();
  if (n < low || n > high)
    fail(at, "must be between " + std::to_string(low) + " and " + std::to_string(high) + ", got " +
                 value.dump());
  return static_cast<int>(n);
}

// A duration or a size: a string in the units core/duration.hpp reads, or a non-negative
// integer given to that parser as a bare number (seconds, bytes).
template <typename Parse>
int64_t read_quantity(const Json& value, const std::string& at, const std::string& kind,
                      const std::string& expected, Parse parse) {
  std::string text;
  if (value.is_string())
    text = value.get<std::string>();
  else if (value.is_number_integer())
    text = value.dump();  // a negative number fails to parse, as it should
  else
    wrong_type(at, expected, value);
  auto parsed = parse(text);
  if (!parsed) fail(at, "bad " + kind + " " + quote(text));
  return *parsed;
}

int64_t read_duration_ms(const Json& value, const std::string& at) {
  return read_quantity(value, at, "duration", "a duration such as \"30s\" or whole seconds",
                       core::parse_duration_ms);
}

int64_t read_size(const Json& value, const std::string& at) {
  return read_quantity(value, at, "size", "a size such as \"1MiB\" or bytes", core::parse_size);
}

bool is_env_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// RFC 9110 token characters: what a header field name may contain.
bool is_token(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

std::vector<std::string> read_methods(const Json& value, const std::string& at) {
  if (!value.is_array()) wrong_type(at, "an array of HTTP methods such as [\"POST\"]", value);
  if (value.empty()) fail(at, "is empty; list at least one method, such as \"POST\"");
  std::vector<std::string> methods;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string where = element(at, i);
    std::string method = read_string(value[i], where);
    // Methods are case-sensitive (RFC 9110): "post" would never match a request.
    bool upper = !method.empty() && std::all_of(method.begin(), method.end(),
                                                [](char c) { return c >= 'A' && c <= 'Z'; });
    if (!upper)
      fail(where, quote(method) + " is not an upper-case HTTP method such as POST or PUT");
    if (std::find(methods.begin(), methods.end(), method) != methods.end())
      fail(where, quote(method) + " is listed twice");
    methods.push_back(std::move(method));
  }
  return methods;
}

std::shared_ptr<core::NotifySpec> read_notify(const Json& value, const std::string& at) {
  expect_object(value, at);
  check_fields(value, at, {"command", "on", "timeout", "output_bytes"});
  auto spec = std::make_shared<core::NotifySpec>();
  const std::string where = member(at, "command");
  const Json& command = required(value, at, "command");
  if (command.is_string()) {
    std::string line = command.get<std::string>();
    if (line.find_first_not_of(" \t") == std::string::npos)
      fail(where, "is empty; give a shell command line or an array [PROGRAM, ARG...]");
    if (line.find('\0') != std::string::npos) fail(where, "contains a NUL character");
    spec->argv = core::shell_command(line);
  } else if (command.is_array()) {
    if (command.empty()) fail(where, "is empty; it must name at least the program to run");
    for (size_t i = 0; i < command.size(); ++i) {
      std::string arg = read_string(command[i], element(where, i));
      if (arg.find('\0') != std::string::npos)
        fail(element(where, i), quote(arg) + " contains a NUL character");
      spec->argv.push_back(std::move(arg));
    }
    if (spec->argv[0].empty()) fail(element(where, 0), "the program name is empty");
  } else {
    wrong_type(where, "a shell command line or an array [PROGRAM, ARG...]", command);
  }
  if (const Json* on = optional_field(value, "on")) {
    const std::string on_at = member(at, "on");
    const std::string word = read_string(*on, on_at);
    const auto parsed = core::notify_on_from_string(word);
    if (!parsed)
      fail(on_at, quote(word) +
                      " is neither \"failure\" (failed, abandoned, lease lost) nor \"change\" "
                      "(those and recovered)");
    spec->on = *parsed;
  }
  if (const Json* timeout = optional_field(value, "timeout")) {
    spec->timeout_ms = read_duration_ms(*timeout, member(at, "timeout"));
    if (spec->timeout_ms == 0) fail(member(at, "timeout"), "must be more than 0");
  }
  if (const Json* keep = optional_field(value, "output_bytes")) {
    spec->stream_bytes = read_size(*keep, member(at, "output_bytes"));
    if (spec->stream_bytes > k_max_notify_stream_bytes)
      fail(member(at, "output_bytes"), "is over 64MiB, the most a notify document carries");
  }
  return spec;
}

core::NotifyLimits read_notify_limits(const Json& value, const std::string& at) {
  expect_object(value, at);
  check_fields(value, at, {"max_running", "max_queue"});
  core::NotifyLimits limits;
  if (const Json* v = optional_field(value, "max_running"))
    limits.max_running = read_int(*v, member(at, "max_running"), 1, 1024);
  if (const Json* v = optional_field(value, "max_queue"))
    limits.max_queue = read_int(*v, member(at, "max_queue"), 0, 100000);
  return limits;
}

// "allow": the peers whose requests are served; every entry an address or a CIDR block.
std::vector<net::IpRange> read_allow(const Json& value, const std::string& at) {
  if (!value.is_array()) wrong_type(at, "an array of addresses and CIDR ranges", value);
  // An empty list would refuse everyone: surely a mistake, since dropping the field serves all.
  if (value.empty()) fail(at, "is empty (without \"allow\", every peer is served)");
  std::vector<net::IpRange> ranges;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string where = element(at, i);
    const std::string text = read_string(value[i], where);
    std::optional<net::IpRange> range = net::parse_range(text);
    if (!range)
      fail(where, quote(text) + " is not an address or a CIDR range (e.g. 10.0.0.0/8, ::1)");
    ranges.push_back(*range);
  }
  return ranges;
}

}  // namespace idem::front::config_fields
