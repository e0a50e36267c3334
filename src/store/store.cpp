#include "store/store.hpp"

#include <cstdlib>

#include "core/errors.hpp"

namespace idem::store {

std::string default_db_path() {
  if (const char* db = std::getenv("IDEM_DB"); db != nullptr && *db != '\0') return db;
  std::string state;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && *xdg == '/') {
    state = xdg;
  } else {
    const char* home = std::getenv("HOME");
    if (home == nullptr || *home == '\0')
      throw StoreError("cannot find the store: neither --db, IDEM_DB, XDG_STATE_HOME nor HOME is set");
    state = std::string(home) + "/.local/state";
  }
  return state + "/idem/idem.db";
}

}  // namespace idem::store
