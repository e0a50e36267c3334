#include "net/answer.hpp"

#include <nlohmann/json.hpp>

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

}  // namespace idem::http
