#include "webhook/request.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <stdexcept>

#include "hooks/signature.hpp"
#include "net/ip_range.hpp"
#include "net/message.hpp"
#include "util/hex.hpp"
#include "util/secret.hpp"
#include "webhook/multipart.hpp"
#include "webhook/payload.hpp"

namespace idem::webhook {

using nlohmann::json;

namespace {

// Header names as Go's textproto canonicalises them (multipart's reader does the same).
std::string canonical_header(std::string_view name) { return multipart::canonical_mime_key(name); }

// Why a value could not be had, in webhook's terms: a parameter node that is not there (only
// makes a match false), a signature that does not verify, or anything else (an error).
enum class Fault { none, node, signature, other };

struct Got {
  std::optional<std::string> value;
  Fault fault = Fault::none;
  std::string message;
};

Got fault(Fault kind, std::string message) { return Got{std::nullopt, kind, std::move(message)}; }

Got found(std::string value) { return Got{std::move(value), Fault::none, {}}; }

// A slice index as Go's strconv.ParseUint(s, 10, 64) reads it.
std::optional<size_t> parse_index(std::string_view text) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint64_t index = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), index);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return size_t(index);
}

// webhook's GetParameter: in an object, the whole path as a name first, then the part before
// the first dot as a name and the rest below it; in an array, the part before the first dot as
// an index. nullptr when there is no such node; `missing` is then the rest of the path.
template <typename Json>
Json* resolve(std::string_view path, Json& params, std::string& missing) {
  Json* at = &params;
  for (;;) {
    size_t dot = path.find('.');
    std::string_view head = path.substr(0, dot);
    if (at->is_object()) {
      auto whole = at->find(std::string(path));
      if (whole != at->end()) return &*whole;
      auto part = at->find(std::string(head));
      if (dot == std::string_view::npos || part == at->end()) break;
      at = &*part;
    } else if (at->is_array()) {
      std::optional<size_t> index = parse_index(head);
      if (!index || *index >= at->size()) break;
      at = &(*at)[*index];
      if (dot == std::string_view::npos) return at;
    } else {
      break;
    }
    path.remove_prefix(dot + 1);
  }
  missing = std::string(path);
  return nullptr;
}

Got lookup(std::string_view path, const json& params) {
  std::string missing;
  const json* node = resolve(path, params, missing);
  if (node == nullptr) return fault(Fault::node, "parameter node not found: " + missing);
  return found(go_string(*node));
}

std::string lowered(std::string_view text) { return net::syntax::lowered(text); }

// The body as webhook's own code sees it: none for a multipart request (Request::multipart).
const std::string& seen_body(const Request& request) {
  static const std::string k_none;
  return request.multipart ? k_none : request.body;
}

// webhook's Argument.Get.
Got get(const Argument& argument, const Request& request) {
  using Source = Argument::Source;
  switch (argument.source) {
    case Source::header:
      return lookup(canonical_header(argument.name), request.header_values);
    case Source::url:
      return lookup(argument.name, request.query_values);
    case Source::payload:
      return lookup(argument.name, request.payload);
    case Source::request:
      if (lowered(argument.name) == "remote-addr") return found(request.remote_addr);
      if (lowered(argument.name) == "method") return found(request.method);
      return fault(Fault::other, "unsupported request key: \"" + argument.name + "\"");
    case Source::raw_request_body:
      return found(seen_body(request));
    case Source::string:
      return found(argument.name);
    case Source::entire_payload:
      return found(go_json(request.payload));
    case Source::entire_query:
      return found(go_json(request.query_values));
    case Source::entire_headers:
      return found(go_json(request.header_values));
  }
  return fault(Fault::other, "no source for value retrieval");
}

std::string_view source_name(Argument::Source source) {
  using Source = Argument::Source;
  switch (source) {
    case Source::header:
      return "header";
    case Source::url:
      return "url";
    case Source::payload:
      return "payload";
    case Source::request:
      return "request";
    case Source::raw_request_body:
      return "raw-request-body";
    case Source::string:
      return "string";
    case Source::entire_payload:
      return "entire-payload";
    case Source::entire_query:
      return "entire-query";
    case Source::entire_headers:
      return "entire-headers";
  }
  return "?";
}

