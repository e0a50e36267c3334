#include "http/proxy_route.hpp"

#include <functional>
#include <string>
#include <utility>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "engine/attempt.hpp"
#include "http/upstream.hpp"
#include "proc/liveness.hpp"
#include "util/clock.hpp"

namespace idem::http {

namespace {

constexpr const char* k_truncated_header = "Idem-Output-Truncated";
constexpr const char* k_replayed_header = "Idempotent-Replayed";
constexpr size_t k_max_idle_upstream = 16;

const std::string k_not_a_hook;

Response labelled(Response r, const std::string& outcome, const std::string& key = "",
                  const std::string& error = "") {
  r.log_fields.emplace_back("family", "proxy");
  r.log_fields.emplace_back("outcome", outcome);
  if (!key.empty()) r.log_fields.emplace_back("key", key);
  if (!error.empty()) r.log_fields.emplace_back("error", error);
  return r;
}

UpstreamRequest upstream_request(const Request& req, const UpstreamTarget& target) {
  UpstreamRequest up;
  up.method = req.head.method;
  up.target = req.head.target;
  up.headers = forwarded_headers(req.head, req.remote, target);
  up.body = req.body;
  return up;
}

std::string failure_outcome(const UpstreamError& e) {
  return e.kind() == UpstreamError::timeout ? "upstream_timeout" : "upstream_error";
}

// 504 past the deadline, else 502; the reason, which names the upstream, goes to the log only.
Response upstream_problem(const UpstreamError& e, const ProxySettings& settings) {
  if (e.kind() == UpstreamError::timeout)
    return proxy_problem(504, "Upstream timed out",
                         "the upstream did not answer within " +
                             std::to_string(settings.timeout_ms) + " ms",
                         "api_error");
  return proxy_problem(502, "Upstream unavailable",
                       "the upstream could not be reached or broke off its answer", "api_error");
}

// The effect of a keyed request: forward it once and keep the answer. An answer the policy does
// not store (5xx without store_server_errors) and an upstream failure are given up (the key is
// released), so the client's retry goes through.
class ForwardEffect final : public engine::Effect {
 public:
  ForwardEffect(UpstreamPool& pool, const Request& req, const ProxySettings& settings,
                int64_t max_response)
      : pool_(pool), req_(req), settings_(settings), max_response_(max_response) {}

  core::Outcome perform(const engine::Attempt&) override {
    core::Outcome o;
    try {
      // The deadline bounds the whole exchange, body included.
      auto exchange = pool_.send(upstream_request(req_, pool_.target()),
                                 util::monotonic_ms() + settings_.timeout_ms);
      core::CapturedOutput body(max_response_);
      exchange->read_body([&](std::string_view piece) {
        body.append(core::Stream::out, piece);
        return true;  // read to the end even past the cap: the connection is then reused
      });
      const UpstreamHead& head = exchange->head();
      answer_ = answer_head(head);
      answer_.body = body.stream_bytes(core::Stream::out);
      if (body.truncated()) answer_.headers.emplace_back(k_truncated_header, "true");
      release_ = !stores_status(head.status, settings_);
      outcome_ = release_ ? "released" : "forwarded";
      o.status = core::Status::succeeded;
      o.exit_code = 0;
      o.output_truncated = body.truncated();
      o.output_bytes = body.stored_bytes();
      o.output = body.take_encoded();
      o.response = stored_response(head);
      o.note = "the upstream answered " + std::to_string(head.status);
    } catch (const UpstreamError& e) {
      release_ = true;
      answer_ = upstream_problem(e, settings_);
      outcome_ = failure_outcome(e);
      error_ = e.what();
      o.note = std::string("upstream: ") + e.what();
    }
    return o;
  }
  std::string performed() const override {
    return error_.empty() ? "the request was forwarded (the upstream answered " +
                                std::to_string(answer_.status) + ")"
                          : "the request was forwarded (" + error_ + ")";
  }
  bool release_instead(const core::Outcome&) const override { return release_; }

  Response& answer() { return answer_; }
  const std::string& outcome() const { return outcome_; }
  const std::string& error() const { return error_; }

