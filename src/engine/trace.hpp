#pragma once
// The engine's side of traces (SPEC §12): where an attempt's span goes once it ended (a
// SpanSink: otel/exporter.hpp sends them), and what the engine knows of that span from the
// attempt's claim to its end. One span per attempt; a replay, or a refusal, is a short span of
// its own, a replay's linked to the span of the attempt it replayed.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/record.hpp"
#include "core/trace.hpp"

namespace idem::engine {

class SpanSink {
 public:
  virtual ~SpanSink() = default;
  // Takes an ended span. Never waits for the receiver and never throws: a span that cannot be
  // kept is dropped (and counted where the sink says so).
  virtual void add(core::Span span) noexcept = 0;
};

// An attempt's span while it is under way.
struct AttemptSpan {
  core::SpanContext context;
  std::string parent_span_id;  // empty: a root span
  std::string front;           // idem.front: run, each, begin, hook, hooks-file, proxy, ledger
  std::string trigger;         // idem.trigger (core::HistoryEntry::trigger)
  int64_t start_ns = 0;

  core::SpanIds ids() const { return {context.trace_id, context.span_id, parent_span_id}; }
};

// A new span for an attempt of `front` begun at `start_ns`: a child of `traceparent` when that is
// a valid W3C traceparent (its trace, its sampled flag), else the root of a new trace. Its ids
// come from the kernel's random source; nullopt when it has none to give (no span then).
std::optional<AttemptSpan> open_span(std::string_view traceparent, std::string front,
                                     std::string trigger, int64_t start_ns);

// The span of `record`'s current attempt as its claim stored it, for the process that ends it
// (idem end, the ledger, a queued delivery started later); nullopt when it has none.
std::optional<AttemptSpan> stored_span(const core::Record& record);

// How an attempt's span ended.
struct SpanEnd {
  std::string key;
  int64_t attempt = 0;
  // idem.outcome: succeeded, failed, released, error, or the verdict of an attempt that did not
  // run (replayed, conflict, running, abandoned, superseded, full, queued).
  std::string outcome;
  std::optional<int> exit_code;               // process.exit.code
  std::optional<int> http_status;             // http.response.status_code
  std::optional<core::SpanContext> replayed;  // a replay's link
  std::string error;                          // a failure's message (status ERROR)
  int64_t end_ns = 0;
};

// The end of the span of attempt `attempt` at `key` that ended with `outcome` at `end_ns`.
SpanEnd outcome_end(const std::string& key, int64_t attempt, const core::Outcome& outcome,
                    int64_t end_ns);

// The span to export: named "idem FRONT", a server's span for a front that answers requests.
core::Span ended_span(const AttemptSpan& span, const SpanEnd& end);

// The front a record's kind stands for in a span (core::trigger_of_kind: "http" is "hook").
std::string span_front(std::string_view kind);

}  // namespace idem::engine