std::string describe(const Argument& argument) {
  return std::string(source_name(argument.source)) + " '" + argument.name + "'";
}

// The first value of each name, by name (Go's map of the first of each url.Values entry).
json first_values(const std::vector<std::pair<std::string, std::string>>& fields,
                  std::string (*name_of)(std::string_view)) {
  json values = json::object();
  for (const auto& [name, value] : fields) {
    std::string key = name_of(name);
    if (!values.contains(key)) values[key] = value;
  }
  return values;
}

std::string as_is(std::string_view name) { return std::string(name); }

json header_values(const std::vector<std::pair<std::string, std::string>>& headers) {
  json values = first_values(headers, canonical_header);
  // Go's server moves Host into the request and drops Transfer-Encoding once it has framed the
  // body: neither is among the headers a hook sees.
  values.erase("Host");
  values.erase("Transfer-Encoding");
  return values;
}

std::string content_type_header(const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [name, value] : headers) {
    if (net::equals_ignore_case(name, "Content-Type")) return value;
  }
  return "";
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// webhook's multipart/form-data case: r.ParseMultipartForm (which parses the query too, and
// takes the boundary from the Content-Type header, whatever the hook's content type), then the
// values, then the file parts it decodes as JSON.
void decode_form(const WebhookHook& hook, Request& request, std::string_view raw_query) {
  multipart::Form form;
  if (std::string query_error = net::go_form_fields(raw_query).error; !query_error.empty()) {
    form.error = query_error;
  } else {
    multipart::Boundary boundary = multipart::form_boundary(content_type_header(request.headers));
    form = boundary.value ? multipart::parse_form(request.body, *boundary.value)
                          : multipart::Form{{}, boundary.error};
  }
  if (!form.error.empty()) {
    request.form_error = "error parsing multipart form: " + form.error;
    return;
  }
  json payload = json::object();
  for (const multipart::Part& part : form.parts) {
    if (!part.name.empty() && part.filename.empty() && !payload.contains(part.name))
      payload[part.name] = part.body;
  }
  std::vector<std::string> decoded_files;  // a name's first file part only, as webhook
  for (const multipart::Part& part : form.parts) {
    if (part.name.empty() || part.filename.empty()) continue;
    if (std::find(decoded_files.begin(), decoded_files.end(), part.name) != decoded_files.end())
      continue;
    decoded_files.push_back(part.name);
    bool as_json = std::any_of(
        hook.parse_as_json.begin(), hook.parse_as_json.end(), [&](const Argument& argument) {
          return argument.source == Argument::Source::payload && argument.name == part.name;
        });
    // Every Content-Type field of the part counts, its value as it is ("application/json").
    for (const auto& [name, value] : part.headers)
      as_json = as_json || (name == "Content-Type" && value == "application/json");
    if (!as_json) continue;
    Decoded decoded = decode_json_object(part.body);
    if (!decoded.error.empty())
      request.problems.push_back("multipart file " + net::syntax::excerpt(part.name) +
                                 " is not a JSON object: " + decoded.error);
    payload[part.name] = std::move(decoded.value);
  }
  // webhook's payload stays nil when the form has neither values nor JSON files.
  if (!payload.empty()) request.payload = std::move(payload);
}

// webhook's hookHandler: the content type picks the decoder; case matters ("json", not "JSON").
void decode_payload(const WebhookHook& hook, Request& request, std::string_view raw_query) {
  const std::string& type = request.content_type;
  request.multipart = type.rfind("multipart/form-data;", 0) == 0;
  const std::string& body = seen_body(request);
  if (contains(type, "json")) {
    Decoded decoded = decode_json(body);
    if (!decoded.error.empty()) {
      request.payload_error = "error parsing JSON payload: " + decoded.error;
    } else if (decoded.value.is_array()) {
      request.payload = json::object();
      request.payload["root"] = std::move(decoded.value);
    } else if (decoded.value.is_object() || decoded.value.is_null()) {
      request.payload = std::move(decoded.value);
    } else {
      request.payload_error = "error parsing JSON payload: not an object";
    }
  } else if (contains(type, "x-www-form-urlencoded")) {
    net::GoFormFields form = net::go_form_fields(body);
    if (form.error.empty())
      request.payload = first_values(form.fields, as_is);
    else
      request.payload_error = "error parsing form payload: " + form.error;
  } else if (contains(type, "xml")) {
    Decoded decoded = decode_xml(body);
    request.payload = std::move(decoded.value);
    if (!decoded.error.empty())
      request.payload_error = "error parsing XML payload: " + decoded.error;
  } else if (request.multipart) {
    decode_form(hook, request, raw_query);
  } else {
    request.payload_error = "unsupported content type: " + net::syntax::excerpt(type);
  }
}