 private:
  UpstreamPool& pool_;
  const Request& req_;
  const ProxySettings& settings_;
  const int64_t max_response_;
  Response answer_;
  bool release_ = false;
  std::string outcome_;
  std::string error_;
};

// A duplicate's answer from the record: the stored status and headers in order, the body its
// stdout, byte for byte.
Response replayed(const core::Record& record) {
  Response r;
  const core::Response stored = record.response.value_or(core::Response{});
  r.status = stored.status;
  for (const auto& [name, value] : stored.headers) {
    if (r.content_type.empty() && core::same_header_name(name, "Content-Type"))
      r.content_type = value;
    else
      r.headers.emplace_back(name, value);
  }
  auto out = core::CapturedOutput::decode(record.output);
  r.body = out ? out->stream_bytes(core::Stream::out) : std::string();
  r.headers.emplace_back(k_replayed_header, "true");
  if (record.output_truncated) r.headers.emplace_back(k_truncated_header, "true");
  return r;
}

Response key_refusal(const KeyReading& k) {
  if (k.kind == KeyReading::missing)
    return labelled(proxy_problem(400, "Idempotency-Key is missing",
                                  "this request needs an Idempotency-Key header"),
                    "missing_key");
  return labelled(proxy_problem(400, "Idempotency-Key is malformed", k.reason), "bad_key");
}

// The answer to a keyed request that is not forwarded now.
Response not_forwarded(const engine::Claimed& claimed, const std::string& key) {
  const std::string shown = "Idempotency-Key '" + core::display_key(key) + "'";
  switch (claimed.verdict) {
    case engine::Verdict::replay:
      return labelled(replayed(*claimed.existing), "replayed", key);
    case engine::Verdict::conflict:
      return labelled(proxy_problem(422, "Idempotency-Key is already used",
                                    shown + " was used with another request (method, path, "
                                            "query or body)"),
                      "conflict", key);
    case engine::Verdict::running: {
      Response r = proxy_problem(409, "A request is outstanding for this Idempotency-Key",
                                 shown + " is being forwarded now; retry later");
      r.headers.emplace_back("Retry-After", "1");
      return labelled(std::move(r), "in_flight", key);
    }
    default:
      return labelled(proxy_problem(409, "Earlier request abandoned",
                                    "the daemon stopped while forwarding the request of " + shown +
                                        "; whether the upstream acted on it is unknown"),
                      "abandoned", key);
  }
}

Response store_failure(const std::exception& e, const std::string& key) {
  const auto* store_error = dynamic_cast<const StoreError*>(&e);
  const bool lasting = store_error != nullptr && !store_error->transient();
  Response r = lasting ? proxy_problem(500, "Store unusable",
                                       "the store cannot be used; the log says why", "api_error")
                       : proxy_problem(503, "Store unavailable",
                                       "the store cannot be used now; retry later", "api_error");
  if (!lasting) r.headers.emplace_back("Retry-After", "5");
  return labelled(std::move(r), "store_error", key, e.what());
}

class ProxyRoute final : public Route {
 public:
  ProxyRoute(const ProxyConfig& config, ProxyServices services)
      : config_(config),
        services_(std::move(services)),
        pool_(std::make_shared<UpstreamPool>(config.target, k_max_idle_upstream)) {}

  bool matches(std::string_view) const override { return true; }

  Admission admit(const RequestHead& head) const override {
    if (!allows(config_.allow, head.remote))
      return Admission{
          labelled(proxy_problem(403, "Forbidden", "the proxy does not serve " + head.remote),
                   "forbidden"),
          0};
    const ProxySettings& s = config_.settings_for(head.path);
    if (!head.chunked && head.content_length > uint64_t(s.max_body))
      return Admission{too_large(head.content_length, s), 0};
    if (s.keyed(head.method)) {
      KeyReading k = read_idempotency_key(head.headers);
      if (k.kind != KeyReading::ok) return Admission{key_refusal(k), 0};
    }
    return Admission{std::nullopt, uint64_t(s.max_body)};
  }

  Response handle(Request& req) const override {
    const ProxySettings& s = config_.settings_for(req.head.path);
    if (int64_t(req.body.size()) > s.max_body) return too_large(req.body.size(), s);
    if (!s.keyed(req.head.method)) return pass_through(req, s);
    KeyReading k = read_idempotency_key(req.head.headers);
    if (k.kind != KeyReading::ok) return key_refusal(k);
    return keyed(req, s, k.key);
  }

  const std::string& hook() const override { return k_not_a_hook; }

