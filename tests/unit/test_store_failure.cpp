// The one answer of every HTTP front to a store that failed (front/store_failure.hpp).
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"
#include "front/store_failure.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_store_failure {

using idem::StoreError;
using idem::StoreFailure;
using idem::front::store_failure_answer;

TEST_CASE("store failure answer: lasting 500, transient or unknown 503 with Retry-After",
          "[store_failure]") {
  const auto lasting = store_failure_answer(StoreError("store /x: newer schema"));
  CHECK(lasting.status == 500);
  CHECK(lasting.title == "Store unusable");
  CHECK(lasting.detail == "the store cannot be used; the log says why");
  CHECK(lasting.headers.empty());

  const auto busy = store_failure_answer(StoreError("store /x: busy", StoreFailure::transient));
  CHECK(busy.status == 503);
  CHECK(busy.title == "Store unavailable");
  CHECK(busy.detail == "the store cannot be used now; retry later");
  REQUIRE(busy.headers.size() == 1);
  CHECK(busy.headers[0] == std::pair<std::string, std::string>{"Retry-After", "5"});

  // Not a store's own error (a resource ran out): it may pass, so a retry is invited.
  const auto other = store_failure_answer(std::runtime_error("cannot create a thread"));
  CHECK(other.status == 503);
  // None of them names the store: the reason goes to the log only.
  for (const auto& a : {lasting, busy, other}) CHECK(a.detail.find("/x") == std::string::npos);
}

}  // namespace unit_store_failure
