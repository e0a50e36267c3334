#include "proxy/config.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/duration.hpp"
#include "core/output.hpp"
#include "net/upstream.hpp"

namespace idem::proxy {

namespace {

using namespace front::config_fields;

// One method list of the proxy: keyed methods, which never include the safe ones.
std::vector<std::string> read_keyed_methods(const front::config_fields::Json& value,
                                            const std::string& at) {
  std::vector<std::string> methods = front::config_fields::read_methods(value, at);
  for (size_t i = 0; i < methods.size(); ++i)
    if (methods[i] == "GET" || methods[i] == "HEAD" || methods[i] == "OPTIONS")
      front::config_fields::fail(front::config_fields::element(at, i),
                                 front::config_fields::quote(methods[i]) +
                                     " is never keyed: safe methods are passed through untouched");
  return methods;
}

// store_statuses: a non-empty array of statuses and classes (StatusSet), some taken.
StatusSet read_store_statuses(const front::config_fields::Json& value, const std::string& at) {
  if (!value.is_array() || value.empty())
    front::config_fields::wrong_type(
        at, "a non-empty array of statuses and classes (\"2xx\", 404, \"!429\")", value);
  StatusSet set;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string where = front::config_fields::element(at, i);
    std::optional<StatusSet::Item> item;
    if (value[i].is_number_integer())
      item = StatusSet::read_item(std::to_string(value[i].get<int64_t>()));
    else if (value[i].is_string())
      item = StatusSet::read_item(value[i].get<std::string>());
    else
      front::config_fields::wrong_type(where, "a status or a class", value[i]);
    if (!item)
      front::config_fields::fail(
          where, (value[i].is_string() ? front::config_fields::quote(value[i].get<std::string>())
                                       : value[i].dump()) +
                     " is neither a status (200 to 599) nor a class (2xx to 5xx), with or "
                     "without a leading '!'");
    set.items.push_back(*item);
  }
  if (std::all_of(set.items.begin(), set.items.end(),
                  [](const StatusSet::Item& item) { return item.refuses; }))
    front::config_fields::fail(
        at, "only refuses statuses ('!'): name at least one status or class to store");
  return set;
}

// The settings a proxy route may override; absent ones keep what `out` holds.
void read_proxy_settings(const front::config_fields::Json& value, const std::string& at,
                         ProxySettings& out) {
  if (const Json* v = optional_field(value, "methods"))
    out.methods = read_keyed_methods(*v, front::config_fields::member(at, "methods"));
  if (const Json* v = optional_field(value, "ttl")) {
    out.ttl_ms =
        front::config_fields::read_duration_ms(*v, front::config_fields::member(at, "ttl"));
    if (out.ttl_ms == 0) front::config_fields::fail(member(at, "ttl"), "must be more than 0");
  }
  if (const Json* v = optional_field(value, "timeout")) {
    out.timeout_ms =
        front::config_fields::read_duration_ms(*v, front::config_fields::member(at, "timeout"));
    if (out.timeout_ms == 0)
      front::config_fields::fail(member(at, "timeout"), "must be more than 0");
  }
  if (const Json* v = optional_field(value, "late_answer"))
    out.late_answer_ms =
        front::config_fields::read_duration_ms(*v, front::config_fields::member(at, "late_answer"));
  if (const Json* v = optional_field(value, "max_body")) {
    out.max_body =
        front::config_fields::read_size(*v, front::config_fields::member(at, "max_body"));
    if (out.max_body == 0)
      front::config_fields::fail(member(at, "max_body"), "must be more than 0");
    if (out.max_body > front::config_fields::k_max_body_limit)
      front::config_fields::fail(member(at, "max_body"),
                                 "must be at most 1GiB, got " + core::format_size(out.max_body));
  }
  if (const Json* v = optional_field(value, "store_server_errors"))
    out.store_server_errors = front::config_fields::read_bool(
        *v, front::config_fields::member(at, "store_server_errors"));
  if (const Json* v = optional_field(value, "store_statuses"))
    out.store_statuses =
        read_store_statuses(*v, front::config_fields::member(at, "store_statuses"));
}

std::string read_prefix(const front::config_fields::Json& route, const std::string& at) {
  std::string where = front::config_fields::member(at, "prefix");
  std::string prefix =
      front::config_fields::read_string(front::config_fields::required(route, at, "prefix"), where);
  if (!prefix.starts_with('/'))
    front::config_fields::fail(where, front::config_fields::quote(prefix) + " must start with '/'");
  for (char c : prefix) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f)
      front::config_fields::fail(where,
                                 front::config_fields::quote(prefix) +
                                     " contains whitespace, a control or a non-ASCII character");
    if (c == '?' || c == '#')
      front::config_fields::fail(where, front::config_fields::quote(prefix) + " contains '" +
                                            std::string(1, c) +
                                            "' (routes are matched on the path alone)");
  }
  return prefix;
}

