// How a delivery answers a store it cannot use: 503 + Retry-After when the failure is transient
// (a retry may succeed), 500 when it is permanent; and deliveries lease the daemon's connections
// instead of opening one each.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "core/errors.hpp"
#include "http/delivery.hpp"
#include "proc/liveness.hpp"
#include "store/provider.hpp"
#include "temp_dir.hpp"

using idem::StoreError;
using idem::StoreFailure;
using idem::http::Delivery;
using idem::http::DeliveryServices;
using idem::http::Hook;
using idem::http::HookSlots;
using idem::store::StoreProvider;

namespace {

Hook keyed_hook() {
  Hook hook;
  hook.path = "/h";
  hook.command = {"true"};
  hook.key = idem::http::KeySource{idem::http::KeySource::header, "X-Key"};
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

std::string header(const idem::http::Answer& a, const std::string& name) {
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
  auto a = idem::http::deliver(hook, slots, delivery("k"), services(stores));
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
        idem::http::deliver(hook, slots, delivery("k" + std::to_string(i)), services(stores));
    CHECK(first.status == 200);
    auto again =
        idem::http::deliver(hook, slots, delivery("k" + std::to_string(i)), services(stores));
    CHECK(again.outcome == "replayed");
  }
  CHECK(stores->opened() == 1);
}
