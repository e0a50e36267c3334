#include "core/trace.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"

namespace idem::core {

namespace {

bool lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string url_decoded(std::string_view variable, std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const int hi = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
    const int lo = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
    if (hi < 0 || lo < 0)
      throw UsageError(std::string(variable) + ": bad %-escape in '" + std::string(text) + "'");
    out += char(hi * 16 + lo);
    i += 2;
  }
  return out;
}

const char* non_empty(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  return value && *value ? value : nullptr;
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower((unsigned char)x) == std::tolower((unsigned char)y);
         });
}

int64_t timeout_of(const EnvLookup& env, const char* name, int64_t fallback) {
  const char* value = non_empty(env, name);
  if (!value) return fallback;
  const std::string_view text = trimmed(value);
  int64_t ms = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc() || end != text.data() + text.size() || ms <= 0)
    throw UsageError(std::string(name) + ": '" + value +
                     "' is not a timeout in milliseconds (a number above 0)");
  return ms;
}

nlohmann::json attribute_json(const TraceAttribute& a) {
  if (const auto* text = std::get_if<std::string>(&a.value))
    return {{"key", a.key}, {"value", {{"stringValue", *text}}}};
  return {{"key", a.key}, {"value", {{"intValue", std::to_string(std::get<int64_t>(a.value))}}}};
}

nlohmann::json span_json(const Span& s) {
  nlohmann::json j{{"traceId", s.context.trace_id},
                   {"spanId", s.context.span_id},
                   {"name", s.name},
                   {"kind", int(s.kind)},
                   {"startTimeUnixNano", std::to_string(s.start_ns)},
                   {"endTimeUnixNano", std::to_string(s.end_ns)}};
  if (!s.parent_span_id.empty()) j["parentSpanId"] = s.parent_span_id;
  nlohmann::json attributes = nlohmann::json::array();
  for (const TraceAttribute& a : s.attributes) attributes.push_back(attribute_json(a));
  j["attributes"] = std::move(attributes);
  if (!s.links.empty()) {
    nlohmann::json links = nlohmann::json::array();
    for (const SpanContext& l : s.links)
      links.push_back({{"traceId", l.trace_id}, {"spanId", l.span_id}});
    j["links"] = std::move(links);
  }
  // STATUS_CODE_ERROR is 2; an unset status is left out.
  if (s.error) j["status"] = {{"code", 2}, {"message", s.status_message}};
  return j;
}

}  // namespace

bool valid_trace_id(std::string_view id, size_t hex_digits) {
  return id.size() == hex_digits && std::all_of(id.begin(), id.end(), lower_hex) &&
         id.find_first_not_of('0') != std::string_view::npos;
}

std::optional<SpanContext> parse_traceparent(std::string_view text) {
  // version "-" trace-id "-" parent-id "-" trace-flags
  constexpr size_t k_length = 55;
  if (text.size() < k_length) return std::nullopt;
  const std::string_view version = text.substr(0, 2);
  if (!std::all_of(version.begin(), version.end(), lower_hex) || version == "ff")
    return std::nullopt;
  // Version 00 is exactly 55 characters; a later one may carry more after a '-'.
  if (version == "00" ? text.size() != k_length : text.size() > k_length && text[k_length] != '-')
    return std::nullopt;
  if (text[2] != '-' || text[35] != '-' || text[52] != '-') return std::nullopt;
  const std::string_view trace_id = text.substr(3, 32), span_id = text.substr(36, 16),
                         flags = text.substr(53, 2);
  if (!valid_trace_id(trace_id, 32) || !valid_trace_id(span_id, 16) ||
      !std::all_of(flags.begin(), flags.end(), lower_hex))
    return std::nullopt;
  return SpanContext{std::string(trace_id), std::string(span_id), (hex_value(flags[1]) & 1) != 0};
}

std::string traceparent(const SpanContext& span) {
  return "00-" + span.trace_id + "-" + span.span_id + (span.sampled ? "-01" : "-00");
}

std::string otlp_json(const TraceResource& resource, const std::vector<Span>& spans) {
  nlohmann::json attributes = nlohmann::json::array();
  attributes.push_back(attribute_json({"service.name", resource.service_name}));
  for (const auto& [key, value] : resource.attributes)
    if (key != "service.name") attributes.push_back(attribute_json({key, value}));
  nlohmann::json list = nlohmann::json::array();
  for (const Span& s : spans) list.push_back(span_json(s));
  const nlohmann::json body{
      {"resourceSpans",
       {{{"resource", {{"attributes", std::move(attributes)}}},
         {"scopeSpans", {{{"scope", {{"name", "idem"}}}, {"spans", std::move(list)}}}}}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::pair<std::string, std::string>> parse_key_values(std::string_view variable,
                                                                  std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view member = trimmed(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (member.empty()) continue;
    const size_t eq = member.find('=');
    const std::string_view name = eq == std::string_view::npos ? "" : trimmed(member.substr(0, eq));
    if (name.empty())
      throw UsageError(std::string(variable) + ": '" + std::string(member) +
                       "' is not NAME=VALUE (members are separated by commas)");
    out.emplace_back(url_decoded(variable, name),
                     url_decoded(variable, trimmed(member.substr(eq + 1))));
  }
  return out;
}

std::optional<TraceSettings> trace_settings(const EnvLookup& env) {
  if (const char* disabled = non_empty(env, "OTEL_SDK_DISABLED");
      disabled && equals_ignore_case(trimmed(disabled), "true"))
    return std::nullopt;
  if (const char* exporter = non_empty(env, "OTEL_TRACES_EXPORTER");
      exporter && equals_ignore_case(trimmed(exporter), "none"))
    return std::nullopt;
  TraceSettings s;
  if (const char* traces = non_empty(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
    s.endpoint = trimmed(traces);
    s.endpoint_variable = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
  } else if (const char* base = non_empty(env, "OTEL_EXPORTER_OTLP_ENDPOINT")) {
    std::string_view url = trimmed(base);
    while (!url.empty() && url.back() == '/') url.remove_suffix(1);
    s.endpoint = std::string(url) + "/v1/traces";
    s.endpoint_variable = "OTEL_EXPORTER_OTLP_ENDPOINT";
  } else {
    return std::nullopt;
  }
  for (const char* name : {"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"})
    if (const char* value = non_empty(env, name))
      for (auto& header : parse_key_values(name, value)) {
        // A name given again (in the traces' own variable, say) replaces the one before.
        std::erase_if(s.headers, [&header](const auto& h) {
          return equals_ignore_case(h.first, header.first);
        });
        s.headers.push_back(std::move(header));
      }
  if (const char* attributes = non_empty(env, "OTEL_RESOURCE_ATTRIBUTES"))
    for (auto& [key, value] : parse_key_values("OTEL_RESOURCE_ATTRIBUTES", attributes)) {
      if (key == "service.name")
        s.resource.service_name = value;
      else
        s.resource.attributes.emplace_back(std::move(key), std::move(value));
    }
  if (const char* name = non_empty(env, "OTEL_SERVICE_NAME")) s.resource.service_name = name;
  s.timeout_ms = timeout_of(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
                            timeout_of(env, "OTEL_EXPORTER_OTLP_TIMEOUT", s.timeout_ms));
  return s;
}

}  // namespace idem::core