 private:
  Response too_large(uint64_t size, const ProxySettings& s) const {
    return labelled(proxy_problem(413, "Body too large",
                                  "the body is " + std::to_string(size) +
                                      " bytes; the proxy accepts at most " +
                                      std::to_string(s.max_body) + " here",
                                  "invalid_request_error"),
                    "too_large");
  }

  engine::AttemptRequest attempt_request(const Request& req, const ProxySettings& s,
                                         const std::string& name) const {
    engine::AttemptRequest ar;
    ar.claim.key = name;
    ar.claim.fingerprint = request_fingerprint(req.head, req.body);
    ar.claim.kind = "proxy";
    ar.claim.owner = services_.owner;
    ar.claim.ttl_ms = s.ttl_ms;
    ar.claim.request = proxy_stored_request(req.head, req.body);
    ar.claim.lease_ms = services_.lease_ms;
    return ar;
  }

  // Claims the scoped key; forwards once, or answers from the record.
  Response keyed(Request& req, const ProxySettings& s, const std::string& key) const {
    const std::string name = stored_key(key_scope(req.head.headers, config_.scope_header), key);
    try {
      auto store = services_.stores->lease();
      engine::Engine engine(*store, util::process_clock(), proc::owner_gone);
      engine::AttemptRequest ar = attempt_request(req, s, name);
      const engine::Claimed claimed = engine.claim(ar);
      if (claimed.verdict != engine::Verdict::claimed) return not_forwarded(claimed, key);
      return forward_once(req, s, claimed, engine, key);
    } catch (const std::exception& e) {
      return store_failure(e, key);
    }
  }

  // The claim is durable. The forward runs to its end on this worker even when the client has
  // gone meanwhile (nothing here watches the client's connection), so its answer is stored for
  // the client's retry.
  Response forward_once(const Request& req, const ProxySettings& s, const engine::Claimed& claimed,
                        engine::Engine& engine, const std::string& key) const {
    ForwardEffect effect(*pool_, req, s, config_.max_response);
    try {
      engine.carry_out(claimed, effect);
    } catch (const std::exception& e) {
      // Neither recorded nor released: a failed record lets the client's retry go through.
      core::Outcome failed;
      failed.note = std::string("daemon error: ") + e.what();
      engine.record_failure(claimed, std::move(failed));
      if (effect.outcome().empty()) return store_failure(e, key);
      return labelled(std::move(effect.answer()), effect.outcome(), key, e.what());
    }
    return labelled(std::move(effect.answer()), effect.outcome(), key, effect.error());
  }

  // Other methods: forwarded as they came, the answer streamed to the client piece by piece as
  // it arrives (nothing of it is kept), never stored.
  Response pass_through(const Request& req, const ProxySettings& s) const {
    std::shared_ptr<UpstreamExchange> exchange;
    try {
      exchange =
          pool_->send(upstream_request(req, pool_->target()), util::monotonic_ms() + s.timeout_ms);
      if (req.head.method == "HEAD")  // no body follows: the connection goes back to the pool
        exchange->read_body([](std::string_view) { return true; });
    } catch (const UpstreamError& e) {
      return labelled(upstream_problem(e, s), failure_outcome(e), "", e.what());
    }
    Response r = answer_head(exchange->head());
    // The stream runs after handle() has returned, maybe after a reload dropped this route: it
    // keeps the pool its exchange's connection goes back to, and gives the exchange up first.
    struct Held {
      std::shared_ptr<UpstreamPool> pool;
      std::shared_ptr<UpstreamExchange> exchange;  // destroyed before the pool
    };
    auto held = std::make_shared<Held>(Held{pool_, std::move(exchange)});
    r.stream = [held](const std::function<bool(std::string_view)>& write) {
      bool client_there = true;
      try {
        held->exchange->read_body(
            [&](std::string_view piece) { return client_there = write(piece); });
      } catch (const UpstreamError&) {
        return false;  // cut off: the client sees the answer end early
      }
      return client_there;
    };
    return labelled(std::move(r), "passed_through");
  }

  const ProxyConfig config_;
  const ProxyServices services_;
  const std::shared_ptr<UpstreamPool> pool_;
};

}  // namespace

std::shared_ptr<const Route> make_proxy_route(const ProxyConfig& config, ProxyServices services) {
  return std::make_shared<ProxyRoute>(config, std::move(services));
}

}  // namespace idem::http
