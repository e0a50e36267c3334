#include "proxy/rules.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/fingerprint.hpp"
#include "core/key.hpp"
#include "util/hex.hpp"

namespace idem::proxy {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return std::string(text);
}

// The values of every field named `name`, joined with ", " as RFC 9110 combines them.
std::optional<std::string> joined(const net::Headers& headers, std::string_view name) {
  std::optional<std::string> value;
  for (const auto& [n, v] : headers.fields()) {
    if (!net::equals_ignore_case(n, name)) continue;
    if (value)
      value->append(", ").append(v);
    else
      value = v;
  }
  return value;
}

// An RFC 8941 sf-string: DQUOTE *( unescaped / escaped ) DQUOTE, escaped a backslash before
// DQUOTE or a backslash, unescaped printable ASCII but those two. Nothing may follow but whitespace
// (parameters are refused: the key is the whole field).
KeyReading unquote(std::string_view value) {
  KeyReading r;
  r.kind = KeyReading::malformed;
  for (size_t i = 1; i < value.size(); ++i) {
    char c = value[i];
    if (c == '\\') {
      if (i + 1 >= value.size() || (value[i + 1] != '"' && value[i + 1] != '\\')) {
        r.reason = "a '\\' in the quoted string is followed by neither '\"' nor '\\'";
        return r;
      }
      r.key.push_back(value[++i]);
    } else if (c == '"') {
      if (!trimmed(value.substr(i + 1)).empty()) {
        r.reason = "something follows the quoted string";
        return r;
      }
      r.kind = KeyReading::ok;
      return r;
    } else if (c < 0x20 || c > 0x7e) {
      r.reason = "the quoted string holds a byte that is not printable ASCII";
      return r;
    } else {
      r.key.push_back(c);
    }
  }
  r.reason = "the quoted string has no closing '\"'";
  return r;
}

bool is_credential(std::string_view name) {
  return net::equals_ignore_case(name, "Authorization") ||
         net::equals_ignore_case(name, "Cookie") ||
         net::equals_ignore_case(name, "Proxy-Authorization");
}

}  // namespace

bool ProxySettings::keyed(std::string_view method) const {
  return std::find(methods.begin(), methods.end(), method) != methods.end();
}

bool prefix_takes(std::string_view prefix, std::string_view path) {
  if (!path.starts_with(prefix)) return false;
  return path.size() == prefix.size() || prefix.ends_with('/') || path[prefix.size()] == '/';
}

const ProxySettings& ProxyConfig::settings_for(std::string_view path) const {
  const ProxyRouteSettings* best = nullptr;
  for (const auto& route : routes)
    if (prefix_takes(route.prefix, path) && (!best || route.prefix.size() > best->prefix.size()))
      best = &route;
  return best ? best->settings : settings;
}

KeyReading read_idempotency_key(const net::Headers& headers) {
  KeyReading r;
  const size_t count = headers.count(k_idempotency_key);
  if (count == 0) return r;
  r.kind = KeyReading::malformed;
  if (count > 1) {
    r.reason = "Idempotency-Key is given " + std::to_string(count) + " times";
    return r;
  }
  const std::string value = trimmed(*headers.get(k_idempotency_key));
  if (value.starts_with('"')) {
    r = unquote(value);
  } else {
    r.kind = KeyReading::ok;
    r.key = value;
  }
  if (r.kind != KeyReading::ok) {
    r.reason = "Idempotency-Key is not a structured-field string: " + r.reason;
    return r;
  }
  if (r.key.size() > core::k_max_key_bytes) {
    r.kind = KeyReading::malformed;
    r.reason = "Idempotency-Key is " + std::to_string(r.key.size()) + " bytes long; the limit is " +
               std::to_string(core::k_max_key_bytes);
  } else {
    std::string why;
    r.usable = core::Key::parse(r.key, why);
    if (!r.usable) {
      r.kind = KeyReading::malformed;
      r.reason = "Idempotency-Key: " + why;
    }
  }
  return r;
}

std::string key_scope(const net::Headers& headers, std::string_view scope_header) {
  core::Fingerprinter f;
  f.add_field("kind", "proxy-scope");
  // The scope header alone when there is one: Authorization changes when a token is refreshed,
  // and a retry under the new token must find the attempt under the old one.
  if (auto scope = scope_header.empty() ? std::nullopt : joined(headers, scope_header))
    f.add_field("scope", *scope);
  else if (auto authorization = joined(headers, "Authorization"))
    f.add_field("authorization", *authorization);
  else
    return "-";
  return f.hex().substr(0, 16);
}

std::string stored_scope(std::string_view scope) { return "proxy#" + std::string(scope); }

std::string stored_key(std::string_view scope, std::string_view key) {
  return stored_scope(scope) + "#" + std::string(key);
}

std::string request_fingerprint(const net::RequestHead& head, std::string_view body) {
  core::Fingerprinter f;
  f.add_field("kind", "proxy");
  f.add_field("method", head.method);
  f.add_field("path", head.path);
  const size_t question = head.target.find('?');
  f.add_field("query", question == std::string::npos
                           ? std::string_view()
                           : std::string_view(head.target).substr(question + 1));
  f.add_field("body", body);
  return f.hex();
}