std::vector<ProxyRouteSettings> read_proxy_routes(const front::config_fields::Json& value,
                                                  const std::string& at,
                                                  const ProxySettings& inherited) {
  if (!value.is_array()) front::config_fields::wrong_type(at, "an array of routes", value);
  std::vector<ProxyRouteSettings> routes;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string where = front::config_fields::element(at, i);
    front::config_fields::expect_object(value[i], where);
    front::config_fields::check_fields(value[i], where,
                                       {"prefix", "methods", "ttl", "timeout", "late_answer",
                                        "store_server_errors", "store_statuses", "max_body"});
    ProxyRouteSettings route{read_prefix(value[i], where), inherited};
    for (size_t j = 0; j < routes.size(); ++j)
      if (routes[j].prefix == route.prefix)
        front::config_fields::fail(
            front::config_fields::member(where, "prefix"),
            front::config_fields::quote(route.prefix) + " is used by " + element(at, j) + " too");
    read_proxy_settings(value[i], where, route.settings);
    routes.push_back(std::move(route));
  }
  return routes;
}

// parse_upstream_url names its source; the config's message names the field once.
void read_upstream(const front::config_fields::Json& value, const std::string& at,
                   ProxyConfig& out) {
  std::string where = front::config_fields::member(at, "upstream");
  out.upstream = front::config_fields::read_string(
      front::config_fields::required(value, at, "upstream"), where);
  try {
    out.target = net::parse_upstream_url(where, out.upstream);
  } catch (const UsageError& e) {
    std::string_view why = e.what();
    if (why.starts_with(where + ": ")) why.remove_prefix(where.size() + 2);
    front::config_fields::fail(where, std::string(why));
  }
}

}  // namespace

ProxyConfig read_proxy_section(const front::config_fields::Json& value) {
  using namespace front::config_fields;
  const std::string at = "proxy";
  expect_object(value, at);
  check_fields(value, at,
               {"upstream", "methods", "ttl", "timeout", "late_answer", "max_body", "max_response",
                "max_forwards", "scope_header", "store_server_errors", "store_statuses", "routes",
                "allow", "notify"});
  ProxyConfig proxy;
  read_upstream(value, at, proxy);
  if (const Json* v = optional_field(value, "notify"))
    proxy.notify = read_notify(*v, member(at, "notify"));
  if (const Json* v = optional_field(value, "allow"))
    proxy.allow = read_allow(*v, member(at, "allow"));
  read_proxy_settings(value, at, proxy.settings);
  if (const Json* v = optional_field(value, "max_response")) {
    proxy.max_response = read_size(*v, member(at, "max_response"));
    if (proxy.max_response == 0) fail(member(at, "max_response"), "must be more than 0");
    // The store keeps an output of up to this size (core/output.hpp).
    if (proxy.max_response > core::k_max_output_cap)
      fail(member(at, "max_response"), "must be at most " +
                                           core::format_size(core::k_max_output_cap) + ", got " +
                                           core::format_size(proxy.max_response));
  }
  if (const Json* v = optional_field(value, "max_forwards"))
    proxy.max_forwards = read_int(*v, member(at, "max_forwards"), 1, 4096);
  if (const Json* v = optional_field(value, "scope_header")) {
    std::string where = member(at, "scope_header");
    proxy.scope_header = read_string(*v, where);
    if (!is_token(proxy.scope_header))
      fail(where, quote(proxy.scope_header) + " is not a valid header name");
  }
  // Routes inherit the section's settings, whatever the order of the fields in the file.
  if (const Json* v = optional_field(value, "routes"))
    proxy.routes = read_proxy_routes(*v, member(at, "routes"), proxy.settings);
  return proxy;
}

}  // namespace idem::proxy