// webhook's ParseJSONParameters: a value that holds a JSON object is replaced by that object.
void parse_json_parameters(const WebhookHook& hook, Request& request) {
  for (const Argument& argument : hook.parse_as_json) {
    Got got = get(argument, request);
    if (!got.value) {
      request.problems.push_back("parse-parameters-as-json: no value for " + describe(argument));
      continue;
    }
    Decoded decoded = decode_json(*got.value);
    if (!decoded.value.is_object()) {
      request.problems.push_back("parse-parameters-as-json: " + describe(argument) +
                                 " is not a JSON object");
      continue;
    }
    json* params = nullptr;
    std::string name = argument.name;
    if (argument.source == Argument::Source::header) {
      params = &request.header_values;
      name = canonical_header(argument.name);
    } else if (argument.source == Argument::Source::payload) {
      params = &request.payload;
    } else if (argument.source == Argument::Source::url) {
      params = &request.query_values;
    } else {
      request.problems.push_back("parse-parameters-as-json: invalid source for " +
                                 describe(argument));
      continue;
    }
    std::string missing;
    if (json* target = resolve(name, *params, missing)) *target = std::move(decoded.value);
  }
}

// A rule's value with webhook's error, if any (Go's (bool, error)).
struct Eval {
  bool value = false;
  Fault fault = Fault::none;
  std::string message;
};

Eval result(bool value) { return Eval{value, Fault::none, {}}; }

Eval failed(const Got& got) { return Eval{false, got.fault, got.message}; }

