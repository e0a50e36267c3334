// The store factory: a URL's scheme picks the backend (as ccache picks a remote storage). A new
// backend is one folder in src/store/ (as sqlite/ and postgres/ are) and one row of k_backends.
#include "store/store.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string_view>
#include <vector>

#include "core/duration.hpp"
#include "core/errors.hpp"
#include "util/random.hpp"
#include "util/system_files.hpp"

namespace idem::store {

// Weak: defined by postgres/store.cpp in the programs that link it (idem_postgres in
// CMakeLists.txt). A static idem cannot link libpq, whose Debian build needs shared Kerberos and
// LDAP libraries; there it stays null.
[[gnu::weak]] std::unique_ptr<Store> open_postgres_store(const StoreLocation& where,
                                                         std::optional<int64_t> busy_timeout_ms,
                                                         std::optional<int64_t> keep_attempts);

bool has_postgres_backend() { return &open_postgres_store != nullptr; }

namespace {

std::unique_ptr<Store> open_sqlite(const StoreLocation& where, const StoreOptions& options) {
  return open_sqlite_store(where.target, options.busy_timeout_ms, options.keep_attempts,
                           options.long_lived);
}

std::unique_ptr<Store> open_postgres(const StoreLocation& where, const StoreOptions& options) {
  // Permanent: retrying cannot help until idem is built with the backend.
  if (!has_postgres_backend())
    throw StoreError("cannot open store " + where.display() +
                     ": this program has no PostgreSQL backend (build idem with -DIDEM_STATIC=OFF, "
                     "or run idem-pg)");
  return open_postgres_store(where, options.busy_timeout_ms, options.keep_attempts);
}

struct Backend {
  const char* scheme;
  std::unique_ptr<Store> (*open)(const StoreLocation&, const StoreOptions&);
};

constexpr Backend k_backends[] = {
    {"sqlite", open_sqlite},
    {"postgres", open_postgres},
};

const char* getenv_nonempty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace

std::string StoreLocation::display() const {
  if (scheme == "sqlite") return target;
  // scheme://user:password@host/... -> scheme://host/...: a log must never hold a password.
  auto authority = target.find("://");
  auto at = target.find('@', authority == std::string::npos ? 0 : authority + 3);
  auto slash = target.find('/', authority == std::string::npos ? 0 : authority + 3);
  if (authority == std::string::npos || at == std::string::npos || at > slash) return target;
  return target.substr(0, authority + 3) + target.substr(at + 1);
}

StoreLocation parse_store_url(const std::string& url, const std::string& source) {
  auto bad = [&](const std::string& why) {
    return UsageError("bad " + source + " '" + url + "': " + why);
  };
  if (url.empty()) throw bad("empty store URL; use sqlite:PATH or a path");
  const auto colon = url.find(':');
  if (colon == std::string::npos || url.find('/') < colon) return {"sqlite", url};
  const std::string scheme = url.substr(0, colon);
  std::string rest = url.substr(colon + 1);
  if (scheme == "sqlite") {
    // sqlite:///abs/path reads as the file URL it looks like; sqlite://name would name a host.
    if (rest.rfind("//", 0) == 0) {
      if (rest.size() < 3 || rest[2] != '/')
        throw bad("use sqlite:PATH or sqlite:///ABSOLUTE/PATH");
      rest = rest.substr(2);
    }
    if (rest.empty()) throw bad("no path after 'sqlite:'");
    return {"sqlite", rest};
  }
  if (scheme == "postgres" || scheme == "postgresql") return {"postgres", url};
  throw bad("unknown store scheme '" + scheme + "' (use sqlite:PATH, a path, or postgres://...)");
}

StoreLocation store_location(const std::string& store_flag, const std::string& db_flag) {
  if (!store_flag.empty()) return parse_store_url(store_flag, "--store");
  if (const char* env = getenv_nonempty("IDEM_STORE")) return parse_store_url(env, "IDEM_STORE");
  if (!db_flag.empty()) return {"sqlite", db_flag};
  return {"sqlite", default_db_path()};
}

namespace {

// $HOME, else the home folder of the user's /etc/passwd entry, as git and the shells find it:
// cron under `env -i`, a unit without a User= environment. Read from the file itself, never
// through getpwuid (NSS): a static glibc must not load NSS modules (docs/internals.md, "No NSS in
// the static idem"). Nullopt when neither names a folder.
std::optional<std::string> home_dir() {
  if (const char* home = getenv_nonempty("HOME")) return home;
  return util::passwd_home(::geteuid());
}

}  // namespace

std::optional<std::string> xdg_db_path() {
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && *xdg == '/')
    return std::string(xdg) + "/idem/idem.db";
  std::optional<std::string> home = home_dir();
  if (!home) return std::nullopt;
  return *home + "/.local/state/idem/idem.db";
}

bool shared_folders_allowed() {
  const char* allow = std::getenv("IDEM_ALLOW_SHARED_FOLDER");
  return allow != nullptr && std::string_view(allow) == "1";
}

std::string default_db_path() {
  if (const char* db = getenv_nonempty("IDEM_DB")) return db;
  std::optional<std::string> path = xdg_db_path();
  if (!path)
    throw StoreError(
        "cannot find the store: set HOME (or XDG_STATE_HOME, IDEM_DB, or --db): HOME "
        "is unset and uid " +
        std::to_string(::geteuid()) + " has no home folder in /etc/passwd");
  return *path;
}

std::unique_ptr<Store> open_store(const StoreLocation& where, const StoreOptions& options) {
  for (const Backend& backend : k_backends)
    if (where.scheme == backend.scheme) return backend.open(where, options);
  throw StoreError("cannot open store " + where.display() + ": no backend for scheme '" +
                   where.scheme + "'");
}

int64_t busy_timeout_in_force(std::optional<int64_t> given) {
  int64_t ms = 30000;
  if (const char* env = std::getenv("IDEM_BUSY_TIMEOUT"); env != nullptr && *env != '\0')
    ms = core::duration_arg("IDEM_BUSY_TIMEOUT", env);
  return given ? *given : ms;
}

int64_t keep_attempts_arg(std::string_view source, std::string_view text) {
  constexpr int64_t k_max = 1'000'000;
  int64_t n = 0;
  bool ok = !text.empty() && text.size() <= 7;
  for (char c : text) {
    if (c < '0' || c > '9') ok = false;
    if (ok) n = n * 10 + (c - '0');
  }
  if (!ok || n < 1 || n > k_max)
    throw UsageError(std::string(source) + ": '" + std::string(text.substr(0, 32)) +
                     "' is not a count of attempts to keep (a whole number from 1 to " +
                     "1000000)");
  return n;
}

int64_t keep_attempts_in_force(std::optional<int64_t> given) {
  int64_t n = k_default_keep_attempts;
  if (const char* env = getenv_nonempty("IDEM_KEEP_ATTEMPTS"))
    n = keep_attempts_arg("IDEM_KEEP_ATTEMPTS", env);
  return given ? *given : n;
}

std::string new_attempt_token() { return util::random_hex(16); }

}  // namespace idem::store
