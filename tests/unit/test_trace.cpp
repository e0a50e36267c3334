// Traces (SPEC §12): W3C traceparent parsing, strict; the OTLP/HTTP JSON encoding of spans; the
// OTEL_* variables; the exporter's bounded queue (drops counted, batches, the linger and the
// shutdown deadline on the fake clock, a failing receiver); and the engine's spans: one per
// attempt, parented by the attempt's traceparent, stored with the record, a replay's linked to
// the attempt it replayed, the command's TRACEPARENT its span.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/trace.hpp"
#include "engine/attempt.hpp"
#include "engine/command_effect.hpp"
#include "engine/trace.hpp"
#include "fakes.hpp"
#include "otel/exporter.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

namespace unit_trace {

using idem::core::parse_traceparent;
using idem::core::Span;
using idem::core::SpanContext;
using idem::otel::Exporter;
using idem::test::FakeClock;
using json = nlohmann::json;

constexpr const char* k_parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

TEST_CASE("trace: a valid traceparent gives its trace, span and sampled flag", "[trace]") {
  auto p = parse_traceparent(k_parent);
  REQUIRE(p);
  CHECK(p->trace_id == "0af7651916cd43dd8448eb211c80319c");
  CHECK(p->span_id == "b7ad6b7169203331");
  CHECK(p->sampled);
  auto unsampled = parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  REQUIRE(unsampled);
  CHECK_FALSE(unsampled->sampled);
  CHECK(idem::core::traceparent(*p) == k_parent);
  CHECK(idem::core::traceparent(*unsampled) ==
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  // A later version is read by its first 55 characters, followed by '-' and more.
  CHECK(parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"));
  CHECK(parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
}

TEST_CASE("trace: a traceparent that is not strictly W3C's is none", "[trace]") {
  const char* bad[] = {
      "",
      "00",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 ",  // version 00 is 55 exactly
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",  // upper case
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",  // zero trace id
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  // zero span id
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  // version ff
      "0g-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319-cb7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0x",
      "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",  // more, not after '-'
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",
  };
  for (const char* text : bad) {
    INFO(text);
    CHECK_FALSE(parse_traceparent(text));
  }
}

Span sample_span() {
  Span s;
  s.context = {"0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"};
  s.parent_span_id = "00f067aa0ba902b7";
  s.name = "idem run";
  s.start_ns = 1'700'000'000'123'456'789;
  s.end_ns = 1'700'000'001'000'000'000;
  s.attributes = {{"idem.key", std::string("k\xff")}, {"idem.attempt", int64_t(3)}};
  s.links = {{"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"}};
  s.error = true;
  s.status_message = "exit 3";
  return s;
}

TEST_CASE("trace: spans encode as an OTLP/HTTP JSON export request", "[trace]") {
  idem::core::TraceResource resource;
  resource.service_name = "billing";
  resource.attributes = {{"deployment.environment", "prod"}, {"service.name", "ignored"}};
  const json body = json::parse(idem::core::otlp_json(resource, {sample_span()}));
  const json& rs = body.at("resourceSpans").at(0);
  CHECK(rs.at("resource").at("attributes") ==
        json::parse(R"([{"key":"service.name","value":{"stringValue":"billing"}},
                        {"key":"deployment.environment","value":{"stringValue":"prod"}}])"));
  CHECK(rs.at("scopeSpans").at(0).at("scope").at("name") == "idem");
  const json& s = rs.at("scopeSpans").at(0).at("spans").at(0);
  CHECK(s.at("traceId") == "0af7651916cd43dd8448eb211c80319c");
  CHECK(s.at("spanId") == "b7ad6b7169203331");
  CHECK(s.at("parentSpanId") == "00f067aa0ba902b7");
  CHECK(s.at("name") == "idem run");
  CHECK(s.at("kind") == 1);
  CHECK(s.at("startTimeUnixNano") == "1700000000123456789");  // strings: int64 in JSON
  CHECK(s.at("endTimeUnixNano") == "1700000001000000000");
  CHECK(s.at("attributes").at(0) ==
        json::parse(R"({"key":"idem.key","value":{"stringValue":"k\ufffd"}})"));
  CHECK(s.at("attributes").at(1) ==
        json::parse(R"({"key":"idem.attempt","value":{"intValue":"3"}})"));
  CHECK(s.at("links") == json::parse(R"([{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736",
                                          "spanId":"00f067aa0ba902b7"}])"));
  CHECK(s.at("status") == json::parse(R"({"code":2,"message":"exit 3"})"));
  // A root span without links or error carries none of them.
  Span root = sample_span();
  root.parent_span_id.clear();
  root.links.clear();
  root.error = false;
  const json r = json::parse(
      idem::core::otlp_json(resource, {root}))["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  CHECK_FALSE(r.contains("parentSpanId"));
  CHECK_FALSE(r.contains("links"));
  CHECK_FALSE(r.contains("status"));
}

std::optional<idem::core::TraceSettings> settings_of(std::map<std::string, std::string> env) {
  return idem::core::trace_settings([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST_CASE("trace: the OTEL_* variables configure the export", "[trace]") {
  CHECK_FALSE(settings_of({}));
  CHECK_FALSE(settings_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", ""}}));
  auto s = settings_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"}});
  REQUIRE(s);
  CHECK(s->endpoint == "http://collector:4318/v1/traces");
  CHECK(s->endpoint_variable == "OTEL_EXPORTER_OTLP_ENDPOINT");
  CHECK(s->resource.service_name == "idem");
  CHECK(s->timeout_ms == 10000);
  // The traces endpoint is used as is, and wins.
  s = settings_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                   {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:9999/custom"}});
  CHECK(s->endpoint == "http://b:9999/custom");
  CHECK(s->endpoint_variable == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  s = settings_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                   {"OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%20ecret, x-tenant = t1 ,"},
                   {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Tenant=t2"},
                   {"OTEL_RESOURCE_ATTRIBUTES", "service.name=fromattrs,team=ops%2Cinfra"},
                   {"OTEL_SERVICE_NAME", "billing"},
                   {"OTEL_EXPORTER_OTLP_TIMEOUT", "500"}});
  REQUIRE(s);
  CHECK(s->headers == std::vector<std::pair<std::string, std::string>>{{"api-key", "s ecret"},
                                                                       {"X-Tenant", "t2"}});
  CHECK(s->resource.service_name == "billing");
  CHECK(s->resource.attributes ==
        std::vector<std::pair<std::string, std::string>>{{"team", "ops,infra"}});
  CHECK(s->timeout_ms == 500);
  s = settings_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"},
                   {"OTEL_RESOURCE_ATTRIBUTES", "service.name=fromattrs"}});
  CHECK(s->resource.service_name == "fromattrs");
  // Off however the endpoint is set.
  CHECK_FALSE(
      settings_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"}, {"OTEL_SDK_DISABLED", "TRUE"}}));
  CHECK_FALSE(
      settings_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"}, {"OTEL_TRACES_EXPORTER", "none"}}));
  CHECK(settings_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"}, {"OTEL_SDK_DISABLED", "false"}}));
  // What cannot be read is an error naming its variable.
  const auto refused = [](std::map<std::string, std::string> env, const std::string& variable) {
    env.emplace("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a");
    try {
      settings_of(env);
      FAIL("no error for " << variable);
    } catch (const idem::UsageError& e) {
      CHECK_THAT(e.what(), Catch::StartsWith(variable + ": "));
    }
  };
  refused({{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"}}, "OTEL_EXPORTER_OTLP_HEADERS");
  refused({{"OTEL_EXPORTER_OTLP_HEADERS", "a=%zz"}}, "OTEL_EXPORTER_OTLP_HEADERS");
  refused({{"OTEL_RESOURCE_ATTRIBUTES", "=x"}}, "OTEL_RESOURCE_ATTRIBUTES");
  refused({{"OTEL_EXPORTER_OTLP_TIMEOUT", "2s"}}, "OTEL_EXPORTER_OTLP_TIMEOUT");
  refused({{"OTEL_EXPORTER_OTLP_TIMEOUT", "0"}}, "OTEL_EXPORTER_OTLP_TIMEOUT");
}

// A receiver in memory: every request's span count and deadline; `fail` makes it throw.
struct FakeTransport final : idem::otel::Transport {
  struct Shared {
    std::mutex mutex;
    std::vector<size_t> batches;
    std::vector<int64_t> deadlines;
    bool fail = false;
    std::function<void()> after_post;  // told after every request, whatever its fate
  };
  explicit FakeTransport(std::shared_ptr<Shared> s) : shared(std::move(s)) {}
  std::string post(const std::string& body, int64_t deadline_ms, bool /*await_answer*/) override {
    bool failed = false;
    {
      std::lock_guard lock(shared->mutex);
      shared->deadlines.push_back(deadline_ms);
      failed = shared->fail;
      if (!failed)
        shared->batches.push_back(
            json::parse(body)["resourceSpans"][0]["scopeSpans"][0]["spans"].size());
    }
    if (shared->after_post) shared->after_post();
    return failed ? "connection refused" : "";
  }
  std::string where() const override { return "fake"; }
  std::shared_ptr<Shared> shared;
};

struct ExporterFixture {
  FakeClock clock;
  std::shared_ptr<FakeTransport::Shared> sent = std::make_shared<FakeTransport::Shared>();
  std::vector<std::string> reports;
  std::unique_ptr<Exporter> exporter;
  explicit ExporterFixture(Exporter::Options options) {
    options.report = [this](const std::string& line) { reports.push_back(line); };
    sent->after_post = [this] { clock.advance(0); };  // wakes posts()'s look
    exporter = std::make_unique<Exporter>(std::make_unique<FakeTransport>(sent),
                                          idem::core::TraceResource{}, clock, options);
  }
  // Blocks until the receiver got `n` requests.
  void posts(size_t n) {
    clock.await_waiter_or(INT64_MAX, [&] {
      std::lock_guard lock(sent->mutex);
      return sent->deadlines.size() >= n;
    });
  }
  void failing(bool fail) {
    std::lock_guard lock(sent->mutex);
    sent->fail = fail;
  }
};

TEST_CASE("trace: the exporter's queue is bounded: what it cannot hold is dropped, counted",
          "[trace]") {
  Exporter::Options options;
  options.max_queue = 5;
  options.max_batch = 100;
  options.linger_ms = 1000;
  ExporterFixture f(options);
  for (int i = 0; i < 8; ++i) f.exporter->add(sample_span());  // the thread lingers meanwhile
  CHECK(f.exporter->stats().dropped == 3);
  f.exporter->shutdown(f.clock.monotonic_ms() + 2000);  // sends what waits, at once
  CHECK(f.exporter->stats().exported == 5);
  CHECK(f.sent->batches == std::vector<size_t>{5});
  CHECK(f.sent->deadlines == std::vector<int64_t>{f.clock.monotonic_ms() + 2000});
  f.exporter->add(sample_span());  // after shutdown: dropped
  CHECK(f.exporter->stats().dropped == 4);
}

TEST_CASE("trace: the exporter sends full batches at once and others after the linger", "[trace]") {
  Exporter::Options options;
  options.max_batch = 2;
  options.linger_ms = 1000;
  ExporterFixture f(options);
  f.exporter->add(sample_span());
  f.exporter->add(sample_span());  // a full batch: sent without waiting for the linger
  f.posts(1);
  f.exporter->add(sample_span());
  f.clock.advance(999);  // the third waits out its linger
  {
    std::lock_guard lock(f.sent->mutex);
    CHECK(f.sent->batches == std::vector<size_t>{2});
  }
  f.clock.advance(1);
  f.posts(2);
  f.exporter->shutdown(f.clock.monotonic_ms());
  CHECK(f.sent->batches == std::vector<size_t>{2, 1});
}

TEST_CASE("trace: a failing receiver loses its batches, counted and told once", "[trace]") {
  Exporter::Options options;
  options.linger_ms = 0;
  ExporterFixture f(options);
  f.failing(true);
  f.exporter->add(sample_span());
  f.posts(1);
  f.exporter->add(sample_span());
  f.posts(2);
  f.failing(false);
  f.exporter->add(sample_span());
  f.exporter->shutdown(f.clock.monotonic_ms() + 100);
  const Exporter::Stats s = f.exporter->stats();
  CHECK(s.exported == 1);
  CHECK(s.dropped == 2);
  CHECK(s.failed_requests == 2);
  REQUIRE(f.reports.size() == 2);
  CHECK_THAT(f.reports[0], Catch::Contains("failed (connection refused)"));
  CHECK_THAT(f.reports[1], Catch::Contains("works again"));
}

TEST_CASE("trace: shutdown past its deadline drops what waits instead of sending it", "[trace]") {
  Exporter::Options options;
  options.linger_ms = 1000;
  ExporterFixture f(options);
  f.exporter->add(sample_span());
  f.exporter->shutdown(f.clock.monotonic_ms());  // no time left
  CHECK(f.exporter->stats().dropped == 1);
  CHECK(f.sent->batches.empty());
}

TEST_CASE("trace: without a thread, shutdown sends what waits on its caller's thread", "[trace]") {
  Exporter::Options options;
  options.background = false;
  options.max_batch = 2;
  ExporterFixture f(options);
  for (int i = 0; i < 3; ++i) f.exporter->add(sample_span());
  CHECK(f.sent->batches.empty());  // nothing is sent before shutdown
  f.exporter->shutdown(f.clock.monotonic_ms() + 2000);
  CHECK(f.sent->batches == std::vector<size_t>{2, 1});
  CHECK(f.sent->deadlines == std::vector<int64_t>(2, f.clock.monotonic_ms() + 2000));
  CHECK(f.exporter->stats().exported == 3);
}

// A sink that keeps the spans the engine ended.
struct Collected final : idem::engine::SpanSink {
  void add(Span span) noexcept override { spans.push_back(std::move(span)); }
  std::vector<Span> spans;
};

std::string attribute(const Span& s, const std::string& key) {
  for (const auto& a : s.attributes)
    if (a.key == key)
      return std::holds_alternative<std::string>(a.value)
                 ? std::get<std::string>(a.value)
                 : std::to_string(std::get<int64_t>(a.value));
  return "";
}

TEST_CASE("trace: the engine makes one span per attempt, a replay's linked to it", "[trace]") {
  idem::test::TempDir dir;
  auto store = idem::store::open_sqlite_store(dir.path() + "/s.db");
  FakeClock clock;
  idem::test::FakeRunner runner;
  auto collected = std::make_shared<Collected>();
  idem::engine::Front front = idem::engine::make_front(clock);
  front.owner_gone = [](const idem::core::Owner&) { return false; };
  front.spans = collected;
  idem::engine::Engine engine(*store, front);
  auto request = [] {
    idem::engine::AttemptRequest r(idem::core::Key::of_argument("k"));
    r.claim.fingerprint = "f";
    r.claim.owner = {"host-a", "boot-a", 10, 110};
    r.claim.ttl_ms = 60'000;
    r.traceparent = k_parent;
    return r;
  };
  runner.script.push_back(idem::test::FakeRunner::exited(3, "out"));
  idem::engine::AttemptRequest first = request();
  const idem::engine::Claimed c = engine.claim(first);
  REQUIRE(c.verdict == idem::engine::ClaimVerdict::claimed);
  REQUIRE(c.span);
  CHECK(c.span->context.trace_id == "0af7651916cd43dd8448eb211c80319c");
  CHECK(c.span->parent_span_id == "b7ad6b7169203331");
  idem::engine::CommandEffect effect(runner, idem::proc::RunSpec{});
  clock.advance(250);
  engine.carry_out(c, effect);
  // The command's own spans are children of the attempt's.
  CHECK(idem::test::env_of(runner.calls.at(0), "TRACEPARENT") ==
        idem::core::traceparent(c.span->context));
  REQUIRE(collected->spans.size() == 1);
  const Span run = collected->spans[0];  // a copy: the vector grows
  CHECK(run.context.span_id == c.span->context.span_id);
  CHECK(run.parent_span_id == "b7ad6b7169203331");
  CHECK(run.end_ns - run.start_ns == 250'000'000);  // the injected clock's time
  CHECK(attribute(run, "idem.key") == "k");
  CHECK(attribute(run, "idem.front") == "run");
  CHECK(attribute(run, "idem.attempt") == "1");
  CHECK(attribute(run, "idem.outcome") == "failed");
  CHECK(attribute(run, "process.exit.code") == "3");
  CHECK(run.error);
  // Stored with the record: what a replay links to, in any process.
  CHECK(store->get("k")->span.span_id == c.span->context.span_id);

  idem::engine::AttemptRequest again = request();
  again.traceparent = "bogus";  // ignored: a new trace
  again.claim.policy.replay_failures = true;
  const idem::engine::Claimed r = engine.claim(again);
  CHECK(r.verdict == idem::engine::ClaimVerdict::replay);
  REQUIRE(collected->spans.size() == 2);
  const Span& replay = collected->spans[1];
  CHECK(replay.context.trace_id != run.context.trace_id);
  CHECK(replay.parent_span_id.empty());
  CHECK(attribute(replay, "idem.outcome") == "replayed");
  CHECK(attribute(replay, "process.exit.code") == "3");
  REQUIRE(replay.links.size() == 1);
  CHECK(replay.links[0].trace_id == run.context.trace_id);
  CHECK(replay.links[0].span_id == run.context.span_id);
}

TEST_CASE("trace: without a sink the engine makes no span and stores none", "[trace]") {
  idem::test::TempDir dir;
  auto store = idem::store::open_sqlite_store(dir.path() + "/s.db");
  FakeClock clock;
  idem::test::FakeRunner runner;
  idem::engine::Engine engine(*store, clock, [](const idem::core::Owner&) { return false; });
  idem::engine::AttemptRequest req(idem::core::Key::of_argument("k"));
  req.claim.fingerprint = "f";
  req.claim.owner = {"host-a", "boot-a", 10, 110};
  req.traceparent = k_parent;
  const idem::engine::Claimed c = engine.claim(req);
  CHECK_FALSE(c.span);
  idem::engine::CommandEffect effect(runner, idem::proc::RunSpec{});
  engine.carry_out(c, effect);
  CHECK(idem::test::env_of(runner.calls.at(0), "TRACEPARENT").empty());
  CHECK(store->get("k")->span.span_id.empty());
}

}  // namespace unit_trace
