#include "store/listing.hpp"

#include <algorithm>

namespace idem::store {

bool lists_unfinished_only(const ListQuery& q) {
  if (!q.live || q.include_expired || q.statuses.empty()) return false;
  return std::all_of(q.statuses.begin(), q.statuses.end(), [](core::Status s) {
    return s == core::Status::running || s == core::Status::abandoned || s == core::Status::queued;
  });
}

std::string listing_condition(const ListQuery& q, const std::string& live,
                              const std::string& expired) {
  if (q.live && q.include_expired && !q.statuses.empty())
    return " AND ((" + live + ") OR " + expired + ")";
  if (q.live && !q.include_expired) return " AND " + live;
  if (!q.live) return " AND " + expired;
  return "";
}

std::vector<ListDrive> list_drives(const ListQuery& q) {
  std::vector<ListDrive> drives;
  if (!q.result.empty()) drives.push_back(ListDrive::result);
  if (q.statuses.size() == 1 && q.live && !q.include_expired &&
      (q.statuses[0] == core::Status::succeeded || q.statuses[0] == core::Status::failed ||
       q.statuses[0] == core::Status::superseded))
    drives.push_back(ListDrive::status);
  if (!q.kind.empty()) drives.push_back(ListDrive::kind);
  return drives;
}

ListDrive pick_list_drive(const ListQuery& q, const std::function<int64_t(ListDrive)>& count) {
  const std::vector<ListDrive> drives = list_drives(q);
  if (drives.empty()) return ListDrive::recent;
  ListDrive best = drives.front();
  if (drives.size() == 1) return best;
  int64_t fewest = count(best);
  for (size_t i = 1; i < drives.size() && fewest > 0; ++i)
    if (const int64_t n = count(drives[i]); n < fewest) fewest = n, best = drives[i];
  return best;
}

}  // namespace idem::store
