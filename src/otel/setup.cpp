#include "otel/setup.hpp"

#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "net/message.hpp"
#include "net/socket_io.hpp"
#include "net/upstream.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

namespace idem::otel {

namespace {

// OTLP/HTTP: one POST of the JSON body to the endpoint's path; any 2xx is accepted (a partial
// success still took what it could).
class OtlpHttp final : public Transport {
 public:
  OtlpHttp(const core::TraceSettings& settings, net::UpstreamTarget target,
           std::function<bool(int, int)> hold)
      : url_(settings.endpoint),
        path_(target.prefix.empty() ? "/" : std::exchange(target.prefix, std::string())),
        pool_(std::move(target), 1),
        hold_(std::move(hold)) {
    headers_.emplace_back("Host", pool_.target().authority);
    headers_.emplace_back("Content-Type", "application/json");
    for (const auto& [name, value] : settings.headers)
      if (!net::equals_ignore_case(name, "Host") && !net::equals_ignore_case(name, "Content-Type"))
        headers_.emplace_back(name, value);
  }

  std::string post(const std::string& body, int64_t deadline_ms, bool await_answer) override {
    net::UpstreamRequest request;
    request.method = "POST";
    request.target = path_;
    request.headers = headers_;
    request.body = body;
    try {
      if (!await_answer) {
        request.headers.emplace_back("Connection", "close");  // the receiver keeps nothing for it
        std::string failure;
        const util::Fd connection = pool_.send_unanswered(request, deadline_ms, failure);
        if (connection.valid()) hold_until_answered(connection.get(), deadline_ms);
        return failure;
      }
      auto exchange = pool_.send(request, deadline_ms);
      const int status = exchange->head().status;
      exchange->read_body([](std::string_view) { return true; });  // so the connection is kept
      if (status < 200 || status > 299) return "the receiver answered " + std::to_string(status);
      return {};
    } catch (const std::exception& e) {
      return e.what();
    }
  }

  std::string where() const override { return url_; }

 private:
  // The connection stays open until the receiver answers (or the deadline): held by hold_ when
  // it can, so that this process may exit now, else waited for here.
  void hold_until_answered(int fd, int64_t deadline_ms) const {
    const int64_t left_ms = std::max<int64_t>(0, deadline_ms - util::monotonic_ms());
    if (!hold_ || !hold_(fd, int(left_ms))) net::wait_for(fd, POLLIN, deadline_ms);
  }

  const std::string url_;
  const std::string path_;  // the endpoint's path, "/v1/traces" (the pool adds no prefix)
  net::UpstreamPool pool_;
  const std::function<bool(int fd, int timeout_ms)> hold_;  // Exporter::Options::hold_connection
  std::vector<std::pair<std::string, std::string>> headers_;
};

}  // namespace

std::shared_ptr<Exporter> make_exporter(const core::TraceSettings& settings,
                                        const util::Clock& clock, Exporter::Options options) {
  const std::string& url = settings.endpoint;
  if (url.size() >= 8 && net::equals_ignore_case(url.substr(0, 8), "https://"))
    throw UsageError(settings.endpoint_variable + ": '" + url +
                     "' is https, which idem's exporter does not speak: give an http:// "
                     "endpoint (a collector on this host or a private network)");
  net::UpstreamTarget target = net::parse_upstream_url(settings.endpoint_variable, url);
  options.timeout_ms = std::min(options.timeout_ms, settings.timeout_ms);
  return std::make_shared<Exporter>(
      std::make_unique<OtlpHttp>(settings, std::move(target), options.hold_connection),
      settings.resource, clock, std::move(options));
}

std::shared_ptr<Exporter> exporter_from_environment(const util::Clock& clock,
                                                    Exporter::Options options) {
  const std::optional<core::TraceSettings> settings =
      core::trace_settings([](const char* name) { return std::getenv(name); });
  if (!settings) return nullptr;
  return make_exporter(*settings, clock, std::move(options));
}

}  // namespace idem::otel
