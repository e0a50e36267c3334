#include "front/route.hpp"

#include "front/answer.hpp"

namespace idem::front {

net::Response Route::refused(const Refusal& refusal) const {
  Answer a = problem(refusal.status, refusal.title, refusal.detail);
  a.error = refusal.error;
  if (!hook().empty()) a.outcome = refusal.outcome;
  return front::to_response(a, hook());
}

}  // namespace idem::front