// webhook's ExtractSignatures: with a comma, the comma-separated parts that start with the
// prefix, without it (nothing is trimmed: " sha1=..." is not one); without, the whole value,
// its prefix removed if it has one.
std::vector<std::string_view> extract_signatures(std::string_view value, std::string_view prefix) {
  std::vector<std::string_view> signatures;
  if (!contains(value, ",")) {
    if (value.substr(0, prefix.size()) == prefix) value.remove_prefix(prefix.size());
    signatures.push_back(value);
    return signatures;
  }
  while (true) {
    size_t comma = value.find(',');
    std::string_view part = value.substr(0, comma);
    if (part.substr(0, prefix.size()) == prefix) signatures.push_back(part.substr(prefix.size()));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return signatures;
}

// webhook's CheckPayloadSignature*: some signature in `claimed` is the hex HMAC of the body.
Eval check_payload_hmac(const MatchRule& match, const Request& request, std::string_view claimed) {
  if (match.secret.empty())
    return Eval{false, Fault::other, "signature validation secret can not be empty"};
  const util::Digest digest = match.type == MatchRule::Type::payload_hmac_sha1 ? util::Digest::sha1
                              : match.type == MatchRule::Type::payload_hmac_sha256
                                  ? util::Digest::sha256
                                  : util::Digest::sha512;
  std::string_view prefix = digest == util::Digest::sha1     ? "sha1="
                            : digest == util::Digest::sha256 ? "sha256="
                                                             : "sha512=";
  std::string expected = util::hmac_hex(digest, match.secret, seen_body(request));
  std::vector<std::string_view> signatures = extract_signatures(claimed, prefix);
  bool matched = false;
  for (std::string_view signature : signatures) matched |= util::same_secret(signature, expected);
  if (matched) return result(true);
  std::string listed;
  for (std::string_view signature : signatures)
    listed += (listed.empty() ? "" : " ") + net::syntax::excerpt(signature);
  return Eval{false, Fault::signature,
              "invalid payload signatures [" + listed + "]" +
                  (seen_body(request).empty() ? " on empty payload" : "")};
}

Eval check_ip_whitelist(const MatchRule& match, const Request& request) {
  std::optional<net::IpAddress> peer = net::parse_peer(request.remote_addr);
  if (!peer) {
    return Eval{false, Fault::other,
                "invalid IP address found in remote address '" +
                    net::syntax::excerpt(request.remote_addr) + "'"};
  }
  try {
    return result(net::any_contains(net::parse_ranges(match.ip_range), *peer));
  } catch (const std::invalid_argument& e) {
    return Eval{false, Fault::other, e.what()};
  }
}

// A rule built without the loader (no compiled pattern) is compiled here, for this match.
bool regex_matches(const MatchRule& match, const std::string& value) {
  if (match.regex) return match.regex->search(value);
  return Regex(match.regex_text).search(value);
}

// A run of one or more spaces, as Go's time.Parse matches a space of its layout.
bool skip_spaces(std::string_view& text) {
  if (text.empty() || text.front() != ' ') return false;
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return true;
}

// One of `names` (three letters, any case), its index.
std::optional<int> take_name(std::string_view& text, const char* const (&names)[12], int count) {
  for (int i = 0; i < count && text.size() >= 3; ++i) {
    if (net::equals_ignore_case(text.substr(0, 3), names[i])) {
      text.remove_prefix(3);
      return i;
    }
  }
  return std::nullopt;
}

// `width` digits exactly, or 1-2 digits when `width` is 0 (Go's getnum).
std::optional<int> take_number(std::string_view& text, size_t width) {
  size_t n = 0;
  size_t most = width == 0 ? 2 : width;
  while (n < most && n < text.size() && net::syntax::is_digit(text[n])) ++n;
  if (n == 0 || (width != 0 && n != width)) return std::nullopt;
  int value = std::atoi(std::string(text.substr(0, n)).c_str());
  text.remove_prefix(n);
  return value;
}

// A zone as Go's time.Parse reads "MST": UTC, GMT with an optional hour offset, or three to
// five upper-case letters (four or five ending in T). Go then keeps the clock time as UTC's
// whatever the zone (an abbreviation it does not know gets offset 0, and even GMT+3's offset
// only labels the time), so the zone is only checked and skipped.
bool skip_zone(std::string_view& text) {
  if (text.substr(0, 3) == "GMT" || text.substr(0, 3) == "UTC") {
    bool gmt = text.substr(0, 3) == "GMT";
    text.remove_prefix(3);
    if (!gmt || text.empty() || (text[0] != '+' && text[0] != '-')) return true;
    std::string_view digits = text.substr(1);
    std::optional<int> hours = take_number(digits, 0);
    if (hours && *hours <= 23) text = digits;  // else Go takes "GMT" alone, and the rest is extra
    return true;
  }
  size_t upper = 0;
  while (upper < 6 && upper < text.size() && text[upper] >= 'A' && text[upper] <= 'Z') ++upper;
  bool ok = upper == 3 || (upper == 4 && (text[3] == 'T' || text.substr(0, 4) == "WITA")) ||
            (upper == 5 && text[4] == 'T');
  if (ok) text.remove_prefix(upper);
  return ok;
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int days_in_month(int year, int month) {
  static constexpr int k_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : k_days[month - 1];
}

// Scalr's Date header, "Fri 08 Sep 2017 11:24:32 UTC", as Go's time.Parse reads the layout
// "Mon 02 Jan 2006 15:04:05 MST": Unix seconds, or nullopt.
std::optional<int64_t> parse_scalr_date(std::string_view text) {
  static const char* const k_days[12] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
  static const char* const k_months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::optional<int> day, month, year, hour, minute, second;
  if (!take_name(text, k_days, 7) || !skip_spaces(text) || !(day = take_number(text, 2)) ||
      !skip_spaces(text) || !(month = take_name(text, k_months, 12)) || !skip_spaces(text) ||
      !(year = take_number(text, 4)) || !skip_spaces(text) || !(hour = take_number(text, 0)) ||
      text.substr(0, 1) != ":" || (text.remove_prefix(1), !(minute = take_number(text, 2))) ||
      text.substr(0, 1) != ":" || (text.remove_prefix(1), !(second = take_number(text, 2))))
    return std::nullopt;
  // Go takes a fraction of a second even where the layout has none.
  if (text.size() >= 2 && (text[0] == '.' || text[0] == ',') && net::syntax::is_digit(text[1])) {
    text.remove_prefix(1);
    while (!text.empty() && net::syntax::is_digit(text.front())) text.remove_prefix(1);
  }
  if (!skip_spaces(text) || !skip_zone(text) || !text.empty()) return std::nullopt;
  if (*hour > 23 || *minute > 59 || *second > 59 || *day < 1 ||
      *day > days_in_month(*year, *month + 1))
    return std::nullopt;
  int64_t days = days_from_civil(*year, *month + 1, *day);
  return days * 86400 + *hour * 3600 + *minute * 60 + *second;
}

// webhook's CheckScalrSignature: the hex HMAC-SHA1 of the body followed by the Date header, in
// X-Signature, and a date within 5 minutes of now. Without either header the rule is just false.
Eval check_scalr_signature(const MatchRule& match, const Request& request) {
  auto signature = request.header_values.find("X-Signature");
  auto date = request.header_values.find("Date");
  if (signature == request.header_values.end() || date == request.header_values.end() ||
      !signature->is_string() || !date->is_string())
    return result(false);
  if (match.secret.empty())
    return Eval{false, Fault::other, "signature validation signing key can not be empty"};
  const std::string& date_text = date->get_ref<const std::string&>();
  std::string expected =
      util::hmac_hex(util::Digest::sha1, match.secret, seen_body(request) + date_text);
  if (!util::same_secret(signature->get_ref<const std::string&>(), expected)) {
    return Eval{false, Fault::signature,
                "invalid payload signature " + net::syntax::excerpt(signature->get<std::string>())};
  }
  std::optional<int64_t> when = parse_scalr_date(date_text);
  if (!when)
    return Eval{false, Fault::other,
                "cannot parse the Date header '" + net::syntax::excerpt(date_text) + "'"};
  int64_t distance =
      *when > request.now_unix_s ? *when - request.now_unix_s : request.now_unix_s - *when;
  if (distance > 300) return Eval{false, Fault::signature, "invalid payload signature outdated"};
  return result(true);
}

Eval evaluate_match(const MatchRule& match, const Request& request) {
  using Type = MatchRule::Type;
  if (match.type == Type::ip_whitelist) return check_ip_whitelist(match, request);
  if (match.type == Type::scalr_signature) return check_scalr_signature(match, request);
  Got got = get(match.parameter, request);
  if (!got.value) return failed(got);
  switch (match.type) {
    case Type::value:
      return result(util::same_secret(*got.value, match.value));
    case Type::regex:
      try {
        return result(regex_matches(match, *got.value));
      } catch (const std::invalid_argument& e) {
        return Eval{false, Fault::other, "regex '" + match.regex_text + "': " + e.what()};
      }
    default:
      return check_payload_hmac(match, request, *got.value);
  }
}

// webhook's Rules.Evaluate: "and" stops at the first error; "or" passes over a missing
// parameter, and over a signature that does not verify when the hook allows soft failures; "not"
// keeps its child's error.
Eval evaluate_rule(const Rule& rule, const Request& request, bool soft_failures) {
  switch (rule.kind) {
    case Rule::Kind::all:
      for (const Rule& child : rule.children) {
        Eval e = evaluate_rule(child, request, soft_failures);
        if (e.fault != Fault::none) return Eval{false, e.fault, e.message};
        if (!e.value) return result(false);
      }
      return result(true);
    case Rule::Kind::any:
      for (const Rule& child : rule.children) {
        Eval e = evaluate_rule(child, request, soft_failures);
        bool passed_over = e.fault == Fault::node || (soft_failures && e.fault == Fault::signature);
        if (e.fault != Fault::none && !passed_over) return Eval{false, e.fault, e.message};
        if (e.value) return result(true);
      }
      return result(false);
    case Rule::Kind::negate: {
      if (rule.children.empty()) return result(true);
      Eval e = evaluate_rule(rule.children.front(), request, soft_failures);
      return Eval{!e.value, e.fault, e.message};
    }
    case Rule::Kind::match:
      return evaluate_match(rule.match, request);
  }
  return result(false);
}

// Go's base64.StdEncoding.DecodeString as webhook uses it: line breaks are skipped, and on bad
// input the bytes of the groups before the bad one are kept (webhook writes them and logs).
// `ok` is false when the input was not all valid.
std::string go_base64_decode(std::string_view text, bool& ok) {
  std::string clean;
  for (char c : text) {
    if (c != '\r' && c != '\n') clean.push_back(c);
  }
  std::string out;
  ok = true;
  for (size_t i = 0; i < clean.size(); i += 4) {
    std::string_view group = std::string_view(clean).substr(i, 4);
    uint32_t bits = 0;
    size_t data = 0;
    for (int value = 0; data < group.size() && (value = util::base64_digit(group[data])) >= 0;
         ++data)
      bits |= uint32_t(value) << (18 - 6 * data);
    size_t pad = 0;
    while (data + pad < group.size() && group[data + pad] == '=') ++pad;
    bool padded = pad > 0 && group.size() == 4 && data >= 2 && data + pad == 4;
    if (data != 4 && !padded) {
      ok = false;
      break;
    }
    out.push_back(char(bits >> 16));
    if (data >= 3) out.push_back(char(bits >> 8 & 0xff));
    if (data == 4) out.push_back(char(bits & 0xff));
    if (padded) {
      ok = i + 4 == clean.size();  // nothing may follow the padding
      break;
    }
  }
  return out;
}

}  // namespace

Request make_request(const WebhookHook& hook, std::string method, std::string remote_addr,
                     std::vector<std::pair<std::string, std::string>> headers,
                     std::string_view raw_query, std::string body, int64_t now_unix_s) {
  Request request;
  request.method = std::move(method);
  request.remote_addr = std::move(remote_addr);
  request.headers = std::move(headers);
  request.body = std::move(body);
  request.now_unix_s = now_unix_s;
  request.header_values = header_values(request.headers);
  // Go's URL.Query: the fields that decode; a bad one is left out without a word.
  request.query = net::go_form_fields(raw_query).fields;
  request.query_values = first_values(request.query, as_is);
  request.content_type = hook.incoming_content_type.empty() ? content_type_header(request.headers)
                                                            : hook.incoming_content_type;
  decode_payload(hook, request, raw_query);
  if (!request.form_error.empty()) return request;  // webhook answers 500 at once
  parse_json_parameters(hook, request);
  return request;
}

std::optional<std::string> value_of(const Argument& argument, const Request& request) {
  return get(argument, request).value;
}

RuleResult evaluate(const WebhookHook& hook, const Request& request) {
  if (!hook.trigger_rule) return RuleResult{true, std::nullopt};
  Eval e = evaluate_rule(*hook.trigger_rule, request, hook.signature_soft_failures);
  // A missing parameter only leaves the value as it is (true for a "not" above it), as webhook.
  if (e.fault != Fault::none && e.fault != Fault::node) return RuleResult{false, e.message};
  return RuleResult{e.value, std::nullopt};
}

Command command_for(const WebhookHook& hook, const Request& request) {
  Command command;
  command.argv.push_back(hook.execute_command);
  for (const Argument& argument : hook.pass_arguments) {
    Got got = get(argument, request);
    command.argv.push_back(got.value.value_or(""));
    if (!got.value) command.problems.push_back("no value for argument " + describe(argument));
  }
  for (const Argument& argument : hook.pass_environment) {
    Got got = get(argument, request);
    if (!got.value) {
      command.problems.push_back("no value for environment " + describe(argument));
      continue;
    }
    std::string name = argument.envname.empty() ? "HOOK_" + argument.name : argument.envname;
    command.env.emplace_back(std::move(name), std::move(*got.value));
  }
  for (const Argument& argument : hook.pass_file) {
    Got got = get(argument, request);
    if (!got.value) {
      command.problems.push_back("no value for file " + describe(argument));
      continue;
    }
    std::string name = argument.envname;
    if (name.empty()) {
      name = "HOOK_";
      for (char c : argument.name) name.push_back(c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c);
    }
    std::string content = std::move(*got.value);
    if (argument.base64decode) {
      bool ok = true;
      content = go_base64_decode(content, ok);
      if (!ok) command.problems.push_back("file " + describe(argument) + " is not valid base64");
    }
    command.files.push_back(CommandFile{std::move(name), std::move(content)});
  }
  return command;
}

}  // namespace idem::webhook
