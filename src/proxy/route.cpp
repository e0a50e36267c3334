#include "proxy/route.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "engine/attempt.hpp"
#include "front/store_failure.hpp"
#include "net/message.hpp"
#include "net/upstream.hpp"
#include "proc/liveness.hpp"
#include "util/clock.hpp"

namespace idem::proxy {

namespace {

constexpr const char* k_replayed_header = "Idempotent-Replayed";
constexpr size_t k_max_idle_upstream = 16;
// How many bytes of a streamed answer wait for its client before the forward waits in turn.
constexpr size_t k_max_buffered = 1 << 20;

net::Response labelled(net::Response r, const std::string& outcome, const std::string& key = "",
                       const std::string& error = "") {
  r.log_fields.emplace_back("family", "proxy");
  r.log_fields.emplace_back("outcome", outcome);
  if (!key.empty()) r.log_fields.emplace_back("key", key);
  if (!error.empty()) r.log_fields.emplace_back("error", error);
  return r;
}

// A problem whose cause a retry cannot change (until an operator removes the record): SDKs
// that honour these headers (Stripe's, OpenAI's) give up at once instead of retrying.
net::Response final_problem(int status, const std::string& title, const std::string& detail) {
  net::Response r = proxy_problem(status, title, detail);
  r.headers.emplace_back("Stripe-Should-Retry", "false");
  r.headers.emplace_back("X-Should-Retry", "false");
  return r;
}

net::UpstreamRequest upstream_request(const net::Request& req, const net::UpstreamTarget& target) {
  net::UpstreamRequest up;
  up.method = req.head.method;
  up.target = req.head.target;
  up.headers = forwarded_headers(req.head, req.remote, target);
  up.body = req.body;
  return up;
}

// `request` with `traceparent` in place of any it came with: the upstream's spans are children
// of the attempt's (SPEC §12).
net::UpstreamRequest with_traceparent(const net::UpstreamRequest& request,
                                      const std::string& traceparent) {
  net::UpstreamRequest traced = request;
  std::erase_if(traced.headers,
                [](const auto& h) { return net::equals_ignore_case(h.first, "traceparent"); });
  traced.headers.emplace_back("traceparent", traceparent);
  return traced;
}

std::string failure_outcome(const net::UpstreamError& e) {
  return e.kind() == net::UpstreamError::timeout ? "upstream_timeout" : "upstream_error";
}

// 504 past the deadline, else 502; the reason, which names the upstream, goes to the log only.
net::Response upstream_problem(const net::UpstreamError& e, const ProxySettings& settings) {
  if (e.kind() == net::UpstreamError::timeout)
    return proxy_problem(
        504, "Upstream timed out",
        "the upstream did not answer within " + std::to_string(settings.timeout_ms) + " ms",
        "api_error");
  return proxy_problem(502, "Upstream unavailable",
                       "the upstream could not be reached or broke off its answer", "api_error");
}

// What the worker that answers the client and the job that forwards its request share. The job
// hands over the answer once it is recorded (or the key released); or, for an answer over
// max_response, its head at once and then its body piece by piece as it comes, the end once
// the outcome is recorded. The worker waits for either until the client's deadline; past it,
// it answers 504 and leaves the job to finish alone.
class Handover {
 public:
  // The job's side. The final answer, or the end of a streamed one (`whole`: every byte came).
  // False when `r` reaches no client (it has had its 504, or its answer's head went out).
  bool answer(net::Response r, bool whole) {
    std::lock_guard lock(mutex_);
    const bool taken = state_ == State::forwarding;
    if (state_ == State::forwarding) {
      answer_ = std::move(r);
      state_ = State::answered;
    } else if (state_ == State::streaming) {
      whole_ = whole;
      state_ = State::ended;
    }
    changed_.notify_all();
    return taken;
  }
  // The head of an answer that goes out as it comes; false when the client is no longer waited
  // for.
  bool open_stream(net::Response head) {
    std::lock_guard lock(mutex_);
    if (state_ != State::forwarding) return false;
    answer_ = std::move(head);
    state_ = State::streaming;
    changed_.notify_all();
    return true;
  }
  // False when the client no longer reads (gone, or too slow to take the answer by `deadline`).
  bool put_piece(std::string_view piece, int64_t deadline_ms) {
    std::unique_lock lock(mutex_);
    while (state_ == State::streaming && buffered_ > k_max_buffered)
      if (!wait(lock, deadline_ms)) state_ = State::left;
    if (state_ != State::streaming) return false;
    pieces_.emplace_back(piece);
    buffered_ += piece.size();
    changed_.notify_all();
    return true;
  }

