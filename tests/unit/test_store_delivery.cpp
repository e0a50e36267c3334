// How a delivery answers a store it cannot use: 503 + Retry-After when the failure is transient
// (a retry may succeed), 500 when it is permanent; and deliveries lease the daemon's connections
// instead of opening one each; what a delivery stores as its response and how a duplicate is
// answered from it.
#include <catch2/catch.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/output.hpp"
#include "core/response.hpp"
#include "hooks/delivery.hpp"
#include "proc/liveness.hpp"
#include "store/provider.hpp"
#include "temp_dir.hpp"
#include "util/clock.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_store_delivery {

using idem::StoreError;
using idem::StoreFailure;
using idem::hooks::Delivery;
using idem::hooks::DeliveryServices;
using idem::hooks::Hook;
using idem::hooks::HookSlots;
using idem::store::StoreProvider;

namespace {

Hook keyed_hook() {
  Hook hook;
  hook.path = "/h";
  hook.command = {"true"};
  hook.key = idem::hooks::KeySource{idem::hooks::KeySource::header, "X-Key"};
  return hook;
}

Delivery delivery(const std::string& key) {
  Delivery d;
  d.method = "POST";
  d.path = "/h";
  d.headers = {{"X-Key", key}};
  d.body = "body";
  return d;
}

DeliveryServices services(std::shared_ptr<StoreProvider> stores) {
  DeliveryServices s;
  s.stores = std::move(stores);
  s.owner = idem::proc::describe_owner();
  s.spawn = [](std::function<void()> fn) { fn(); };
  return s;
}

std::string header(const idem::front::Answer& a, const std::string& name) {
  for (const auto& [n, v] : a.headers)
    if (n == name) return v;
  return "";
}

}  // namespace

TEST_CASE("store delivery: transient store errors are 503 with Retry-After, permanent ones 500",
          "[store][delivery]") {
  const bool transient = GENERATE(true, false);
  auto stores = std::make_shared<StoreProvider>(
      [transient]() -> std::unique_ptr<idem::store::Store> {
        throw StoreError("store /x: unusable",
                         transient ? StoreFailure::transient : StoreFailure::permanent);
      },
      2);
  Hook hook = keyed_hook();
  HookSlots slots(hook.max_concurrency, hook.max_queue);
  auto a = idem::hooks::deliver(hook, slots, delivery("k"), services(stores));
  CHECK(a.outcome == "store_error");
  CHECK(a.error.find("/x") != std::string::npos);
  CHECK(a.body.find("/x") == std::string::npos);  // the client never sees the store's path
  if (transient) {
    CHECK(a.status == 503);
    CHECK(header(a, "Retry-After") == "5");
  } else {
    CHECK(a.status == 500);
    CHECK(header(a, "Retry-After").empty());
  }
}

TEST_CASE("store delivery: deliveries reuse the provider's connection", "[store][delivery]") {
  idem::test::TempDir dir;
  const std::string path = dir / "idem.db";
  auto stores =
      std::make_shared<StoreProvider>([path] { return idem::store::open_sqlite_store(path); }, 2);
  Hook hook = keyed_hook();
  HookSlots slots(hook.max_concurrency, hook.max_queue);
  for (int i = 0; i < 20; ++i) {
    auto first =
        idem::hooks::deliver(hook, slots, delivery("k" + std::to_string(i)), services(stores));
    CHECK(first.status == 200);
    auto again =
        idem::hooks::deliver(hook, slots, delivery("k" + std::to_string(i)), services(stores));
    CHECK(again.outcome == "replayed");
  }
  CHECK(stores->opened() == 1);
}

