#include "hooks/route.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "net/ip_range.hpp"

namespace idem::hooks {

namespace {

// One configured hook: its methods and body limit, then deliver() (contract §6's table).
class HookRoute final : public front::Route {
 public:
  HookRoute(Hook hook, std::shared_ptr<HookSlots> slots, RouteServices services)
      : hook_(std::move(hook)), slots_(std::move(slots)), services_(std::move(services)) {}

  bool matches(std::string_view path) const override { return path == hook_.path; }

  net::Admission admit(const net::RequestHead& head) const override {
    if (!allows(hook_.allow, head.remote)) {
      front::Answer a =
          front::problem(403, "Forbidden", "hook " + hook_.path + " does not serve " + head.remote);
      a.outcome = "forbidden";
      return net::Admission{front::to_response(a, hook_.path), 0};
    }
    const auto& methods = hook_.methods;
    if (std::find(methods.begin(), methods.end(), head.method) == methods.end()) {
      std::string allow;
      for (const auto& m : methods) allow += (allow.empty() ? "" : ", ") + m;
      front::Answer a = front::problem(405, "Method not allowed",
                                       head.method + " is not allowed on " + head.path);
      a.outcome = "bad_method";
      net::Response r = front::to_response(a, hook_.path);
      r.headers.emplace_back("Allow", allow);
      return net::Admission{std::move(r), 0};
    }
    // An announced oversize body is refused before it is read.
    if (!head.chunked && head.content_length > uint64_t(hook_.max_body))
      return net::Admission{too_large(std::to_string(head.content_length)), 0};
    return net::Admission{std::nullopt, uint64_t(hook_.max_body)};
  }

  net::Response handle(net::Request& req) const override {
    if (int64_t(req.body.size()) > hook_.max_body)  // a reload lowered the limit meanwhile
      return too_large(std::to_string(req.body.size()));
    const Delivery d = delivery_of(req.head, std::move(req.body));
    services_.in_flight(1);
    front::Answer a = hooks::deliver(hook_, *slots_, d, services_.delivery);
    services_.in_flight(-1);
    return front::to_response(std::move(a), hook_.path);
  }

  const std::string& hook() const override { return hook_.path; }

 private:
  net::Response too_large(const std::string& size) const {
    front::Answer a = front::problem(413, "Body too large",
                                     "the body is " + size + " bytes; hook " + hook_.path +
                                         " accepts at most " + std::to_string(hook_.max_body));
    a.outcome = "too_large";
    return front::to_response(a, hook_.path);
  }

  const Hook hook_;
  const std::shared_ptr<HookSlots> slots_;
  const RouteServices services_;
};

}  // namespace

std::shared_ptr<const front::Route> hook_route(Hook hook, std::shared_ptr<HookSlots> slots,
                                               RouteServices services) {
  return std::make_shared<HookRoute>(std::move(hook), std::move(slots), std::move(services));
}

}  // namespace idem::hooks
