// The daemon's route table (front/route.hpp): routes are tried in the order they were added and
// the first that takes a path answers; a path none takes finds nothing.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "front/route.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_routes {

using namespace idem::front;
using namespace idem::net;

namespace {

// Takes the paths that start with `prefix`; answers with its name in the body.
class PrefixRoute final : public Route {
 public:
  PrefixRoute(std::string prefix, std::string name)
      : prefix_(std::move(prefix)), name_(std::move(name)) {}
  bool matches(std::string_view path) const override { return path.starts_with(prefix_); }
  Admission admit(const RequestHead&) const override { return Admission{std::nullopt, 16}; }
  Response handle(Request&) const override {
    Response r;
    r.body = name_;
    return r;
  }
  const std::string& hook() const override { return name_; }

 private:
  std::string prefix_;
  std::string name_;
};

std::string answer_for(const RouteTable& table, const std::string& path) {
  const Route* route = table.find(path);
  if (!route) return "(none)";
  Request req;
  req.head.path = path;
  return route->handle(req).body;
}

}  // namespace

TEST_CASE("routes: the first route that takes a path answers it", "[routes]") {
  RouteTable table;
  table.add(std::make_shared<PrefixRoute>("/healthz", "health"));
  table.add(std::make_shared<PrefixRoute>("/v1/", "ledger"));
  table.add(std::make_shared<PrefixRoute>("/hooks/a", "hook a"));
  table.add(std::make_shared<PrefixRoute>("/", "fallback"));
  CHECK(table.size() == 4);
  CHECK(answer_for(table, "/healthz") == "health");
  CHECK(answer_for(table, "/v1/attempts") == "ledger");
  CHECK(answer_for(table, "/hooks/a") == "hook a");
  CHECK(answer_for(table, "/hooks/b") == "fallback");
  CHECK(answer_for(table, "/") == "fallback");
}

TEST_CASE("routes: a path no route takes finds nothing", "[routes]") {
  RouteTable empty;
  CHECK(empty.find("/healthz") == nullptr);
  RouteTable table;
  table.add(std::make_shared<PrefixRoute>("/hooks/", "hooks"));
  CHECK(answer_for(table, "/hooks/x") == "hooks");
  CHECK(table.find("/metrics") == nullptr);
  CHECK(table.find("") == nullptr);
}

}  // namespace unit_routes