TEST_CASE("store delivery: the answer is stored as a response and a duplicate gets it back",
          "[store][delivery][response]") {
  using idem::core::Response;
  using Headers = std::vector<std::pair<std::string, std::string>>;
  idem::test::TempDir dir;
  const std::string path = dir / "idem.db";
  auto stores =
      std::make_shared<StoreProvider>([path] { return idem::store::open_sqlite_store(path); }, 1);
  Hook hook = keyed_hook();
  hook.command = {"sh", "-c", "printf '{\"id\": 7}'"};
  HookSlots slots(hook.max_concurrency, hook.max_queue);

  auto first = idem::hooks::deliver(hook, slots, delivery("k"), services(stores));
  REQUIRE(first.status == 200);
  CHECK(first.content_type == "application/json");
  {
    auto store = stores->lease();
    auto r = store->get("/h#k");
    REQUIRE(r);
    // The status and Content-Type; the body is the stored stdout, not kept twice.
    CHECK(r->response == Response{200, {{"Content-Type", "application/json"}}});
  }
  auto again = idem::hooks::deliver(hook, slots, delivery("k"), services(stores));
  CHECK(again.outcome == "replayed");
  CHECK(again.status == 200);
  CHECK(again.content_type == "application/json");
  CHECK(again.body == "{\"id\": 7}");
  CHECK(again.headers == Headers{{"Idempotent-Replayed", "true"}});

  // Whatever response the record holds (a proxy's, with Location and ETag) is replayed as it is:
  // its status, its headers in order, then the replay's own.
  {
    auto store = stores->lease();
    idem::core::Fingerprinter f;
    f.add_field("kind", "http");
    f.add_field("body", "body");
    idem::store::ClaimRequest req;
    req.key = "/h#made";
    req.fingerprint = f.hex();
    req.kind = "http";
    req.owner = idem::proc::describe_owner();
    req.ttl_ms = 3600 * 1000;
    req.now_ms = idem::util::SystemClock().now_ms();
    auto c = store->claim(req, idem::proc::owner_gone);
    REQUIRE(c.verdict == idem::core::Verdict::claim);
    idem::core::CapturedOutput body;
    body.append(idem::core::Stream::out, "made");
    idem::core::Outcome o;
    o.status = idem::core::Status::succeeded;
    o.exit_code = 0;
    o.finished_ms = req.now_ms;
    o.output = body.encode();
    o.output_bytes = body.stored_bytes();
    o.response =
        Response{201, {{"Location", "/orders/7"}, {"content-type", "text/csv"}, {"ETag", "\"7\""}}};
    REQUIRE(store->finish(req.key, c.attempt, o));
  }
  auto made = idem::hooks::deliver(hook, slots, delivery("made"), services(stores));
  CHECK(made.outcome == "replayed");
  CHECK(made.status == 201);
  CHECK(made.content_type == "text/csv");
  CHECK(made.body == "made");
  CHECK(made.headers ==
        Headers{{"Location", "/orders/7"}, {"ETag", "\"7\""}, {"Idempotent-Replayed", "true"}});
}

TEST_CASE("store delivery: a failed handler's answer is stored as its status and problem type",
          "[store][delivery][response]") {
  idem::test::TempDir dir;
  const std::string path = dir / "idem.db";
  auto stores =
      std::make_shared<StoreProvider>([path] { return idem::store::open_sqlite_store(path); }, 1);
  Hook hook = keyed_hook();
  hook.command = {"false"};
  HookSlots slots(hook.max_concurrency, hook.max_queue);
  auto a = idem::hooks::deliver(hook, slots, delivery("k"), services(stores));
  CHECK(a.status == 500);
  auto store = stores->lease();
  auto r = store->get("/h#k");
  REQUIRE(r);
  CHECK(r->status == idem::core::Status::failed);
  CHECK(r->response == idem::core::Response{500, {{"Content-Type", "application/problem+json"}}});
}

TEST_CASE("store delivery: a background run that fails is handed to the runner, its slot freed",
          "[store][delivery]") {
  idem::test::TempDir dir;
  const std::string path = dir / "idem.db";
  int opened = 0;
  // The delivery's own connection opens; the background run's (a second one) does not.
  auto stores = std::make_shared<StoreProvider>(
      [path, &opened]() -> std::unique_ptr<idem::store::Store> {
        if (++opened > 1) throw StoreError("store /x: unreachable", StoreFailure::transient);
        return idem::store::open_sqlite_store(path);
      },
      2);
  Hook hook = keyed_hook();
  hook.async = true;
  hook.max_concurrency = 1;
  hook.max_queue = 0;
  HookSlots slots(hook.max_concurrency, hook.max_queue);
  DeliveryServices s = services(stores);
  std::vector<std::string> logged;  // what the daemon's background runner would log
  s.spawn = [&logged](std::function<void()> fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      logged.emplace_back(e.what());
    }
  };
  auto a = idem::hooks::deliver(hook, slots, delivery("k"), s);
  CHECK(a.status == 202);
  REQUIRE(logged.size() == 1);
  CHECK(logged[0] == "key 'k': store /x: unreachable; it is left to be judged abandoned");
  // The one running slot was given back: a place can be reserved and run again.
  REQUIRE(slots.reserve());
  { HookSlots::Running running(slots); }
}

TEST_CASE("store delivery: a running slot is given back however its run ends", "[delivery]") {
  HookSlots slots(1, 0);
  REQUIRE(slots.reserve());
  CHECK_THROWS_AS(([&] {
                    HookSlots::Running running(slots);
                    throw std::runtime_error("handler failed");
                  }()),
                  std::runtime_error);
  CHECK(slots.reserve());  // the place came back with the slot
  CHECK_FALSE(slots.reserve());
}

}  // namespace unit_store_delivery