std::string proxy_stored_request(const net::RequestHead& head, std::string_view body) {
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& [n, v] : head.headers.fields())
    headers.push_back({n, is_credential(n) ? std::string("[redacted]") : v});
  return nlohmann::json{{"method", head.method},
                        {"path", head.target},
                        {"headers", headers},
                        {"body_b64", util::to_base64(body)}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> connection_names(
    const std::vector<std::pair<std::string, std::string>>& headers) {
  std::vector<std::string> names;
  for (const auto& [n, v] : headers) {
    if (!net::equals_ignore_case(n, "Connection")) continue;
    std::string_view rest = v;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string name = trimmed(rest.substr(0, comma));
      if (!name.empty()) names.push_back(lower(name));
      rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    }
  }
  return names;
}

bool is_hop_by_hop(std::string_view name, const std::vector<std::string>& listed) {
  for (std::string_view hop : {"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer",
                               "Transfer-Encoding", "Upgrade"})
    if (net::equals_ignore_case(name, hop)) return true;
  const std::string l = lower(name);
  return std::find(listed.begin(), listed.end(), l) != listed.end();
}

std::vector<std::pair<std::string, std::string>> forwarded_headers(
    const net::RequestHead& head, const std::string& remote, const net::UpstreamTarget& target) {
  const auto& fields = head.headers.fields();
  const auto listed = connection_names(fields);
  std::vector<std::pair<std::string, std::string>> out;
  std::optional<std::string> forwarded_for;
  for (const auto& [n, v] : fields) {
    if (net::equals_ignore_case(n, "X-Forwarded-For")) {
      forwarded_for = forwarded_for ? *forwarded_for + ", " + v : v;
      continue;
    }
    if (is_hop_by_hop(n, listed) || net::equals_ignore_case(n, "Host") ||
        net::equals_ignore_case(n, "Content-Length") || net::equals_ignore_case(n, "Expect") ||
        net::equals_ignore_case(n, "X-Forwarded-Host") ||
        net::equals_ignore_case(n, "X-Forwarded-Proto"))
      continue;
    out.emplace_back(n, v);
  }
  out.emplace_back("Host", target.authority);
  out.emplace_back("X-Forwarded-For", forwarded_for ? *forwarded_for + ", " + remote : remote);
  if (auto host = head.headers.get("Host"))
    out.emplace_back("X-Forwarded-Host", std::string(*host));
  out.emplace_back("X-Forwarded-Proto", "http");
  return out;
}

net::Response answer_head(const net::UpstreamHead& head) {
  net::Response r;
  r.status = head.status;
  const auto listed = connection_names(head.headers);
  for (const auto& [n, v] : head.headers) {
    if (is_hop_by_hop(n, listed) || net::equals_ignore_case(n, "Content-Length") ||
        net::equals_ignore_case(n, "Date"))
      continue;
    if (r.content_type.empty() && net::equals_ignore_case(n, "Content-Type"))
      r.content_type = v;
    else
      r.headers.emplace_back(n, v);
  }
  return r;
}

core::Response stored_response(const net::UpstreamHead& head) {
  core::Response r;
  r.status = head.status;
  const auto listed = connection_names(head.headers);
  size_t bytes = 0;
  for (const auto& [n, v] : head.headers) {
    if (is_hop_by_hop(n, listed) || net::equals_ignore_case(n, "Set-Cookie")) continue;
    core::Response one{head.status, {{n, v}}};
    if (core::response_problem(one)) continue;  // Date, Content-Length, a control byte, ...
    if (bytes + n.size() + v.size() > core::k_max_response_header_bytes) break;
    bytes += n.size() + v.size();
    r.headers.emplace_back(n, v);
  }
  return r;
}

bool StatusSet::stores(int status) const {
  bool taken = false;
  for (const Item& item : items) {
    if (status < item.low || status > item.high) continue;
    if (item.refuses) return false;
    taken = true;
  }
  return taken;
}

std::optional<StatusSet::Item> StatusSet::read_item(std::string_view text) {
  Item item;
  if (text.starts_with('!')) {
    item.refuses = true;
    text.remove_prefix(1);
  }
  if (text.size() != 3 || text[0] < '2' || text[0] > '5') return std::nullopt;
  const int hundreds = (text[0] - '0') * 100;
  if ((text[1] == 'x' || text[1] == 'X') && (text[2] == 'x' || text[2] == 'X')) {
    item.low = hundreds;
    item.high = hundreds + 99;
    return item;
  }
  if (!std::isdigit(static_cast<unsigned char>(text[1])) ||
      !std::isdigit(static_cast<unsigned char>(text[2])))
    return std::nullopt;
  item.low = item.high = hundreds + (text[1] - '0') * 10 + (text[2] - '0');
  return item;
}

StatusSet default_store_statuses() {
  StatusSet set;
  for (std::string_view item : {"2xx", "3xx", "4xx", "!408", "!409", "!425", "!429"})
    set.items.push_back(*StatusSet::read_item(item));
  return set;
}

bool stores_status(int status, const ProxySettings& settings) {
  return settings.store_statuses.stores(status) || (status >= 500 && settings.store_server_errors);
}

net::Response proxy_problem(int status, const std::string& title, const std::string& detail,
                            const std::string& error_type) {
  net::Response r;
  r.status = status;
  r.content_type = "application/problem+json";
  r.body = nlohmann::ordered_json{{"type", "about:blank"},
                                  {"title", title},
                                  {"status", status},
                                  {"detail", detail},
                                  {"error", {{"type", error_type}, {"message", detail}}}}
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
  return r;
}

}  // namespace idem::proxy
