#pragma once
// The SQL the SQLite store runs for gc and ls, apart so that tests can check its query plans
// (through the indexes, no full scan, no sort for ls's order) on the very text the store runs.
// Parameters: ?1 now (ms), ?2 the gc cutoff or the ls prefix, ?3 the prefix's end.
#include <string>

#include "store/store.hpp"

namespace idem::store::sqlite_sql {

// The least string above every string that starts with `prefix`, in byte order ("" if there is
// none), so "key >= prefix AND key < end" is the prefix as an index range.
std::string prefix_end(std::string prefix);

// SELECT `what` (rowid, count(*)) of the expired records / of the finished ones older than ?2.
std::string gc_expired(const char* what);
std::string gc_ended(const char* what);

// Whether the listing asks for unfinished records alone (running, abandoned; none expired), which
// list() then reads from their partial index, records_unfinished, whatever `by_key` says.
bool lists_unfinished_only(const ListQuery& query);

// The listing, newest first; `by_key`: through the key index (a rare prefix) rather than in order.
std::string list(const ListQuery& query, bool by_key);

}  // namespace idem::store::sqlite_sql
