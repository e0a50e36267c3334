#pragma once
// What the backends' listings (Store::list) share: which query the unfinished records' partial
// index answers, the condition on liveness and status, and which index a listing walks.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace idem::store {

// Whether the listing asks for unfinished records alone (running, abandoned, queued; none
// expired), which
// a backend then reads from its partial index of them.
bool lists_unfinished_only(const ListQuery& query);

// The listing's condition on liveness and status, " AND ..." or nothing, in the backend's SQL:
// `live` is an unexpired record of a wanted status, `expired` an expired record.
std::string listing_condition(const ListQuery& query, const std::string& live,
                              const std::string& expired);

// The index a listing walks, in the listing's order (started_at DESC, key) unless it says
// otherwise: the newest-first one; one of a condition whose every entry passes it (one status,
// a kind, a result class); the unfinished records' partial index; or (SQLite) a rare prefix's
// range of the key index, which is sorted.
enum class ListDrive { recent, status, kind, result, unfinished, key };

// The conditions of `query` an index answers in the listing's order, in the order they are
// tried: the result class, the status (one, succeeded, failed or superseded, of live records only:
// the unfinished ones have their own index), the kind.
std::vector<ListDrive> list_drives(const ListQuery& query);

// Which of list_drives(query) to walk (recent when there is none): the only one, else the one
// with the fewest entries in the listing's range, as `count` reads them (each bounded by the
// backend); the first of the fewest on a tie.
ListDrive pick_list_drive(const ListQuery& query, const std::function<int64_t(ListDrive)>& count);

}  // namespace idem::store
