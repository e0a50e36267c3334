#include "front/answer.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/response.hpp"
#include "front/store_failure.hpp"

namespace idem::front {

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

void set_header(std::vector<std::pair<std::string, std::string>>& headers, const std::string& name,
                const std::string& value) {
  auto same = std::find_if(headers.begin(), headers.end(),
                           [&](const auto& h) { return core::same_header_name(h.first, name); });
  if (same != headers.end())
    same->second = value;
  else
    headers.emplace_back(name, value);
}

net::Response to_response(Answer a, const std::string& hook) {
  net::Response r;
  r.status = a.status;
  r.headers = std::move(a.headers);
  const bool typed = std::any_of(r.headers.begin(), r.headers.end(), [](const auto& h) {
    return core::same_header_name(h.first, "Content-Type");
  });
  if (!typed) r.content_type = std::move(a.content_type);
  r.body = std::move(a.body);
  set_header(r.headers, "X-Content-Type-Options", "nosniff");
  if (!hook.empty()) r.log_fields.emplace_back("hook", hook);
  if (!a.key.empty()) r.log_fields.emplace_back("key", a.key);
  if (!a.outcome.empty()) r.log_fields.emplace_back("outcome", a.outcome);
  if (!a.error.empty()) r.log_fields.emplace_back("error", a.error);
  return r;
}

}  // namespace idem::front
