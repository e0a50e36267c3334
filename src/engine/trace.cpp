#include "engine/trace.hpp"

#include <algorithm>
#include <exception>

#include "core/history.hpp"
#include "core/notify.hpp"
#include "util/random.hpp"

namespace idem::engine {

std::optional<AttemptSpan> open_span(std::string_view traceparent, std::string front,
                                     std::string trigger, int64_t start_ns) {
  AttemptSpan span;
  span.front = std::move(front);
  span.trigger = std::move(trigger);
  span.start_ns = start_ns;
  try {
    if (std::optional<core::SpanContext> parent = core::parse_traceparent(traceparent)) {
      span.context.trace_id = std::move(parent->trace_id);
      span.context.sampled = parent->sampled;
      span.parent_span_id = std::move(parent->span_id);
      span.context.span_id = util::random_hex(8);
    } else {
      const std::string ids = util::random_hex(24);
      span.context.trace_id = ids.substr(0, 32);
      span.context.span_id = ids.substr(32);
    }
  } catch (const std::exception&) {
    return std::nullopt;  // no random source: no span, and the attempt goes on without
  }
  // All zeros is no id (W3C): 2^-64 for a span, drawn again rather than sent.
  if (!core::valid_trace_id(span.context.trace_id, 32) ||
      !core::valid_trace_id(span.context.span_id, 16))
    return open_span(traceparent, std::move(span.front), std::move(span.trigger), start_ns);
  return span;
}

std::optional<AttemptSpan> stored_span(const core::Record& record) {
  if (record.span.span_id.empty()) return std::nullopt;
  AttemptSpan span;
  span.context.trace_id = record.span.trace_id;
  span.context.span_id = record.span.span_id;
  span.parent_span_id = record.span.parent_span_id;
  span.front = span_front(record.kind);
  span.trigger = core::trigger_of_kind(record.kind);
  span.start_ns = record.started_ms * 1000000;
  return span;
}

std::string span_front(std::string_view kind) { return core::trigger_of_kind(kind); }

SpanEnd outcome_end(const std::string& key, int64_t attempt, const core::Outcome& outcome,
                    int64_t end_ns) {
  SpanEnd end;
  end.key = key;
  end.attempt = attempt;
  end.outcome = core::to_string(outcome.status);
  end.exit_code = outcome.exit_code;
  if (outcome.response) end.http_status = outcome.response->status;
  if (core::outcome_failed(outcome)) end.error = outcome.note;
  end.end_ns = end_ns;
  return end;
}

core::Span ended_span(const AttemptSpan& span, const SpanEnd& end) {
  core::Span s;
  s.context = span.context;
  s.parent_span_id = span.parent_span_id;
  s.name = "idem " + span.front;
  const bool cli = span.front == "run" || span.front == "each" || span.front == "begin";
  s.kind = cli ? core::SpanKind::internal : core::SpanKind::server;
  s.start_ns = span.start_ns;
  s.end_ns = std::max(end.end_ns, span.start_ns);
  s.attributes.reserve(7);
  s.attributes.push_back({"idem.key", end.key});
  s.attributes.push_back({"idem.front", span.front});
  s.attributes.push_back({"idem.attempt", end.attempt});
  s.attributes.push_back({"idem.outcome", end.outcome});
  if (!span.trigger.empty()) s.attributes.push_back({"idem.trigger", span.trigger});
  if (end.exit_code) s.attributes.push_back({"process.exit.code", int64_t(*end.exit_code)});
  if (end.http_status)
    s.attributes.push_back({"http.response.status_code", int64_t(*end.http_status)});
  if (end.replayed) s.links.push_back(*end.replayed);
  if (!end.error.empty() || end.outcome == "failed") {
    s.error = true;
    s.status_message = end.error;
  }
  return s;
}

}  // namespace idem::engine
