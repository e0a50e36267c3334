#include "hooks/request.hpp"

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>

#include "hooks/signature.hpp"
#include "net/message.hpp"
#include "util/clock.hpp"
#include "util/hex.hpp"

namespace idem::hooks {

Delivery delivery_of(const net::RequestHead& head, std::string body) {
  Delivery d;
  d.method = head.method;
  d.path = head.path;
  d.headers = head.headers.fields();
  d.body = std::move(body);
  const size_t question = head.target.find('?');
  if (question != std::string::npos) d.query = head.target.substr(question + 1);
  return d;
}

std::string header_variable(std::string_view name) {
  std::string var = "IDEM_HEADER_";
  for (char c : name) {
    auto byte = static_cast<unsigned char>(c);
    bool alnum = (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') ||
                 (byte >= 'A' && byte <= 'Z');
    var.push_back(alnum ? char(std::toupper(byte)) : '_');
  }
  return var;
}

std::optional<std::string> Delivery::header(std::string_view name) const {
  const std::string variable = header_variable(name);
  std::optional<std::string> value;
  for (const auto& [n, v] : headers) {
    if (header_variable(n) != variable) continue;
    if (value)
      value->append(", ").append(v);
    else
      value = v;
  }
  return value;
}

std::vector<std::pair<std::string, std::string>> header_environment(const Delivery& d) {
  std::vector<std::pair<std::string, std::string>> variables;
  std::map<std::string, size_t> index;  // variable -> its place in `variables`
  for (const auto& [n, v] : d.headers) {
    std::string variable = header_variable(n);
    auto [it, fresh] = index.emplace(variable, variables.size());
    if (fresh)
      variables.emplace_back(std::move(variable), v);
    else
      variables[it->second].second.append(", ").append(v);
  }
  return variables;
}

bool is_credential_header(const Hook& hook, std::string_view name) {
  const std::string variable = header_variable(name);
  auto same = [&](std::string_view known) { return header_variable(known) == variable; };
  if (same("Authorization") || same("Cookie") || same("Proxy-Authorization")) return true;
  for (std::string_view known : signature_header_names())
    if (same(known)) return true;
  return hook.signature && !hook.signature->header.empty() && same(hook.signature->header);
}

std::string stored_request(const Hook& hook, const Delivery& d) {
  nlohmann::json headers = nlohmann::json::object();
  std::map<std::string, std::string> spelling;  // lower-case name -> the name as first received
  for (const auto& [n, v] : d.headers) {
    std::string lower = n;
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    auto [it, fresh] = spelling.emplace(lower, n);
    nlohmann::json& value = headers[it->second];
    if (is_credential_header(hook, n))
      value = k_redacted;
    else if (fresh)
      value = v;
    else
      value = value.get<std::string>() + ", " + v;
  }
  nlohmann::json stored{{"method", d.method},
                        {"path", d.path},
                        {"headers", headers},
                        {"body_b64", util::to_base64(d.body)}};
  if (!d.query.empty()) stored["query"] = d.query;
  if (!d.remote.empty()) stored["remote"] = d.remote;
  return stored.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<Delivery> stored_delivery(const std::string& stored) {
  nlohmann::json request = nlohmann::json::parse(stored, nullptr, false);
  if (!request.is_object() || !request.contains("body_b64") || !request["body_b64"].is_string())
    return std::nullopt;
  auto text = [&](const char* name) {
    auto it = request.find(name);
    return it != request.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  Delivery d;
  d.method = request.contains("method") ? text("method") : "POST";
  d.path = text("path");
  d.query = text("query");
  d.remote = text("remote");
  if (request.contains("headers") && request["headers"].is_object())
    for (const auto& [name, value] : request["headers"].items())
      if (value.is_string()) d.headers.emplace_back(name, value.get<std::string>());
  auto body = util::from_base64(request["body_b64"].get<std::string>());
  if (!body) return std::nullopt;
  d.body = std::move(*body);
  return d;
}

std::vector<std::string> form_values(std::string_view body, std::string_view name) {
  std::vector<std::string> values;
  for (auto& [field, value] : net::form_fields(body)) {
    if (field == name) values.push_back(std::move(value));
  }
  return values;
}

std::optional<front::Answer> signature_refusal(const Hook& hook, const Delivery& d,
                                               std::string_view body) {
  if (!hook.signature) return std::nullopt;
  auto lookup = [&](std::string_view name) { return d.header(name); };
  SignatureCheck v = verify(*hook.signature, lookup, body, util::process_clock().now_ms() / 1000);
  if (v.ok) return std::nullopt;
  front::Answer a = front::problem(401, "Signature check failed", v.problem);
  a.outcome = "unauthorized";
  return a;
}

}  // namespace idem::hooks
