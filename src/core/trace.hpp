#pragma once
// Traces (SPEC §12): W3C trace context (the `traceparent` a delivery, a proxied request or the
// environment brings, and the one idem hands on), the span of an attempt, its OTLP/HTTP JSON
// form, and the OpenTelemetry environment variables that configure the export. Pure: sending
// the spans is the otel room's (otel/exporter.hpp), making them the engine's.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace idem::core {

// One span's place in a trace: 32 and 16 lower-case hex digits, neither all zeros.
struct SpanContext {
  std::string trace_id;
  std::string span_id;
  bool sampled = true;  // the trace-flags' sampled bit
};

// A `traceparent` as W3C Trace Context (level 1) defines it, checked strictly: version 00 is
// exactly "00-TRACEID-SPANID-FLAGS" (55 characters, lower-case hex, ids not all zeros); a later
// version (not ff) is read by its first 55 characters, followed by nothing or '-'. Anything else
// is nullopt: the caller then starts a new trace.
std::optional<SpanContext> parse_traceparent(std::string_view text);
// "00-TRACEID-SPANID-01" (00 when not sampled).
std::string traceparent(const SpanContext& span);

// An id of `hex_digits` lower-case hex digits is well formed and not all zeros.
bool valid_trace_id(std::string_view id, size_t hex_digits);

// An attribute of a span or of the resource: a string or an integer (OTLP's stringValue and
// intValue).
struct TraceAttribute {
  std::string key;
  std::variant<std::string, int64_t> value;
};

// OTLP's span kinds that idem uses: an attempt of the CLI is internal, one a request started
// (a delivery, a proxied request, a ledger call) is a server's.
enum class SpanKind { internal = 1, server = 2 };

struct Span {
  SpanContext context;
  std::string parent_span_id;  // empty: a root span
  std::string name;
  SpanKind kind = SpanKind::internal;
  int64_t start_ns = 0;  // Unix time, nanoseconds
  int64_t end_ns = 0;
  std::vector<TraceAttribute> attributes;
  std::vector<SpanContext> links;  // a replay's: the span of the attempt it replayed
  bool error = false;              // status ERROR (a failed attempt), else unset
  std::string status_message;      // with error
};

// What idem's spans are produced by (OTLP's resource): service.name first, then the others of
// OTEL_RESOURCE_ATTRIBUTES in their order.
struct TraceResource {
  std::string service_name = "idem";
  std::vector<std::pair<std::string, std::string>> attributes;
};

// The body of an OTLP/HTTP JSON export request (ExportTraceServiceRequest) holding `spans`:
// {"resourceSpans":[{"resource":{...},"scopeSpans":[{"scope":{"name":"idem"},"spans":[...]}]}]},
// ids as hex, times as strings of nanoseconds, integers as strings (protobuf's JSON mapping of
// int64). Bytes that are not UTF-8 (a key may hold any) are replaced.
std::string otlp_json(const TraceResource& resource, const std::vector<Span>& spans);

// The export as the OpenTelemetry environment variables configure it (SPEC §12).
struct TraceSettings {
  // The URL spans are posted to: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else
  // OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces"; and the variable it came from, for messages.
  std::string endpoint;
  std::string endpoint_variable;
  // OTEL_EXPORTER_OTLP_HEADERS then OTEL_EXPORTER_OTLP_TRACES_HEADERS (a name in both: the
  // latter's), values URL-decoded.
  std::vector<std::pair<std::string, std::string>> headers;
  TraceResource resource;
  // OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, else OTEL_EXPORTER_OTLP_TIMEOUT, else 10 s: the longest an
  // export request may take.
  int64_t timeout_ms = 10000;
};

// Looks an environment variable up (getenv); nullptr: not set.
using EnvLookup = std::function<const char*(const char*)>;

// The export `env` asks for; nullopt when it asks for none: no endpoint set (or set empty),
// OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none. Throws UsageError naming the variable
// whose value is malformed (a header without '=', a timeout that is not a number of ms).
std::optional<TraceSettings> trace_settings(const EnvLookup& env);

// "k=v,k2=v2" as OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES write it: names and
// values trimmed, values URL-decoded (%XX); empty members skipped. Throws UsageError naming
// `variable` for a member without '=' or with an empty name, or a bad %-escape.
std::vector<std::pair<std::string, std::string>> parse_key_values(std::string_view variable,
                                                                  std::string_view text);

}  // namespace idem::core
