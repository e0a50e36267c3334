#include "core/response.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace idem::core {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

// Written by the server that replays, or meaningful for one connection only (RFC 9110 §7.6.1).
bool is_servers_own(std::string_view name) {
  for (std::string_view own : {"Content-Length", "Transfer-Encoding", "Date", "Connection",
                               "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Upgrade"})
    if (same_header_name(name, own)) return true;
  return false;
}

bool has_control_byte(std::string_view value) {
  for (char c : value) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\t') || byte == 0x7f) return true;
  }
  return false;
}

// nlohmann's strict serialiser validates UTF-8 (overlong forms and surrogates included).
bool is_utf8(const std::string& value) {
  try {
    (void)nlohmann::json(value).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    bool alnum = (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') ||
                 (byte >= 'A' && byte <= 'Z');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos)
      return false;
  }
  return true;
}

bool same_header_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::optional<std::string> header_value(const Response& response, std::string_view name) {
  for (const auto& [n, v] : response.headers)
    if (same_header_name(n, name)) return v;
  return std::nullopt;
}

std::optional<std::string> response_problem(const Response& response) {
  if (response.status < 100 || response.status > 599)
    return "status " + std::to_string(response.status) + " is not between 100 and 599";
  size_t bytes = 0;
  for (const auto& [name, value] : response.headers) {
    if (!is_token(name)) return "header name '" + name + "' is not a token";
    if (is_servers_own(name)) return "header " + name + " is the replaying server's own";
    if (has_control_byte(value)) return "header " + name + " holds a control character";
    if (!is_utf8(value)) return "header " + name + " is not UTF-8";
    bytes += name.size() + value.size();
  }
  if (bytes > k_max_response_header_bytes)
    return "headers of " + std::to_string(bytes) + " bytes (at most " +
           std::to_string(k_max_response_header_bytes) + ")";
  return std::nullopt;
}

std::string encode_response(const Response& response) {
  if (auto why = response_problem(response))
    throw std::invalid_argument("response cannot be stored: " + *why);
  nlohmann::ordered_json headers = nlohmann::ordered_json::array();
  for (const auto& [name, value] : response.headers) headers.push_back({name, value});
  return nlohmann::ordered_json{{"status", response.status}, {"headers", std::move(headers)}}
      .dump();
}

std::optional<Response> decode_response(std::string_view stored) {
  nlohmann::json doc = nlohmann::json::parse(stored, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  auto status = doc.find("status");
  auto headers = doc.find("headers");
  if (status == doc.end() || !status->is_number_integer()) return std::nullopt;
  if (headers == doc.end() || !headers->is_array()) return std::nullopt;
  // Range-checked as int64 before the narrowing (a stored 2^40 must not wrap into 200).
  const auto code = status->get<int64_t>();
  if (code < 100 || code > 599) return std::nullopt;
  Response response;
  response.status = int(code);
  for (const auto& header : *headers) {
    if (!header.is_array() || header.size() != 2 || !header[0].is_string() ||
        !header[1].is_string())
      return std::nullopt;
    response.headers.emplace_back(header[0].get<std::string>(), header[1].get<std::string>());
  }
  if (response_problem(response)) return std::nullopt;
  return response;
}

}  // namespace idem::core