  // The worker's side: the answer to send by `deadline_ms`, or nothing (the client gets a 504).
  std::optional<net::Response> take(int64_t deadline_ms, const std::shared_ptr<Handover>& self) {
    std::unique_lock lock(mutex_);
    while (state_ == State::forwarding)
      if (!wait(lock, deadline_ms)) state_ = State::left;
    if (state_ == State::left) return std::nullopt;
    net::Response r = std::move(answer_);
    if (state_ == State::answered) return r;
    r.stream = [self, deadline_ms](const std::function<bool(std::string_view)>& write) {
      return self->relay(write, deadline_ms);
    };
    return r;
  }

 private:
  enum class State { forwarding, answered, streaming, ended, left };

  // False once the deadline has passed.
  bool wait(std::unique_lock<std::mutex>& lock, int64_t deadline_ms) {
    const int64_t left = deadline_ms - util::monotonic_ms();
    if (left <= 0) return false;
    changed_.wait_for(lock, std::chrono::milliseconds(left));
    return true;
  }

  // Writes the pieces as they come, until the end (true when every byte came).
  bool relay(const std::function<bool(std::string_view)>& write, int64_t deadline_ms) {
    std::unique_lock lock(mutex_);
    for (;;) {
      while (pieces_.empty() && state_ == State::streaming)
        if (!wait(lock, deadline_ms)) state_ = State::left;
      if (pieces_.empty()) return state_ == State::ended && whole_;
      std::deque<std::string> ready;
      ready.swap(pieces_);
      buffered_ = 0;
      changed_.notify_all();
      lock.unlock();
      bool written = true;
      for (const std::string& piece : ready)
        if (!(written = write(piece))) break;
      lock.lock();
      if (!written) {
        state_ = State::left;
        pieces_.clear();
        changed_.notify_all();
        return false;
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  State state_ = State::forwarding;
  net::Response answer_;
  std::deque<std::string> pieces_;
  size_t buffered_ = 0;
  bool whole_ = false;
};

// The effect of a keyed request: forward it once and keep the answer. An answer the policy does
// not store (store_statuses) and a request that provably never left are given up (the key is
// released), so the client's retry goes through.
//
// Once any byte of the request went out, the upstream may act on it, so a retry must never send
// it again: the attempt is kept running while the answer is awaited (up to timeout plus
// late_answer; duplicates get 409 with Retry-After meanwhile), and an exchange that ends without
// an answer (cut off, or no answer by then) is recorded as a failure that is final (the claim
// replays failures): the outcome is unknown for good. Duplicates then get a 409 saying so. A
// release would let the retry run the request twice; an answer made up by the proxy would claim
// a result nobody saw. Only someone who can look at the upstream's side knows what happened, so
// an operator clears the record (`idem rm`) to let the key run again; it never expires
// (Outcome::kept_until_removed), or the TTL would let a retry send it again.
class ForwardEffect final : public engine::Effect {
 public:
  ForwardEffect(net::UpstreamPool& pool, const net::UpstreamRequest& request,
                const ProxySettings& settings, int64_t max_response, int64_t start_ms,
                Handover& handover)
      : pool_(pool),
        request_(request),
        settings_(settings),
        max_response_(max_response),
        start_ms_(start_ms),
        handover_(handover) {}

  core::Outcome perform(const engine::Attempt& attempt) override {
    core::Outcome o;
    const int64_t client_deadline = start_ms_ + settings_.timeout_ms;
    try {
      const std::optional<net::UpstreamRequest> traced =
          attempt.traceparent.empty()
              ? std::nullopt
              : std::optional(with_traceparent(request_, attempt.traceparent));
      // A connection is made by the client's deadline; the answer is awaited late_answer more.
      auto exchange = pool_.send(traced ? *traced : request_,
                                 client_deadline + settings_.late_answer_ms, client_deadline);
      const net::UpstreamHead& head = exchange->head();
      std::string body;
      int64_t total = 0;
      bool over = false;
      exchange->read_body([&](std::string_view piece) {
        total += int64_t(piece.size());
        if (!over && total <= max_response_) {
          body.append(piece);
          return true;
        }
        if (!over) {  // too large to keep: its client gets it as it comes
          over = true;
          streaming_ = handover_.open_stream(proxy::answer_head(head)) &&
                       handover_.put_piece(body, client_deadline);
          body = std::string();
        }
        if (streaming_) streaming_ = handover_.put_piece(piece, client_deadline);
        return true;  // read to the end even past the cap: the connection is then reused
      });
      answer_ = proxy::answer_head(head);
      release_ = !stores_status(head.status, settings_);
      o.status = core::Status::succeeded;
      o.exit_code = 0;
      o.response = stored_response(head);
      o.note = "the upstream answered " + std::to_string(head.status);
      core::CapturedOutput kept;
      if (over) {
        outcome_ = release_ ? "released" : "answer_too_large";
        o.output_truncated = true;  // nothing kept: the record is too large to replay
        o.note += " with a body of " + std::to_string(total) + " bytes, over max_response (" +
                  std::to_string(max_response_) + "): not stored, not replayed";
      } else {
        outcome_ = release_ ? "released" : "forwarded";
        kept.append(core::Stream::out, body);
        answer_.body = std::move(body);
      }
      o.output_bytes = kept.stored_bytes();
      o.output = kept.take_encoded();
    } catch (const net::UpstreamError& e) {
      error_ = e.what();
      o.note = std::string("upstream: ") + e.what();
      answer_ = upstream_problem(e, settings_);
      if (!e.sent()) {
        release_ = true;
        outcome_ = failure_outcome(e);
      } else {
        unknown_ = true;
        outcome_ = "outcome_unknown";
        o.status = core::Status::failed;
        o.kept_until_removed = true;  // past the TTL a retry would send it again
        o.note = "outcome unknown: the request was sent, then " + o.note;
        if (e.kind() != net::UpstreamError::timeout)
          answer_ =
              proxy::proxy_problem(502, "Upstream broke off",
                                   "the upstream broke off the exchange after the request was "
                                   "sent: whether it acted on it is unknown, so it is not sent "
                                   "again for this Idempotency-Key",
                                   "api_error");
      }
    }
    return o;
  }
  std::string performed() const override {
    return error_.empty() ? "the request was forwarded (the upstream answered " +
                                std::to_string(answer_.status) + ")"
                          : "the request was forwarded (" + error_ + ")";
  }
  bool release_instead(const core::Outcome&) const override { return release_; }

  net::Response& answer() { return answer_; }
  const std::string& outcome() const { return outcome_; }
  const std::string& error() const { return error_; }
  bool streamed_whole() const { return streaming_ && !unknown_; }

 private:
  net::UpstreamPool& pool_;
  const net::UpstreamRequest& request_;
  const ProxySettings& settings_;
  const int64_t max_response_;
  const int64_t start_ms_;
  Handover& handover_;
  net::Response answer_;
  bool release_ = false;
  bool unknown_ = false;
  bool streaming_ = false;
  std::string outcome_;
  std::string error_;
};

net::Response proxy_store_failure(const std::exception& e, const std::string& key) {
  front::StoreFailureAnswer s = front::store_failure_answer(e);
  net::Response r = proxy::proxy_problem(s.status, s.title, s.detail, "api_error");
  for (auto& [name, value] : s.headers) r.headers.emplace_back(std::move(name), std::move(value));
  return labelled(std::move(r), "store_error", key, e.what());
}

// One keyed request's forward, on a thread of its own: it outlives its client's wait when the
// upstream is slow, and the route when a reload drops it.
struct Forward {
  std::shared_ptr<net::UpstreamPool> pool;
  std::shared_ptr<store::StoreProvider> stores;
  engine::Front front;
  ProxySettings settings;
  int64_t max_response = 0;
  std::string body;  // the request's; `request.body` views it
  net::UpstreamRequest request;
  engine::Claimed claimed;
  std::string key;  // as the client gave it, for the log
  int64_t start_ms = 0;
  std::shared_ptr<Handover> handover = std::make_shared<Handover>();
  std::shared_ptr<void> slot;  // among max_forwards, given back when the forward is over

  void run() {
    store::PerCallStore store(stores);
    engine::Engine engine(store, front);
    ForwardEffect effect(*pool, request, settings, max_response, start_ms, *handover);
    net::Response answer;
    std::string failure;
    try {
      engine.carry_out(claimed, effect);
      answer = labelled(std::move(effect.answer()), effect.outcome(), key, effect.error());
    } catch (const std::exception& e) {
      // Neither recorded nor released: the outcome is kept as unknown (a failure the claim
      // made final) when the store takes it.
      core::Outcome failed;
      failed.note = std::string("daemon error: ") + e.what();
      failed.kept_until_removed = true;
      const bool recorded = engine.record_failure(claimed, std::move(failed));
      failure = "Idempotency-Key '" + core::display_key(key) + "': " + e.what() +
                (recorded ? "" : "; the failure could not be recorded either");
      answer = effect.outcome().empty()
                   ? proxy_store_failure(e, key)
                   : labelled(std::move(effect.answer()), effect.outcome(), key, e.what());
    }
    // The forward is over: its slot is free before its client is answered, so a request that
    // client's connection let in next never finds it taken.
    slot.reset();
    // A failure whose answer reaches no client (a late answer) goes to the daemon's log through
    // its background runner (ProxyServices::spawn); one a client takes is in its request's line.
    if (!handover->answer(std::move(answer), effect.streamed_whole()) && !failure.empty())
      throw std::runtime_error(failure);
  }
};

// A duplicate's answer from the record: the stored status and headers in order, the body its
// stdout, byte for byte; or, for an outcome that cannot be replayed, a 409 that says why.
net::Response replayed(const core::Record& record, const std::string& key) {
  const std::string shown = "Idempotency-Key '" + core::display_key(key) + "'";
  const std::string clear = "once it is known, remove the record (idem rm '" +
                            core::display_key(record.key) + "') to let the key be used again";
  if (record.status != core::Status::succeeded)
    return labelled(final_problem(409, "Outcome unknown",
                                  "the request of " + shown +
                                      " was sent to the upstream, which gave no answer: whether "
                                      "it acted on it is unknown, so it is not sent again; " +
                                      clear),
                    "refused_unknown", key);
  if (record.output_truncated)
    return labelled(final_problem(409, "Answer too large to replay",
                                  "the upstream's answer to the request of " + shown +
                                      " was over the proxy's max_response, so it was not "
                                      "stored; the request is not sent again"),
                    "refused_too_large", key);
  net::Response r;
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
  return labelled(std::move(r), "replayed", key);
}

net::Response key_refusal(const KeyReading& k) {
  if (k.kind == KeyReading::missing)
    return labelled(proxy::proxy_problem(400, "Idempotency-Key is missing",
                                         "this request needs an Idempotency-Key header"),
                    "missing_key");
  return labelled(proxy::proxy_problem(400, "Idempotency-Key is malformed", k.reason), "bad_key");
}

// The answer to a keyed request that is not forwarded now.
net::Response not_forwarded(const engine::Claimed& claimed, const std::string& key) {
  const std::string shown = "Idempotency-Key '" + core::display_key(key) + "'";
  switch (claimed.verdict) {
    case engine::ClaimVerdict::replay:
      return replayed(*claimed.existing, key);
    case engine::ClaimVerdict::conflict:
      return labelled(proxy_problem(422, "Idempotency-Key is already used",
                                    shown + " was used with another request (method, path, "
                                            "query or body)"),
                      "conflict", key);
    case engine::ClaimVerdict::running: {
      net::Response r = proxy_problem(409, "A request is outstanding for this Idempotency-Key",
                                      shown + " is being forwarded now; retry later");
      r.headers.emplace_back("Retry-After", "1");
      return labelled(std::move(r), "in_flight", key);
    }
    default:
      return labelled(
          final_problem(409, "Earlier request abandoned",
                        "the daemon stopped while forwarding the request of " + shown +
                            "; whether the upstream acted on it is unknown; once it "
                            "is known, remove the record (idem rm '" +
                            core::display_key(claimed.key) + "') to let the key be used again"),
          "abandoned", key);
  }
}

class ProxyRoute final : public front::Route {
 public:
  ProxyRoute(const ProxyConfig& config, ProxyServices services)
      : config_(config),
        services_(std::move(services)),
        pool_(std::make_shared<net::UpstreamPool>(config.target, k_max_idle_upstream)) {}

  bool matches(std::string_view) const override { return true; }

  net::Admission admit(const net::RequestHead& head) const override {
    if (!allows(config_.allow, head.remote))
      return net::Admission{
          labelled(
              proxy::proxy_problem(403, "Forbidden", "the proxy does not serve " + head.remote),
              "forbidden"),
          0};
    // Absolute-form ("POST http://host/x") is for forward proxies; "OPTIONS *" asks the server
    // itself. Neither names a path of the upstream.
    if (!head.target.starts_with('/'))
      return net::Admission{
          labelled(proxy::proxy_problem(400, "Bad request target",
                                        "the proxy forwards requests for a path ('/v1/x?y=1'), "
                                        "not for '" +
                                            net::syntax::excerpt(head.target) + "'",
                                        "invalid_request_error"),
                   "bad_request"),
          0};
    const ProxySettings& s = config_.settings_for(head.path);
    if (!head.chunked && head.content_length > uint64_t(s.max_body))
      return net::Admission{too_large(head.content_length, s), 0};
    if (s.keyed(head.method)) {
      KeyReading k = read_idempotency_key(head.headers);
      if (k.kind != KeyReading::ok) return net::Admission{key_refusal(k), 0};
    }
    return net::Admission{std::nullopt, uint64_t(s.max_body)};
  }

  net::Response handle(net::Request& req) const override {
    const ProxySettings& s = config_.settings_for(req.head.path);
    if (int64_t(req.body.size()) > s.max_body) return too_large(req.body.size(), s);
    if (!s.keyed(req.head.method)) return pass_through(req, s);
    KeyReading k = read_idempotency_key(req.head.headers);
    if (k.kind != KeyReading::ok) return key_refusal(k);
    return keyed(req, s, *k.usable);
  }

  // SDKs of Stripe-style APIs read an answer without the `error` member as a success, so every
  // answer the proxy's clients get carries it, the transport's refusals too.
  net::Response refused(const front::Refusal& refusal) const override {
    net::Response r = proxy_problem(refusal.status, refusal.title, refusal.detail,
                                    refusal.status == 500 ? "api_error" : "invalid_request_error");
    r.log_fields = {{"family", "proxy"}, {"outcome", refusal.outcome}};
    if (!refusal.error.empty()) r.log_fields.emplace_back("error", refusal.error);
    return r;
  }

 private:
  net::Response too_large(uint64_t size, const ProxySettings& s) const {
    return labelled(proxy::proxy_problem(413, "Body too large",
                                         "the body is " + std::to_string(size) +
                                             " bytes; the proxy accepts at most " +
                                             std::to_string(s.max_body) + " here",
                                         "invalid_request_error"),
                    "too_large");
  }

  int64_t max_forwards() const {
    return config_.max_forwards > 0 ? config_.max_forwards : services_.max_connections;
  }

  // A slot among the proxy's max_forwards, or null when all are taken.
  std::shared_ptr<void> forward_slot() const {
    std::shared_ptr<std::atomic<int64_t>> count = services_.forwards;
    if (count->fetch_add(1) >= max_forwards()) {
      count->fetch_sub(1);
      return nullptr;
    }
    return std::shared_ptr<void>(count.get(), [count](void*) { count->fetch_sub(1); });
  }

  // Releases a claim whose request was never sent; returns `why` for the log, with the release's
  // own failure when there is one.
  std::string release(const std::string& name, const engine::Claimed& claimed,
                      std::string why) const {
    try {
      store::PerCallStore(services_.stores).release(name, claimed.attempt_token);
    } catch (const std::exception& e) {
      why += std::string("; the key could not be released: ") + e.what();
    }
    return why;
  }

  // Nothing was sent and the key is free: the client retries later.
  static net::Response busy(const std::string& key, const std::string& why) {
    net::Response r = proxy::proxy_problem(
        503, "Proxy busy", "the proxy cannot forward more requests now; retry later", "api_error");
    r.headers.emplace_back("Retry-After", "1");
    return labelled(std::move(r), "busy", key, why);
  }

  // An attempt at `key` in the request's scope: its record is stored_key's name.
  engine::AttemptRequest attempt_request(const net::Request& req, const ProxySettings& s,
                                         const core::Key& key, const std::string& scope) const {
    engine::AttemptRequest ar(key, stored_scope(scope));
    ar.claim.fingerprint = request_fingerprint(req.head, req.body);
    ar.claim.kind = "proxy";
    ar.claim.owner = services_.owner;
    ar.claim.ttl_ms = s.ttl_ms;
    // Built only by a claim that writes it; `req` outlives the claim (keyed's own argument).
    ar.describe_request = [&req] { return proxy_stored_request(req.head, req.body); };
    // The only failures the proxy records are unknown outcomes: final, never run again.
    ar.claim.policy.replay_failures = true;
    // One traceparent or none: W3C makes a repeated one invalid, as a new trace.
    if (req.head.headers.count("traceparent") == 1)
      ar.traceparent = *req.head.headers.get("traceparent");
    return ar;
  }

  // Claims the scoped key; forwards once (Forward), or answers from the record.
  net::Response keyed(net::Request& req, const ProxySettings& s, const core::Key& usable) const {
    const int64_t start_ms = util::monotonic_ms();
    const std::string& key = usable.str();
    const std::string scope = key_scope(req.head.headers, config_.scope_header);
    const std::string name = stored_key(scope, key);
    auto forward = std::make_shared<Forward>();
    try {
      store::PerCallStore store(services_.stores);
      engine::Engine engine(store, services_.front);
      engine::AttemptRequest ar = attempt_request(req, s, usable, scope);
      forward->claimed = engine.claim(ar);
    } catch (const std::exception& e) {
      return proxy_store_failure(e, key);
    }
    if (forward->claimed.verdict != engine::ClaimVerdict::claimed)
      return not_forwarded(forward->claimed, key);
    // Only a request that would go out takes one of max_forwards: duplicates are answered from
    // the store however busy the upstream is. None free: nothing is sent, the key is released.
    forward->slot = forward_slot();
    if (!forward->slot)
      return busy(key, release(name, forward->claimed,
                               "max_forwards (" + std::to_string(max_forwards()) +
                                   ") forwards are under way"));
    // The claim is durable. The forward goes on after its client has gone (nothing watches the
    // client's connection) or given up (504), so its answer is stored for the client's retry.
    forward->pool = pool_;
    forward->stores = services_.stores;
    forward->front = services_.front;
    forward->settings = s;
    forward->max_response = config_.max_response;
    forward->request = upstream_request(req, pool_->target());
    forward->body = std::move(req.body);
    forward->request.body = forward->body;
    forward->key = key;
    forward->start_ms = start_ms;
    const std::shared_ptr<Handover> handover = forward->handover;
    try {
      services_.spawn([forward] { forward->run(); });
    } catch (const std::exception& e) {
      // No thread for it: nothing was sent, so the key is released.
      return busy(key, release(name, forward->claimed, e.what()));
    }
    if (auto answer = handover->take(start_ms + s.timeout_ms, handover)) return std::move(*answer);
    const std::string waited =
        "the upstream did not answer within " + std::to_string(s.timeout_ms) + " ms; ";
    net::Response r = proxy_problem(
        504, "Upstream timed out",
        s.late_answer_ms > 0 ? waited +
                                   "its answer is still awaited and will be stored: a retry with "
                                   "this Idempotency-Key gets 409 until then, and that answer after"
                             : waited +
                                   "whether it acted on the request is unknown, so it is not "
                                   "sent again for this Idempotency-Key",
        "api_error");
    return labelled(std::move(r), "upstream_timeout", key);
  }

  // Other methods: forwarded as they came, the answer streamed to the client piece by piece as
  // it arrives (nothing of it is kept), never stored.
  net::Response pass_through(const net::Request& req, const ProxySettings& s) const {
    std::shared_ptr<net::UpstreamExchange> exchange;
    try {
      exchange =
          pool_->send(upstream_request(req, pool_->target()), util::monotonic_ms() + s.timeout_ms);
      if (req.head.method == "HEAD")  // no body follows: the connection goes back to the pool
        exchange->read_body([](std::string_view) { return true; });
    } catch (const net::UpstreamError& e) {
      return labelled(upstream_problem(e, s), failure_outcome(e), "", e.what());
    }
    net::Response r = answer_head(exchange->head());
    // The stream runs after handle() has returned, maybe after a reload dropped this route: it
    // keeps the pool its exchange's connection goes back to, and gives the exchange up first.
    struct Held {
      std::shared_ptr<net::UpstreamPool> pool;
      std::shared_ptr<net::UpstreamExchange> exchange;  // destroyed before the pool
    };
    auto held = std::make_shared<Held>(Held{pool_, std::move(exchange)});
    r.stream = [held](const std::function<bool(std::string_view)>& write) {
      bool client_there = true;
      try {
        held->exchange->read_body(
            [&](std::string_view piece) { return client_there = write(piece); });
      } catch (const net::UpstreamError&) {
        return false;  // cut off: the client sees the answer end early
      }
      return client_there;
    };
    return labelled(std::move(r), "passed_through");
  }

  const ProxyConfig config_;
  const ProxyServices services_;
  const std::shared_ptr<net::UpstreamPool> pool_;
};

}  // namespace

std::shared_ptr<const front::Route> make_proxy_route(const ProxyConfig& config,
                                                     ProxyServices services) {
  return std::make_shared<ProxyRoute>(config, std::move(services));
}

}  // namespace idem::proxy
