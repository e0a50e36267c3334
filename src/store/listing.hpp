#pragma once
// What the backends' listings (Store::list) share: which query the unfinished records' partial
// index answers, and the condition on liveness and status (store.cpp).
#include <string>

#include "store/store.hpp"

namespace idem::store {

// Whether the listing asks for unfinished records alone (running, abandoned; none expired), which
// a backend then reads from its partial index of them.
bool lists_unfinished_only(const ListQuery& query);

// The listing's condition on liveness and status, " AND ..." or nothing, in the backend's SQL:
// `live` is an unexpired record of a wanted status, `expired` an expired record.
std::string listing_condition(const ListQuery& query, const std::string& live,
                              const std::string& expired);

}  // namespace idem::store
