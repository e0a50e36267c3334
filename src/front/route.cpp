#include "front/route.hpp"

#include "front/answer.hpp"

namespace idem::http {

Response Route::refused(const Refusal& refusal) const {
  Answer a = problem(refusal.status, refusal.title, refusal.detail);
  a.error = refusal.error;
  if (!hook().empty()) a.outcome = refusal.outcome;
  return to_response(a, hook());
}

}  // namespace idem::http
