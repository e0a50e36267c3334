#pragma once
// The exporter the OpenTelemetry environment variables ask for (SPEC §12), posting OTLP/HTTP
// JSON through net's HTTP client. The CLI and the daemon each make one at start, when asked.
#include <cstdint>
#include <memory>
#include <string>

#include "core/trace.hpp"
#include "otel/exporter.hpp"
#include "util/clock.hpp"

namespace idem::otel {

// How long the CLI spends, once its command has ended, connecting and writing its spans at most:
// 2 s, or the export timeout when that is shorter (their answer is not waited for).
inline constexpr int64_t k_final_export_wait_ms = 2000;

// The exporter `settings` ask for, with `options` (its timeout the shorter of theirs and the
// settings'). Throws
// UsageError naming the endpoint's variable when idem cannot post to it: an https endpoint (the
// HTTP client speaks plain HTTP; put a collector on this host or a private network in between),
// or a URL that is not one.
std::shared_ptr<Exporter> make_exporter(const core::TraceSettings& settings,
                                        const util::Clock& clock, Exporter::Options options);

// The exporter the process's environment asks for; null when it asks for none (nothing set: no
// thread, no allocation, nothing on an attempt's path). Throws UsageError as make_exporter and
// core::trace_settings do.
std::shared_ptr<Exporter> exporter_from_environment(const util::Clock& clock,
                                                    Exporter::Options options = {});

}  // namespace idem::otel
