#include "net/answer.hpp"

#include <nlohmann/json.hpp>
#include <utility>

#include "net/store_failure.hpp"

namespace idem::http {

Answer problem(int status, const std::string& title, const std::string& detail) {
  Answer a;
  a.status = status;
  a.content_type = "application/problem+json";
  a.body =
      nlohmann::json{
          {"type", "about:blank"}, {"title", title}, {"status", status}, {"detail", detail}}
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
      "\n";
  return a;
}

Answer store_failure(const std::exception& e, const std::string& key) {
  StoreFailureAnswer s = store_failure_answer(e);
  Answer a = problem(s.status, s.title, s.detail);
  a.headers = std::move(s.headers);
  a.error = e.what();
  a.key = key;
  a.outcome = "store_error";
  return a;
}

}  // namespace idem::http
